import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  checkpointHighWatermarks,
  HIGH_WATERMARK_CHECKPOINT_CONCURRENCY,
  HIGH_WATERMARK_CHECKPOINT_FILE,
  PartitionLog,
  type LogConfig,
} from '../../../../src/log/storage';
import { ManualTime } from '../../../../src/time';
import { text } from './log-fixture';
import { makeTempDir, removeTempDir } from './temp-dir';

/** The partition's `high-watermark-checkpoint`: written off the event loop, read and capped at open. */
describe('PartitionLog high-watermark checkpoint', () => {
  let root: string;
  let dir: string;
  const time = new ManualTime();
  const logs: PartitionLog[] = [];
  let unreadable: string[];

  beforeEach(() => {
    root = makeTempDir();
    dir = path.join(root, 'topic-0');
    unreadable = [];
  });

  afterEach(async () => {
    for (const log of logs.splice(0)) await log.close();
    removeTempDir(root);
  });

  function open(config: Partial<LogConfig> = {}): PartitionLog {
    const log = PartitionLog.open(dir, {
      time,
      config: { flushMessages: 1_000_000, ...config },
      recovery: { listener: { onHighWatermarkCheckpointUnreadable: (_dir, file) => unreadable.push(file) } },
    });
    logs.push(log);
    return log;
  }

  async function reopen(log: PartitionLog): Promise<PartitionLog> {
    await log.close();
    return open();
  }

  const file = (): string => path.join(dir, HIGH_WATERMARK_CHECKPOINT_FILE);
  const onDisk = (): unknown =>
    (JSON.parse(fs.readFileSync(file(), 'utf8')) as { highWatermark: unknown }).highWatermark;

  function appendRecords(log: PartitionLog, count: number): void {
    for (let i = 0; i < count; i++) log.append([{ value: text(`v${i}`) }]);
  }

  test('is undefined without a file, and after a checkpoint and a restart is the value written', async () => {
    let log = open();
    expect(log.checkpointedHighWatermark).toBeUndefined();
    appendRecords(log, 10);
    await log.checkpointHighWatermark(7);
    expect(onDisk()).toBe(7);
    expect(log.checkpointedHighWatermark).toBe(7);
    log = await reopen(log);
    expect(log.checkpointedHighWatermark).toBe(7);
  });

  test('is capped to the log: at its end after a truncation, at its start when the log restarts above it', async () => {
    let log = open();
    appendRecords(log, 5);
    await log.checkpointHighWatermark(5);
    log.truncateTo(3);
    expect(log.checkpointedHighWatermark).toBe(3);
    log = await reopen(log);
    expect([log.logEndOffset, log.checkpointedHighWatermark]).toEqual([3, 3]);
    log.truncateFullyAndStartAt(20);
    expect(log.checkpointedHighWatermark).toBe(20);
    // The truncation lowered the file; a restart above it leaves it (the open caps it).
    expect(onDisk()).toBe(3);
  });

  test('a truncation below the checkpointed HW lowers the file before it returns, so a refill and a crash cannot raise it', async () => {
    const log = open();
    appendRecords(log, 100);
    await log.checkpointHighWatermark(100);
    log.truncateTo(40);
    expect(onDisk()).toBe(40);
    // The refill from a new leader whose HW is 50; the crash comes before the next periodic checkpoint.
    appendRecords(log, 80);
    const crashed = path.join(root, 'crashed');
    fs.cpSync(dir, crashed, { recursive: true });
    const restarted = PartitionLog.open(crashed, { time });
    logs.push(restarted);
    expect([restarted.logEndOffset, restarted.checkpointedHighWatermark]).toEqual([120, 40]);
    log.truncateFullyAndStartAt(10);
    expect(onDisk()).toBe(10);
  });

  test('a write under way when a truncation lowers the file does not raise it again', async () => {
    const log = open();
    appendRecords(log, 100);
    const writing = log.checkpointHighWatermark(90);
    log.truncateTo(30);
    await writing;
    expect(onDisk()).toBe(30);
    expect(log.checkpointedHighWatermark).toBe(30);
  });

  test('the value already written writes nothing; a new one replaces the file', async () => {
    const log = open();
    appendRecords(log, 4);
    await log.checkpointHighWatermark(2);
    const inode = fs.statSync(file()).ino;
    await log.checkpointHighWatermark(2);
    expect(fs.statSync(file()).ino).toBe(inode);
    await log.checkpointHighWatermark(4);
    expect(fs.statSync(file()).ino).not.toBe(inode);
    expect(onDisk()).toBe(4);
  });

  test('calls while a write is under way end with the newest value on disk, and each resolves', async () => {
    const log = open();
    appendRecords(log, 10);
    const calls = [1, 2, 3, 9].map((hw) => log.checkpointHighWatermark(hw));
    await Promise.all(calls);
    expect(onDisk()).toBe(9);
    expect(log.checkpointedHighWatermark).toBe(9);
  });

  test('close waits for a write under way; checkpoints after close are refused', async () => {
    const log = open();
    appendRecords(log, 3);
    const pending = log.checkpointHighWatermark(3);
    await log.close();
    await pending;
    expect(onDisk()).toBe(3);
    await expect(log.checkpointHighWatermark(3)).rejects.toThrow('closed');
  });

  test('a damaged file counts as missing and is reported; a leftover temporary file is ignored', async () => {
    let log = open();
    appendRecords(log, 3);
    await log.checkpointHighWatermark(2);
    await log.close();
    fs.writeFileSync(`${file()}.async.tmp`, '{"version":1,"highWatermark":3}');
    log = open();
    expect(log.checkpointedHighWatermark).toBe(2);
    expect(fs.existsSync(`${file()}.async.tmp`)).toBe(false);
    for (const garbage of [
      '{"version":1,"highWatermark":-4}',
      '{"version":2,"highWatermark":1}',
      'garbage',
    ]) {
      await log.close();
      fs.writeFileSync(file(), garbage);
      log = open();
      expect(log.checkpointedHighWatermark).toBeUndefined();
    }
    expect(unreadable).toEqual([file(), file(), file()]);
    await log.checkpointHighWatermark(1);
    log = await reopen(log);
    expect(log.checkpointedHighWatermark).toBe(1);
  });

  test('a negative or fractional high watermark is refused', async () => {
    const log = open();
    await expect(log.checkpointHighWatermark(-1)).rejects.toThrow('cannot checkpoint');
    await expect(log.checkpointHighWatermark(1.5)).rejects.toThrow('cannot checkpoint');
    expect(fs.existsSync(file())).toBe(false);
  });
});

