import * as fs from 'node:fs';
import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import { LogSegment } from '../../../../src/log/storage/log-segment';
import { RecordBatch } from '../../../../src/log/storage/record-batch';
import { makeTempDir, removeTempDir } from './temp-dir';

describe('LogSegment', () => {
  let dir: string;
  const opened: LogSegment[] = [];
  const create = (baseOffset = 0, indexIntervalBytes = 4096): LogSegment => {
    const segment = LogSegment.create(dir, baseOffset, indexIntervalBytes, 0);
    opened.push(segment);
    return segment;
  };
  const reopen = (segment: LogSegment, indexIntervalBytes = 4096): LogSegment => {
    segment.close();
    const again = LogSegment.open(dir, segment.baseOffset, indexIntervalBytes, 0);
    opened.push(again);
    return again;
  };
  /** Appends one batch of `count` records with values "<offset>" and timestamps 1000 + offset. */
  const appendBatch = (segment: LogSegment, count = 1, gap = 0): RecordBatch => {
    const baseOffset = segment.nextOffset + gap;
    const records = Array.from({ length: count }, (_, i) => ({
      offset: baseOffset + i,
      timestampMs: 1000 + baseOffset + i,
      value: Buffer.from(String(baseOffset + i)),
    }));
    const batch = RecordBatch.encode(records, { baseOffset });
    segment.append(batch);
    return batch;
  };
  const offsetsOf = (batches: readonly RecordBatch[]): number[] =>
    batches.flatMap((batch) => batch.records().map((record) => record.offset));

  beforeEach(() => {
    dir = makeTempDir();
  });

  afterEach(() => {
    for (const segment of opened.splice(0)) segment.close();
    removeTempDir(dir);
  });

  test('is stored as <20-digit base offset>.log and .index', () => {
    const segment = create(42);
    expect(fs.readdirSync(dir).sort()).toEqual(['00000000000000000042.index', '00000000000000000042.log']);
    expect(segment.nextOffset).toBe(42);
    expect(segment.isEmpty).toBe(true);
  });

  test('reading an offset inside a batch returns that whole batch and the ones after it', () => {
    const segment = create();
    appendBatch(segment, 3);
    appendBatch(segment, 3);
    appendBatch(segment, 3);
    const read = segment.read(4, 1 << 20, Number.MAX_SAFE_INTEGER, true);
    expect(read.batches.map((batch) => batch.baseOffset)).toEqual([3, 6]);
    expect(offsetsOf(read.batches)).toEqual([3, 4, 5, 6, 7, 8]);
    expect(segment.read(9, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches).toEqual([]);
  });

  test('adds an index entry once more than indexIntervalBytes were written since the last one', () => {
    const segment = create(0, 100);
    const sizes: number[] = [];
    for (let i = 0; i < 20; i++) sizes.push(appendBatch(segment).sizeInBytes);
    // Each batch here is the same size; an entry is due when the bytes since the last exceed 100.
    const perEntry = Math.floor(100 / sizes[0]!) + 1;
    expect(segment.indexEntries).toBe(Math.floor((20 - 1) / perEntry));
  });

  test('index lookups land on the batch holding each offset, as a full scan would', () => {
    const segment = create(1000, 64);
    const starts = new Map<number, number>();
    let position = 0;
    for (let i = 0; i < 40; i++) {
      const batch = appendBatch(segment, 1 + (i % 4), i % 3);
      for (let offset = batch.baseOffset; offset <= batch.lastOffset; offset++) starts.set(offset, position);
      position += batch.sizeInBytes;
    }
    expect(segment.indexEntries).toBeGreaterThan(5);
    for (const [offset, start] of starts) expect(segment.translateOffset(offset)).toBe(start);
    // Offsets in a gap resolve to the next batch.
    expect(segment.translateOffset(999)).toBe(0);
    expect(segment.translateOffset(segment.nextOffset)).toBe(-1);
  });

  test('maxBytes returns only whole batches; minOneMessage returns one that alone is too big', () => {
    const segment = create();
    const first = appendBatch(segment, 5);
    appendBatch(segment, 5);
    expect(segment.read(0, first.sizeInBytes - 1, Number.MAX_SAFE_INTEGER, false).batches).toEqual([]);
    expect(offsetsOf(segment.read(0, first.sizeInBytes - 1, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(segment.read(0, first.sizeInBytes + 1, Number.MAX_SAFE_INTEGER, false).sizeInBytes).toBe(
      first.sizeInBytes,
    );
  });

  test('maxOffset stops before the first batch that starts at or after it', () => {
    const segment = create();
    appendBatch(segment, 2);
    appendBatch(segment, 2);
    appendBatch(segment, 2);
    expect(segment.read(0, 1 << 20, 3, true).batches.map((batch) => batch.baseOffset)).toEqual([0, 2]);
    expect(segment.read(0, 1 << 20, 2, true).batches.map((batch) => batch.baseOffset)).toEqual([0]);
  });

  test('findOffsetByTimestamp returns the lowest offset at or after a time', () => {
    const segment = create(0, 0);
    for (let i = 0; i < 10; i++) appendBatch(segment, 2);
    expect(segment.maxTimestampMs).toBe(1019);
    expect(segment.findOffsetByTimestamp(0)).toEqual({ offset: 0, timestampMs: 1000 });
    expect(segment.findOffsetByTimestamp(1007)).toEqual({ offset: 7, timestampMs: 1007 });
    expect(segment.findOffsetByTimestamp(1020)).toBeNull();
  });

  test('truncateTo inside a batch keeps its earlier records and ends exactly at the offset', () => {
    const segment = create(0, 0);
    appendBatch(segment, 4);
    appendBatch(segment, 4);
    appendBatch(segment, 4);
    expect(segment.truncateTo(6)).toBeGreaterThan(0);
    expect(segment.nextOffset).toBe(6);
    expect(offsetsOf(segment.read(0, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([
      0, 1, 2, 3, 4, 5,
    ]);
    const reopened = reopen(segment, 0);
    expect(reopened.nextOffset).toBe(6);
    expect(reopened.truncatedOnOpenBytes).toBe(0);
    appendBatch(reopened, 1);
    expect(offsetsOf(reopened.read(5, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([4, 5, 6]);
  });

  test('reopening cuts bytes after the last whole batch and keeps every batch before them', () => {
    const segment = create(0, 0);
    for (let i = 0; i < 5; i++) appendBatch(segment, 2);
    const size = segment.sizeInBytes;
    segment.close();
    fs.appendFileSync(segment.path, Buffer.alloc(30));
    const reopened = LogSegment.open(dir, 0, 0, 0);
    opened.push(reopened);
    expect(reopened.truncatedOnOpenBytes).toBe(30);
    expect(reopened.sizeInBytes).toBe(size);
    expect(reopened.nextOffset).toBe(10);
    expect(fs.statSync(reopened.path).size).toBe(size);
  });

  test('index entries pointing past a shortened log are dropped and the index rebuilt from the log', () => {
    const segment = create(0, 0);
    const batches = Array.from({ length: 6 }, () => appendBatch(segment, 1));
    const entries = segment.indexEntries;
    segment.close();
    const keep = batches.slice(0, 3).reduce((sum, batch) => sum + batch.sizeInBytes, 0);
    fs.truncateSync(segment.path, keep);
    const reopened = LogSegment.open(dir, 0, 0, 0);
    opened.push(reopened);
    expect(entries).toBe(5);
    expect(reopened.indexEntries).toBe(2);
    expect(reopened.nextOffset).toBe(3);
    expect(reopened.translateOffset(2)).toBe(keep - batches[2]!.sizeInBytes);
  });

  test('a batch whose bytes changed after it was written is CORRUPT_MESSAGE when read', () => {
    const segment = create();
    const first = appendBatch(segment, 1);
    appendBatch(segment, 1); // the tail batch is served from memory; the first one is read from the file
    const fd = fs.openSync(segment.path, 'r+');
    fs.writeSync(fd, Buffer.from([0xff]), 0, 1, first.sizeInBytes - 1);
    fs.closeSync(fd);
    try {
      segment.read(0, 1 << 20, Number.MAX_SAFE_INTEGER, true);
      throw new Error('expected a CORRUPT_MESSAGE');
    } catch (error) {
      expect((error as CohortError).code).toBe(ErrorCode.CORRUPT_MESSAGE);
    }
  });

  describe('reads of the tail', () => {
    // The module object itself (an `import *` namespace cannot be spied on); log-segment reads it per call.
    const nodeFs = jest.requireActual<typeof fs>('node:fs');
    afterEach(() => jest.restoreAllMocks());

    test('the batch appended last is read without a file read; an earlier one with one read to find it', () => {
      const segment = create();
      for (let i = 0; i < 30; i++) appendBatch(segment, 2);
      const reads = jest.spyOn(nodeFs, 'readSync');
      const tail = segment.read(59, 1 << 20, Number.MAX_SAFE_INTEGER, true);
      expect(offsetsOf(tail.batches)).toEqual([58, 59]);
      expect(reads).not.toHaveBeenCalled();
      // Thirty headers lie between the start and offset 40: one chunked read finds its batch, one reads it.
      const earlier = segment.read(40, 1 << 20, Number.MAX_SAFE_INTEGER, true);
      expect(offsetsOf(earlier.batches)[0]).toBe(40);
      expect(reads).toHaveBeenCalledTimes(2);
    });

    test('every reader of the tail shares its decoded records (decoded once)', () => {
      const segment = create();
      appendBatch(segment, 3);
      const first = segment.read(0, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches[0]!;
      const second = segment.read(1, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches[0]!;
      expect(second.records()).toBe(first.records());
      expect(first.records().map((r) => r.offset)).toEqual([0, 1, 2]);
    });

    test('after a truncation or a reopen the tail comes from the file again', () => {
      const segment = create();
      appendBatch(segment, 3);
      appendBatch(segment, 3);
      segment.truncateTo(4);
      const reads = jest.spyOn(nodeFs, 'readSync');
      expect(offsetsOf(segment.read(3, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([3]);
      expect(reads).toHaveBeenCalled();
      reads.mockClear();
      appendBatch(segment, 2);
      expect(offsetsOf(segment.read(5, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([4, 5]);
      expect(reads).not.toHaveBeenCalled();
      const reopened = reopen(segment);
      expect(offsetsOf(reopened.read(5, 1 << 20, Number.MAX_SAFE_INTEGER, true).batches)).toEqual([4, 5]);
      expect(reads).toHaveBeenCalled();
    });

    test('the header scan finds every batch when headers straddle its read chunks', () => {
      const segment = create(0, 1 << 30); // no index entries: every lookup scans from the start
      const starts: number[] = [];
      let position = 0;
      for (let i = 0; i < 400; i++) {
        const batch = RecordBatch.encode([{ offset: i, timestampMs: 1, value: Buffer.alloc(i % 61) }], {
          baseOffset: i,
        });
        segment.append(batch);
        starts.push(position);
        position += batch.sizeInBytes;
      }
      expect(position).toBeGreaterThan(3 * 8192);
      for (let offset = 0; offset < 400; offset++)
        expect(segment.translateOffset(offset)).toBe(starts[offset]);
    });

    test('reads match a model of the file for any appends, truncations and read limits', () => {
      const step = fc.oneof(
        fc.record({
          kind: fc.constant('append' as const),
          count: fc.integer({ min: 1, max: 4 }),
          gap: fc.integer({ min: 0, max: 2 }),
          // Many small batches, so headers straddle the scan's 8 KiB chunks; past 64 KiB no tail is kept.
          valueBytes: fc.oneof(
            { weight: 6, arbitrary: fc.integer({ min: 0, max: 200 }) },
            { weight: 3, arbitrary: fc.integer({ min: 0, max: 3_000 }) },
            { weight: 1, arbitrary: fc.constant(70_000) },
          ),
        }),
        fc.record({ kind: fc.constant('truncate' as const), back: fc.integer({ min: 0, max: 6 }) }),
      );
      const readArgs = fc.record({
        at: fc.double({ min: 0, max: 1, noNaN: true }),
        maxBytes: fc.oneof(fc.constant(1 << 20), fc.integer({ min: 0, max: 12_000 })),
        maxOffsetBack: fc.integer({ min: -1, max: 5 }),
        minOneMessage: fc.boolean(),
      });
      fc.assert(
        fc.property(
          fc.array(step, { minLength: 1, maxLength: 60 }),
          fc.integer({ min: 64, max: 20_000 }),
          fc.array(readArgs, { minLength: 1, maxLength: 8 }),
          (steps, indexIntervalBytes, reads) => {
            const segment = create(100, indexIntervalBytes);
            for (const s of steps) {
              if (s.kind === 'append') {
                const baseOffset = segment.nextOffset + s.gap;
                const records = Array.from({ length: s.count }, (_, i) => ({
                  offset: baseOffset + i,
                  timestampMs: 1,
                  value: Buffer.alloc(i === 0 ? s.valueBytes : 1, baseOffset % 251),
                }));
                segment.append(RecordBatch.encode(records, { baseOffset }));
              } else {
                segment.truncateTo(Math.max(100, segment.nextOffset - s.back));
              }
            }
            // The model: every batch in the file, with its position, read from the start.
            const onFile: { batch: RecordBatch; position: number }[] = [];
            let position = 0;
            for (const batch of segment.batchesFrom(0)) {
              onFile.push({ batch, position });
              position += batch.sizeInBytes;
            }
            for (const r of reads) {
              const offset = 100 + Math.floor(r.at * (segment.nextOffset - 100));
              const maxOffset =
                r.maxOffsetBack < 0 ? Number.MAX_SAFE_INTEGER : segment.nextOffset - r.maxOffsetBack;
              const first = onFile.findIndex(({ batch }) => batch.lastOffset >= offset);
              const expected: RecordBatch[] = [];
              let bytes = 0;
              for (let i = first; first >= 0 && i < onFile.length; i++) {
                const batch = onFile[i]!.batch;
                if (batch.baseOffset >= maxOffset || bytes + batch.sizeInBytes > r.maxBytes) break;
                expected.push(batch);
                bytes += batch.sizeInBytes;
              }
              if (
                first >= 0 &&
                expected.length === 0 &&
                r.minOneMessage &&
                onFile[first]!.batch.baseOffset < maxOffset
              )
                expected.push(onFile[first]!.batch);
              const read = segment.read(offset, r.maxBytes, maxOffset, r.minOneMessage);
              expect(segment.translateOffset(offset)).toBe(first < 0 ? -1 : onFile[first]!.position);
              expect(read.firstPosition).toBe(first < 0 ? -1 : onFile[first]!.position);
              expect(read.batches.map((batch) => batch.buffer)).toEqual(
                expected.map((batch) => batch.buffer),
              );
              expect(read.sizeInBytes).toBe(expected.reduce((sum, batch) => sum + batch.sizeInBytes, 0));
            }
            segment.close();
          },
        ),
        { numRuns: 60 },
      );
    });
  });
});
