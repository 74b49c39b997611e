import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
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

const isLinux = process.platform === 'linux';

/** The fields of a Linux process's /proc/<pid>/stat from field 3 (its state) on, counted from the last ')'. */
function statFields(pid: number): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(' ');
}

/** Field 22 of a Linux process's /proc/<pid>/stat: its start time. */
const startTimeOf = (pid: number): string => statFields(pid)[19]!;

/** What a lock taken by this process holds: its pid, and on Linux its start time. */
const ownLock = (): string =>
  isLinux ? `${process.pid}\n${startTimeOf(process.pid)}\n` : `${process.pid}\n`;

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
    expect(fs.readFileSync(path.join(nested, DATA_DIR_LOCK_FILE), 'utf8')).toBe(ownLock());
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

  it('refuses a directory whose lock names a live process by its pid alone, and says which', async () => {
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
    expect(fs.readFileSync(lockFile(), 'utf8')).toBe(ownLock());
  });

  it('takes over a stale lock: a dead pid, garbage, or an empty file', () => {
    for (const content of [`${deadPid()}\n`, 'not a pid', '']) {
      fs.writeFileSync(lockFile(), content);
      const lock = acquire();
      expect(fs.readFileSync(lockFile(), 'utf8')).toBe(ownLock());
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

/** The processes a test started, each with how to end it. */
const children: { child: ChildProcess; end: () => void }[] = [];
afterEach(async () => {
  await Promise.all(
    children.splice(0).map(async ({ child, end }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      end();
      await exited;
    }),
  );
});

/** Starts a process, ended after the test by `end`, and resolves with the first line it prints. */
function spawnUntilFirstLine(
  command: string,
  args: string[],
  end: (child: ChildProcess) => void,
): Promise<string> {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push({ child, end: () => end(child) });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline >= 0) resolve(out.slice(0, newline));
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before printing a line`)));
  });
}

/**
 * A zombie's pid: a python3 parent forks a child that exits at once, waits for that exit without reaping
 * it (waitid with WNOWAIT), prints the child's pid, and reaps it once its stdin closes (after the test).
 * Until then the pid is a zombie, as a crashed server is under a PID 1 that reaps nothing.
 */
async function zombiePid(): Promise<number> {
  const parent = [
    'import os, sys',
    'pid = os.fork()',
    'if pid == 0:',
    '    os._exit(0)',
    'os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)',
    'print(pid, flush=True)',
    'sys.stdin.read()',
    'os.waitpid(pid, 0)',
  ].join('\n');
  return Number(await spawnUntilFirstLine('python3', ['-c', parent], (child) => child.stdin!.end()));
}

/** The pid of a live node process whose own name (its /proc comm) is `title`, once the name is set. */
async function livePid(title = 'cohort-test'): Promise<number> {
  const script = `process.title = ${JSON.stringify(title)}; console.log(process.pid); setInterval(() => {}, 1000);`;
  return Number(
    await spawnUntilFirstLine(process.execPath, ['-e', script], (child) => child.kill('SIGKILL')),
  );
}

(isLinux ? describe : describe.skip)('DataDirLock on Linux (/proc/<pid>/stat)', () => {
  it('takes over a lock whose owner is a zombie, with or without a recorded start time', async () => {
    const zombie = await zombiePid();
    // A signal 0 reaches a zombie: that alone took it for the owner.
    expect(() => process.kill(zombie, 0)).not.toThrow();
    expect(statFields(zombie)[0]).toBe('Z');
    for (const content of [`${zombie}\n`, `${zombie}\n${startTimeOf(zombie)}\n`]) {
      fs.writeFileSync(lockFile(), content);
      const lock = acquire();
      expect(fs.readFileSync(lockFile(), 'utf8')).toBe(ownLock());
      lock.release();
    }
  });

  it('refuses a lock naming a live process with its start time, even one whose name holds ") Z ("', async () => {
    const owner = await livePid('x) Z (y');
    expect(fs.readFileSync(`/proc/${owner}/stat`, 'utf8')).toContain('(x) Z (y)');
    const content = `${owner}\n${startTimeOf(owner)}\n`;
    fs.writeFileSync(lockFile(), content);
    expect(() => acquire()).toThrow(DataDirInUseError);
    expect(fs.readFileSync(lockFile(), 'utf8')).toBe(content);
  });

  it('takes over a lock whose pid now belongs to a process started at another time (a reused pid)', async () => {
    const other = await livePid();
    fs.writeFileSync(lockFile(), `${other}\n${Number(startTimeOf(other)) - 1}\n`);
    acquire();
    expect(fs.readFileSync(lockFile(), 'utf8')).toBe(ownLock());
  });
});
