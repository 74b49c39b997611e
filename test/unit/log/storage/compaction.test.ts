import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import type { LogRecord, PartitionLog } from '../../../../src/log/storage';
import { LogFixture, readAll, segmentFiles, text, values } from './log-fixture';

const COMPACT = { cleanupPolicy: 'compact', segmentBytes: 200 } as const;

function put(log: PartitionLog, key: string, value: string | null): number {
  return log.append([{ key: text(key), value: value === null ? null : text(value) }]).firstOffset;
}

/** What compaction must leave: below the active segment the last record per key unless a tombstone. */
function expectedAfterCompaction(
  records: readonly LogRecord[],
  activeBaseOffset: number,
): [number, string | null][] {
  const last = new Map<string, number>();
  for (const record of records)
    if (record.offset < activeBaseOffset) last.set(record.key!.toString(), record.offset);
  return values(
    records.filter(
      (record) =>
        record.offset >= activeBaseOffset ||
        (last.get(record.key!.toString()) === record.offset &&
          record.value !== null &&
          record.value.length > 0),
    ),
  );
}

describe('PartitionLog compaction', () => {
  let fixture: LogFixture;

  beforeEach(() => {
    fixture = new LogFixture();
  });

  afterEach(async () => {
    await fixture.cleanup();
  });

  test('keeps the last record per key with its offset, removes tombstones, leaves the active segment alone', async () => {
    const log = fixture.open(COMPACT);
    put(log, 'a', 'a1');
    put(log, 'b', 'b1');
    put(log, 'c', 'c1');
    put(log, 'a', 'a2');
    put(log, 'b', null);
    put(log, 'c', '');
    put(log, 'd', 'd1');
    while (log.numberOfSegments < 3) put(log, 'filler', 'x');
    put(log, 'a', 'a-active');
    const before = readAll(log);
    const active = log.segmentBaseOffsets().at(-1)!;
    const end = log.logEndOffset;
    const result = await log.compact();
    expect(result.isAborted).toBe(false);
    expect(result.recordsRemoved).toBeGreaterThan(0);
    expect(result.bytesAfter).toBeLessThan(result.bytesBefore);
    const after = values(readAll(log));
    expect(after).toEqual(expectedAfterCompaction(before, active));
    expect(after.filter(([, value]) => value?.startsWith('a'))).toEqual([
      [3, 'a2'],
      [end - 1, 'a-active'],
    ]);
    expect(after.some(([offset]) => offset === 4 || offset === 5)).toBe(false);
    expect(log.logEndOffset).toBe(end);
    expect(log.segmentBaseOffsets().at(-1)).toBe(active);
  });

  test('the compacted log reads the same after a reopen and appends continue', async () => {
    const log = fixture.open(COMPACT);
    for (let i = 0; i < 40; i++) put(log, `k${i % 3}`, `v${i}`);
    await log.compact();
    const compacted = values(readAll(log));
    const end = log.logEndOffset;
    await log.close();
    const reopened = fixture.open(COMPACT);
    expect(values(readAll(reopened))).toEqual(compacted);
    expect(put(reopened, 'k0', 'new')).toBe(end);
  });

  test('shrunken segments merge while they fit one segment, and the active segment keeps its base offset', async () => {
    const log = fixture.open(COMPACT);
    for (let i = 0; i < 60; i++) put(log, `k${i % 2}`, `v${i}`);
    const segmentsBefore = log.numberOfSegments;
    const active = log.segmentBaseOffsets().at(-1)!;
    // Groups are sized from the segments as they are (Kafka's rule), so full segments shrink first and
    // merge on the next pass.
    const first = await log.compact();
    expect(first.segmentsAfter).toBe(segmentsBefore);
    const second = await log.compact();
    expect(second.segmentsAfter).toBeLessThan(segmentsBefore);
    expect(log.segmentBaseOffsets()[0]).toBe(0);
    expect(log.segmentBaseOffsets().at(-1)).toBe(active);
    // Reading from just below the active segment crosses the emptied range and lands in it.
    const read = log.read(active - 1, 1 << 20);
    expect(read.records[0]!.offset).toBeGreaterThanOrEqual(active - 1);
  });

  test('a reader with a tiny maxBytes still moves past batches that compaction emptied', async () => {
    const log = fixture.open(COMPACT);
    for (let i = 0; i < 30; i++) put(log, 'same', `v${i}`);
    await log.compact();
    const first = readAll(log)[0]!;
    const read = log.read(0, 1);
    expect(read.records.map((r) => r.offset)).toEqual([first.offset]);
    expect(read.nextFetchOffset).toBeGreaterThan(first.offset);
  });

  test('matches the last-record-per-key model for any sequence of writes and tombstones', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ key: fc.integer({ min: 0, max: 6 }), value: fc.option(fc.string({ maxLength: 30 })) }),
          {
            minLength: 1,
            maxLength: 80,
          },
        ),
        async (writes) => {
          const log = fixture.open(COMPACT, path.join(fixture.dir, `run-${run++}`));
          for (const write of writes) put(log, `k${write.key}`, write.value);
          const before = readAll(log);
          const active = log.segmentBaseOffsets().at(-1)!;
          const end = log.logEndOffset;
          await log.compact();
          expect(values(readAll(log))).toEqual(expectedAfterCompaction(before, active));
          expect(log.logEndOffset).toBe(end);
          const again = await log.compact();
          expect(again.recordsRemoved).toBe(0);
          await log.close();
        },
      ),
      { numRuns: 40 },
    );
  });

  test('a log with the delete policy refuses to compact', async () => {
    const log = fixture.open({ cleanupPolicy: 'delete' });
    await expect(log.compact()).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG });
    await expect(log.compact()).rejects.toBeInstanceOf(CohortError);
  });

  test('a truncation while compaction runs aborts it and leaves the truncated log intact', async () => {
    const log = fixture.open(COMPACT);
    for (let i = 0; i < 40; i++) put(log, `k${i % 4}`, `v${i}`);
    const running = log.compact();
    log.truncateTo(5);
    const result = await running;
    expect(result.isAborted).toBe(true);
    expect(values(readAll(log))).toEqual([
      [0, 'v0'],
      [1, 'v1'],
      [2, 'v2'],
      [3, 'v3'],
      [4, 'v4'],
    ]);
    expect(segmentFiles(fixture.partitionDir).some((name) => name.includes('.cleaned'))).toBe(false);
  });

  test('close while compaction runs aborts it and closes cleanly', async () => {
    const log = fixture.open(COMPACT);
    for (let i = 0; i < 40; i++) put(log, `k${i % 4}`, `v${i}`);
    const all = values(readAll(log));
    const running = log.compact();
    await log.close();
    expect((await running).isAborted).toBe(true);
    const reopened = fixture.open(COMPACT);
    expect(values(readAll(reopened))).toEqual(all);
  });

  describe('a crash during the swap', () => {
    /**
     * Builds the same log in two directories and compacts the first. The crash state is the original
     * directory plus the compacted first segment under a .swap name: the first group was cleaned and
     * committed, nothing else was swapped yet.
     */
    async function crashedSwap(): Promise<{ original: string; swapFiles: string[]; expected: unknown }> {
      const compacted = path.join(fixture.dir, 'compacted');
      const original = path.join(fixture.dir, 'original');
      const records = new Map<string, LogRecord[]>();
      let swapEnd = 0;
      for (const dir of [compacted, original]) {
        const log = fixture.open(COMPACT, dir);
        for (let i = 0; i < 50; i++) put(log, `k${i % 3}`, `v${i}`);
        if (dir === compacted) {
          await log.compact();
          swapEnd = log.segmentBaseOffsets()[1]!;
        }
        records.set(dir, readAll(log));
        await log.close();
      }
      const base = '0'.padStart(20, '0');
      fs.copyFileSync(path.join(compacted, `${base}.log`), path.join(original, `${base}.log.swap`));
      fs.copyFileSync(path.join(compacted, `${base}.index`), path.join(original, `${base}.index.swap`));
      const expected = values([
        ...records.get(compacted)!.filter((record) => record.offset < swapEnd),
        ...records.get(original)!.filter((record) => record.offset >= swapEnd),
      ]);
      const replaced = segmentFiles(original).filter(
        (name) => !name.includes('.swap') && Number(name.slice(0, 20)) < swapEnd,
      );
      expect(replaced.length).toBeGreaterThanOrEqual(2);
      return { original, swapFiles: replaced, expected };
    }

    test('a complete .swap segment replaces the segments in its range on open and keeps the rest', async () => {
      const { original, expected } = await crashedSwap();
      const log = fixture.open(COMPACT, original);
      expect(values(readAll(log))).toEqual(expected);
      expect(segmentFiles(original).some((name) => name.includes('.swap'))).toBe(false);
    });

    test('a .swap whose old segments were already deleted and whose index is gone still completes', async () => {
      const { original, swapFiles, expected } = await crashedSwap();
      for (const name of swapFiles) fs.rmSync(path.join(original, name));
      fs.rmSync(path.join(original, `${'0'.padStart(20, '0')}.index.swap`));
      const log = fixture.open(COMPACT, original);
      expect(values(readAll(log))).toEqual(expected);
    });

    test('a .cleaned segment that was never swapped is discarded and the old segments stay', async () => {
      const dir = path.join(fixture.dir, 'uncommitted');
      const log = fixture.open(COMPACT, dir);
      for (let i = 0; i < 50; i++) put(log, `k${i % 3}`, `v${i}`);
      const all = values(readAll(log));
      await log.close();
      const base = '0'.padStart(20, '0');
      fs.writeFileSync(path.join(dir, `${base}.log.cleaned`), Buffer.alloc(100, 7));
      fs.writeFileSync(path.join(dir, `${base}.index.cleaned`), Buffer.alloc(16, 7));
      const reopened = fixture.open(COMPACT, dir);
      expect(values(readAll(reopened))).toEqual(all);
      expect(segmentFiles(dir).some((name) => name.endsWith('.cleaned'))).toBe(false);
    });
  });
});
