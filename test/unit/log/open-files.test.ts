import * as fs from 'node:fs';
import {
  countOpenFileDescriptors,
  MIN_OPEN_FILES_HEADROOM,
  openFilesHeadroom,
  parseOpenFileLimit,
  readOpenFileLimit,
} from '../../../src/log/open-files';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('open files', () => {
  it('reads the soft limit from a /proc/<pid>/limits text', () => {
    expect(parseOpenFileLimit(LIMITS)).toBe(1024);
    expect(parseOpenFileLimit(LIMITS.replace('1024 ', 'unlimited '))).toBeUndefined();
    expect(parseOpenFileLimit('Limit Soft Hard Units\n')).toBeUndefined();
  });

  it('keeps a tenth of the limit free, and never less than the minimum', () => {
    expect(openFilesHeadroom(20_000)).toBe(2_000);
    expect(openFilesHeadroom(256)).toBe(MIN_OPEN_FILES_HEADROOM);
  });

  it("reads this process's limit and open descriptors on Linux", () => {
    if (process.platform !== 'linux') return;
    expect(readOpenFileLimit()).toBeGreaterThan(0);
    const before = countOpenFileDescriptors()!;
    expect(before).toBeGreaterThan(2);
    const fd = fs.openSync(__filename, 'r');
    try {
      expect(countOpenFileDescriptors()).toBe(before + 1);
    } finally {
      fs.closeSync(fd);
    }
  });
});
