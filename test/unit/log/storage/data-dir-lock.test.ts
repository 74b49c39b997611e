import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DATA_DIR_LOCK_FILE, DataDirInUseError, DataDirLock } from '../../../../src/log/storage';
import { makeTempDir, removeTempDir } from './temp-dir';

let dir: string;
const locks: DataDirLock[] = [];
beforeEach(() => {
  dir = makeTempDir();
});
afterEach(() => {
  for (const lock of locks.splice(0)) lock.release();
  removeTempDir(dir);
});

function acquire(dataDir = dir): DataDirLock {
  const lock = DataDirLock.acquire(dataDir);
  locks.push(lock);
  return lock;
}

const lockFile = (): string => path.join(dir, DATA_DIR_LOCK_FILE);

/** The pid of a process that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

describe('DataDirLock', () => {
  it('creates the directory and a lock file holding this pid, and removes the file on release', () => {
    const nested = path.join(dir, 'a', 'b');
    const lock = acquire(nested);
    expect(fs.readFileSync(path.join(nested, DATA_DIR_LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    expect(fs.readdirSync(nested)).toEqual([DATA_DIR_LOCK_FILE]);
    lock.release();
    lock.release();
    expect(fs.readdirSync(nested)).toEqual([]);
  });

  it('refuses a second lock in this process, however the path is spelled, until the first is released', () => {
    const first = acquire();
    fs.symlinkSync(dir, `${dir}-link`);
    try {
      for (const spelling of [dir, `${dir}/`, `${dir}-link`]) {
        expect(() => acquire(spelling)).toThrow(DataDirInUseError);
      }
      expect(() => acquire()).toThrow(/already in use by another cohort server in this process/);
      first.release();
      acquire(`${dir}-link`);
    } finally {
      fs.rmSync(`${dir}-link`);
    }
  });

  it('refuses a directory whose lock names a live process, and says which', async () => {
    const owner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(lockFile(), `${owner.pid}\n`);
      let thrown: unknown;
      try {
        acquire();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(DataDirInUseError);
      expect(thrown).toMatchObject({ ownerPid: owner.pid, dataDir: dir });
      expect((thrown as Error).message).toContain(`in use by process ${owner.pid}`);
      expect(fs.readFileSync(lockFile(), 'utf8')).toBe(`${owner.pid}\n`);
    } finally {
      owner.kill('SIGKILL');
      await new Promise((resolve) => owner.once('exit', resolve));
    }
    // Its owner gone (as after kill -9), the lock is stale and taken over.
    acquire();
    expect(fs.readFileSync(lockFile(), 'utf8')).toBe(`${process.pid}\n`);
  });

  it('takes over a stale lock: a dead pid, garbage, or an empty file', () => {
    for (const content of [`${deadPid()}\n`, 'not a pid', '']) {
      fs.writeFileSync(lockFile(), content);
      const lock = acquire();
      expect(fs.readFileSync(lockFile(), 'utf8')).toBe(`${process.pid}\n`);
      lock.release();
      expect(fs.existsSync(lockFile())).toBe(false);
    }
  });

  it('leaves a lock file it no longer owns in place on release', () => {
    const lock = acquire();
    fs.writeFileSync(lockFile(), '12345\n');
    lock.release();
    expect(fs.readFileSync(lockFile(), 'utf8')).toBe('12345\n');
  });
});
