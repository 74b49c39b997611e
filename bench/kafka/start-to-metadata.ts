import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { METADATA } from '../../src/kafka/protocol/kafka-apis';
import { decodeResponseBody, encodeRequest } from '../../src/kafka/protocol/kafka-request';
import { RoundSet } from '../support/round-set';
import { KafkaFrameConnection } from './kafka-frames';
import { correlationId } from './kafka-group-driver';

/**
 * From `npm start` to the first Kafka client's successful Metadata (issue 31 §3). Each round spawns
 * `npm start -- --listen 127.0.0.1:0 --admin-listen off --kafka-listen 127.0.0.1:PORT --data-dir DIR` (a
 * free port found beforehand, an empty data directory), exactly as a user starts cohort from the
 * repository, and a client that tries to connect every POLL_MS; once connected it sends Metadata v1 for
 * every topic, and the clock stops at an answer that lists the broker. The same-run reference is
 * `npm start -- --help` from spawn to exit: npm, Node, the TypeScript hook and the config module, the part
 * of the start no server can skip. The ratio is the first over the second. The server is then stopped with
 * SIGTERM (its process group: npm's shell and Node).
 */

const POLL_MS = 5;
const REPO_ROOT = join(__dirname, '..', '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function npmStart(args: readonly string[]): ChildProcess {
  // Its own process group, so that the whole tree (npm, its shell, Node) is stopped together.
  return spawn('npm', ['start', '--silent', '--', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once no process of group `pgid` is left (10 s at most). */
async function groupGone(pgid: number): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await sleep(20);
  }
}

/** Connects, retrying every POLL_MS until `deadlineMs`; then one Metadata v1 for every topic. */
async function firstMetadata(port: number, deadlineMs: number): Promise<number> {
  for (;;) {
    if (performance.now() > deadlineMs) throw new Error('no Kafka listener answered in time');
    let connection: KafkaFrameConnection;
    try {
      connection = await KafkaFrameConnection.open('127.0.0.1', port, () => undefined);
    } catch {
      await sleep(POLL_MS);
      continue;
    }
    try {
      const frame = await connection.request(
        encodeRequest(METADATA, 1, correlationId(), 'bench-kafka', { topics: null }),
      );
      const body = decodeResponseBody(METADATA, 1, frame) as { brokers: { port: number }[] };
      if (body.brokers.length === 0 || body.brokers[0]!.port !== port) {
        throw new Error(`Metadata listed ${JSON.stringify(body.brokers)}`);
      }
      return performance.now();
    } finally {
      await connection.close();
    }
  }
}

export async function startToMetadata(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (['help', 'start'] as const) : (['start', 'help'] as const);
    for (const side of order) {
      if (side === 'help') {
        const t0 = performance.now();
        const code = await exited(npmStart(['--help']));
        if (code !== 0) throw new Error(`npm start -- --help exited with ${code}`);
        set.record('helpMs', performance.now() - t0);
        continue;
      }
      const port = await freePort();
      const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-kafka-start-'));
      const t0 = performance.now();
      const child = npmStart([
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        'off',
        '--kafka-listen',
        `127.0.0.1:${port}`,
        '--data-dir',
        dataDir,
        '--log-level',
        'warn',
      ]);
      const stopped = exited(child);
      try {
        const at = await Promise.race([
          firstMetadata(port, t0 + 30_000),
          stopped.then((code) => {
            throw new Error(`npm start exited with ${code} before a Metadata was answered`);
          }),
        ]);
        set.record('startToMetadataMs', at - t0);
      } finally {
        if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
        await stopped;
        // npm may exit before the server it started has: wait until its whole process group is gone.
        if (child.pid !== undefined) await groupGone(child.pid);
        rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
      }
    }
    const v = (name: string): string => set.values(name)[r]!.toFixed(0);
    log(
      `  round ${r + 1}: npm start → first Metadata ${v('startToMetadataMs')} ms; npm start -- --help ${v('helpMs')} ms`,
    );
  }
  return set;
}
