import * as fs from 'node:fs';
import * as path from 'node:path';
import { ManualTime } from '../../../../src/time';
import { PartitionLog, type LogConfig, type LogRecord } from '../../../../src/log/storage';
import { makeTempDir, removeTempDir } from './temp-dir';

/** Opens logs in one temp dir per test and closes them all afterwards. */
export class LogFixture {
  readonly dir = makeTempDir();
  readonly time = new ManualTime();
  private readonly logs: PartitionLog[] = [];

  get partitionDir(): string {
    return path.join(this.dir, 'topic-0');
  }

  open(config: Partial<LogConfig> = {}, dir = this.partitionDir): PartitionLog {
    const log = PartitionLog.open(dir, { time: this.time, config });
    this.logs.push(log);
    return log;
  }

  private crashes = 0;

  /**
   * What a process crash leaves of the partition: its files as they are now (page cache included, writes
   * under way as far as they got), copied to a new directory for `open`.
   */
  crashCopy(): string {
    const copy = path.join(this.dir, `crash-${++this.crashes}`, 'topic-0');
    fs.cpSync(this.partitionDir, copy, { recursive: true });
    return copy;
  }

  async cleanup(): Promise<void> {
    for (const log of this.logs) await log.close();
    removeTempDir(this.dir);
  }
}

export function text(value: string): Buffer {
  return Buffer.from(value, 'utf8');
}

/** Every record from the log start to the LEO, read in one go. */
export function readAll(log: PartitionLog): LogRecord[] {
  if (log.logStartOffset === log.logEndOffset) return [];
  return log.read(log.logStartOffset, Number.MAX_SAFE_INTEGER).records;
}

/** offset → value, for compact assertions. */
export function values(records: readonly LogRecord[]): [number, string | null][] {
  return records.map((record) => [
    record.offset,
    record.value === null ? null : record.value.toString('utf8'),
  ]);
}

export function segmentFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((name) => /^\d{20}\./.test(name))
    .sort();
}
