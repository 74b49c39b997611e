import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeCheckpointFileSync } from '../../../../src/log/storage/checkpoint-file';
import { makeTempDir, removeTempDir } from './temp-dir';

/** The crash-safe small files: whole text written, whatever the size of each write system call. */
describe('checkpoint files', () => {
  let root: string;

  beforeEach(() => {
    root = makeTempDir();
  });

  afterEach(() => {
    jest.restoreAllMocks();
    removeTempDir(root);
  });

  const text = `${JSON.stringify({ version: 1, entries: Array.from({ length: 50 }, (_, i) => i) })}\n`;

  // The module object itself (an `import *` namespace cannot be spied on); checkpoint-file reads it per call.
  const nodeFs = jest.requireActual<typeof fs>('node:fs');

  /** A kernel that writes at most 7 bytes per call (a short write, which `write(2)` may do). */
  function shortWrites(): void {
    const write = nodeFs.writeSync.bind(nodeFs) as (...args: unknown[]) => number;
    jest.spyOn(nodeFs, 'writeSync').mockImplementation(((fd: number, data: unknown, ...rest: unknown[]) => {
      if (typeof data === 'string') return write(fd, data.slice(0, 7), ...rest);
      if (ArrayBuffer.isView(data) && typeof rest[0] !== 'string') {
        const offset = typeof rest[0] === 'number' ? rest[0] : 0;
        const length = Math.min(7, typeof rest[1] === 'number' ? rest[1] : data.byteLength - offset);
        return write(fd, data, offset, length, rest[2] ?? null);
      }
      return write(fd, data, ...rest);
    }) as typeof fs.writeSync);
  }

  test('a synchronous write holds the whole text even when each write call is short', () => {
    shortWrites();
    const file = path.join(root, 'checkpoint');
    writeCheckpointFileSync(file, text);
    expect(fs.readFileSync(file, 'utf8')).toBe(text);
  });
});
