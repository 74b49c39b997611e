import * as fs from 'node:fs';
import * as path from 'node:path';
import { HIGH_WATERMARK_CHECKPOINT_FILE, PartitionLog, type LogConfig } from '../../../../src/log/storage';
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
    expect(onDisk()).toBe(5);
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
