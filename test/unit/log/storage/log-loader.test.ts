import * as fs from 'node:fs';
import * as path from 'node:path';
import * as fileIo from '../../../../src/log/storage/file-io';
import { PartitionLog } from '../../../../src/log/storage';
import { ManualTime } from '../../../../src/time';
import { makeTempDir, removeTempDir } from './temp-dir';

const openFds = (): number => fs.readdirSync('/proc/self/fd').length;

/** Opening a log is all or nothing for its file handles: a failure leaves none of them open. */
describe('a partition log that cannot be opened', () => {
  let root: string;

  beforeEach(() => {
    root = makeTempDir();
  });

  afterEach(() => {
    jest.restoreAllMocks();
    removeTempDir(root);
  });

  test('a failed fsync of the directory after the first segment is created closes that segment', () => {
    const dir = path.join(root, 'topic-0');
    fs.mkdirSync(dir);
    const before = openFds();
    jest.spyOn(fileIo, 'fsyncDirectorySync').mockImplementation(() => {
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    });
    expect(() => PartitionLog.open(dir, { time: new ManualTime() })).toThrow('EIO');
    expect(openFds()).toBe(before);
    // The segment it created is there, empty: a later open takes it as it is.
    jest.restoreAllMocks();
    const log = PartitionLog.open(dir, { time: new ManualTime() });
    expect(log.logEndOffset).toBe(0);
    return log.close();
  });
});