describe('checkpointHighWatermarks (the periodic pass)', () => {
  interface Fake {
    readonly key: string;
    readonly highWatermark: number;
    readonly isLeader: boolean;
    readonly localNodeId: number;
    readonly replicas: readonly number[];
    readonly log: { checkpointHighWatermark(highWatermark: number): Promise<void> };
  }

  /** Partitions whose checkpoint writes finish only when the test says so. */
  function fakes(prefix: string, count: number, replicas: readonly number[], isLeader = true): Fake[] {
    return Array.from({ length: count }, (_, i) => ({
      key: `${prefix}-${i}`,
      highWatermark: i,
      isLeader,
      localNodeId: 0,
      replicas,
      log: {
        checkpointHighWatermark: (): Promise<void> =>
          new Promise<void>((resolve) => {
            running.add(resolve);
            maxRunning = Math.max(maxRunning, running.size);
            written.push(`${prefix}-${i}`);
          }),
      },
    }));
  }

  let running: Set<() => void>;
  let maxRunning: number;
  let written: string[];

  beforeEach(() => {
    running = new Set();
    maxRunning = 0;
    written = [];
  });

  async function drain(pass: Promise<void>): Promise<void> {
    let isDone = false;
    void pass.then(() => (isDone = true));
    while (!isDone) {
      for (const resolve of [...running]) {
        running.delete(resolve);
        resolve();
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  test('skips leaders without followers: they start at their log end, never at the file', async () => {
    const partitions = [
      ...fakes('alone', 2, [0]),
      ...fakes('leading', 1, [0, 1]),
      ...fakes('following', 1, [1, 0], false),
    ];
    await drain(checkpointHighWatermarks(partitions, () => undefined));
    expect(written.sort()).toEqual(['following-0', 'leading-0']);
  });

  test('runs a bounded number of writes at once, and every partition is written', async () => {
    const partitions = fakes('t', 9, [0, 1, 2]);
    const pass = checkpointHighWatermarks(partitions, () => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(running.size).toBe(HIGH_WATERMARK_CHECKPOINT_CONCURRENCY);
    await drain(pass);
    expect(maxRunning).toBe(HIGH_WATERMARK_CHECKPOINT_CONCURRENCY);
    expect(written.sort()).toEqual(partitions.map((partition) => partition.key).sort());
  });
});
