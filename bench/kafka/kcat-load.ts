import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * librdkafka's figure: Debian's `kcat` (librdkafka inside, C) producing a file of records and consuming a
 * topic to its end, timed from spawn to exit. kcat reads the file with one record a line and leaves the
 * batching to librdkafka's defaults (linger.ms 5, batch.size 1,000,000 bytes, up to 1,000,000 requests in
 * flight on its one connection to the leader), so what is timed is a real client at its own pace.
 */

export function hasKcat(): boolean {
  return spawnSync('kcat', ['-V'], { stdio: 'ignore' }).status === 0;
}

/** Writes `count` lines of `bytes` 'x' each (the newline is kcat's delimiter, not part of a record). */
export function writeRecordFile(path: string, count: number, bytes: number): Promise<void> {
  const line = Buffer.from(`${'x'.repeat(bytes)}\n`);
  const chunk = Buffer.concat(Array.from({ length: 256 }, () => line));
  return new Promise((resolve, reject) => {
    const out = createWriteStream(path);
    out.on('error', reject);
    let left = count;
    const write = (): void => {
      while (left > 0) {
        const lines = Math.min(256, left);
        left -= lines;
        const isOk = out.write(lines === 256 ? chunk : chunk.subarray(0, lines * line.length));
        if (!isOk) {
          out.once('drain', write);
          return;
        }
      }
      out.end(() => resolve());
    };
    write();
  });
}

/** Runs kcat with `args`; resolves with the ms from spawn to a successful exit. */
export function runKcat(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let stderr = '';
    const child = spawn('kcat', [...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve(ms);
      else reject(new Error(`kcat ${args.join(' ')} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

/** `kcat -P` of every line of `file` to partition 0 of `topic`, acks as given. */
export function kcatProduce(bootstrap: string, topic: string, file: string, acks: number): Promise<number> {
  return runKcat(['-P', '-q', '-b', bootstrap, '-t', topic, '-p', '0', '-X', `acks=${acks}`, '-l', file]);
}

/** `kcat -C` of partition 0 of `topic` from the beginning to its end, output discarded. */
export function kcatConsume(bootstrap: string, topic: string): Promise<number> {
  return runKcat([
    '-C',
    '-q',
    '-b',
    bootstrap,
    '-t',
    topic,
    '-p',
    '0',
    '-o',
    'beginning',
    '-e',
    '-f',
    '%o\n',
  ]);
}
