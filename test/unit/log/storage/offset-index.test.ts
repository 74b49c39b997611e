import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError } from '../../../../src/errors';
import { INDEX_ENTRY_BYTES, OffsetIndex } from '../../../../src/log/storage/offset-index';
import { makeTempDir, removeTempDir } from './temp-dir';

describe('OffsetIndex', () => {
  let dir: string;
  let file: string;
  const opened: OffsetIndex[] = [];
  const open = (create = false): OffsetIndex => {
    const index = create ? OffsetIndex.create(file, 100) : OffsetIndex.open(file, 100);
    opened.push(index);
    return index;
  };

  beforeEach(() => {
    dir = makeTempDir();
    file = path.join(dir, '00000000000000000100.index');
  });

  afterEach(() => {
    for (const index of opened.splice(0)) index.close();
    removeTempDir(dir);
  });

  test('lookup finds the last entry at or below an offset and -1 before the first entry', () => {
    const index = open(true);
    index.append(105, 4100, 10);
    index.append(111, 8230, 20);
    index.append(130, 12400, 20);
    expect(index.lookup(104)).toBe(-1);
    expect(index.lookup(105)).toBe(0);
    expect(index.lookup(110)).toBe(0);
    expect(index.lookup(113)).toBe(1);
    expect(index.positionAt(index.lookup(113))).toBe(8230);
    expect(index.lookup(1_000_000)).toBe(2);
  });

  test('lookupByTimestamp finds the last entry whose max timestamp is below the target', () => {
    const index = open(true);
    index.append(105, 4100, 10);
    index.append(111, 8230, 20);
    index.append(130, 12400, 20);
    index.append(140, 16000, 35);
    expect(index.lookupByTimestamp(10)).toBe(-1);
    expect(index.lookupByTimestamp(11)).toBe(0);
    expect(index.lookupByTimestamp(20)).toBe(0);
    expect(index.lookupByTimestamp(21)).toBe(2);
    expect(index.lookupByTimestamp(100)).toBe(3);
  });

  test('an index without entries holds no file descriptor until its first append', () => {
    const created = open(true);
    expect(fs.existsSync(file)).toBe(true);
    expect(created.isOpen).toBe(false);
    created.append(105, 4100, 10);
    expect(created.isOpen).toBe(true);
    created.close();
    expect(created.isOpen).toBe(false);

    // Found empty on open: no descriptor either; entries written after that reopen the file.
    fs.writeFileSync(file, Buffer.alloc(5, 1)); // a torn first entry: nothing whole
    const empty = open();
    expect(empty.entries).toBe(0);
    expect(empty.isOpen).toBe(false);
    expect(fs.statSync(file).size).toBe(0);
    empty.append(105, 4100, 10);
    empty.close();
    expect(open().entries).toBe(1);
  });

  test('a closed index does not reopen its file', () => {
    const index = open(true);
    index.close();
    expect(() => index.append(105, 4100, 10)).toThrow(CohortError);
    expect(index.isOpen).toBe(false);
  });

  test('entries survive a reopen and a torn trailing entry is dropped', () => {
    const index = open(true);
    index.append(105, 4100, 1_700_000_000_123);
    index.append(111, 8230, 1_700_000_000_456);
    index.close();
    fs.appendFileSync(file, Buffer.alloc(7, 1));
    const reopened = open();
    expect(reopened.entries).toBe(2);
    expect([reopened.offsetAt(1), reopened.positionAt(1), reopened.maxTimestampAt(1)]).toEqual([
      111, 8230, 1_700_000_000_456,
    ]);
    expect(fs.statSync(file).size).toBe(2 * INDEX_ENTRY_BYTES);
  });

  test('sanitize drops everything from the first entry that cannot describe the log', () => {
    const index = open(true);
    index.append(105, 4100, 10);
    index.append(111, 8230, 20);
    index.append(130, 12400, 20);
    // A log of 9000 bytes cannot hold a batch at 12400.
    expect(index.sanitize(9000)).toBe(1);
    expect(index.entries).toBe(2);
    index.close();
    // Overwrite entry 1 with a position that goes backwards.
    const bytes = fs.readFileSync(file);
    bytes.writeUInt32BE(100, INDEX_ENTRY_BYTES + 4);
    fs.writeFileSync(file, bytes);
    const reopened = open();
    expect(reopened.sanitize(1_000_000)).toBe(1);
    expect(reopened.entries).toBe(1);
  });

  test('append refuses entries that do not increase', () => {
    const index = open(true);
    index.append(105, 4100, 10);
    expect(() => index.append(105, 5000, 10)).toThrow(CohortError);
    expect(() => index.append(106, 4100, 10)).toThrow(CohortError);
    expect(() => index.append(99, 5000, 10)).toThrow(CohortError);
  });

  test('truncateToPosition drops the entries at or after a byte position', () => {
    const index = open(true);
    index.append(105, 4100, 10);
    index.append(111, 8230, 20);
    index.truncateToPosition(8230);
    expect(index.entries).toBe(1);
    expect(fs.statSync(file).size).toBe(INDEX_ENTRY_BYTES);
  });
});
