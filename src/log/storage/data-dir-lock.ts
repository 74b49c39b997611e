import * as fs from 'node:fs';
import * as path from 'node:path';

/** The lock file's name inside a data directory. */
export const DATA_DIR_LOCK_FILE = '.lock';

/** Directories locked by this process (resolved paths): a second server here must not share one either. */
const lockedHere = new Set<string>();

/** Thrown when another live process, or another server in this one, holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
  ) {
    super(
      ownerPid === process.pid
        ? `data directory ${dataDir} is already in use by another cohort server in this process`
        : `data directory ${dataDir} is in use by process ${ownerPid} ` +
            `(${path.join(dataDir, DATA_DIR_LOCK_FILE)}); stop it, or remove that file if the process ` +
            'is not a cohort server',
    );
    this.name = 'DataDirInUseError';
  }
}

/**
 * One process per data directory, as Kafka's log directory lock ensures: two servers appending to the same
 * segments would corrupt them. Node has no flock, so the lock is a file created exclusively that holds the
 * owner's pid (as PostgreSQL's postmaster.pid does) and, on Linux, the owner's start time. A lock left by a
 * process that died without releasing it (kill -9, a crash) is stale, and the next server takes it over.
 *
 * Whether the owner still runs: on Linux, from `/proc/<pid>/stat`. A zombie (state Z: exited, not yet
 * reaped by its parent, as under a container's PID 1 that reaps nothing) or a dead process (X) does not
 * run, though a signal 0 still reaches it; and a process whose start time is not the one the lock recorded
 * is an unrelated one that reused the pid. Elsewhere, or where /proc says nothing (hidden by `hidepid`), a
 * pid that a signal 0 reaches is taken as the owner, and a reused pid makes the directory look busy: the
 * error names the file to remove. A lock holding only a pid (written before start times were recorded) is
 * judged by its process's state alone.
 *
 * Worked example: server 412 started at tick 9170 writes "412\n9170\n" and crashes; its parent has not
 * reaped it, so /proc/412/stat says "412 (node) Z ...": the next server takes the lock over. Had pid 412
 * been reused by a shell started at tick 12004, "9170" ≠ "12004" says the same.
 */
export class DataDirLock {
  private isReleased = false;

  private constructor(
    readonly dataDir: string,
    private readonly lockPath: string,
    private readonly key: string,
  ) {}

  /** Creates `dataDir` if needed and locks it; throws DataDirInUseError if a live owner holds it. */
  static acquire(dataDir: string): DataDirLock {
    fs.mkdirSync(dataDir, { recursive: true });
    const key = fs.realpathSync(dataDir);
    if (lockedHere.has(key)) throw new DataDirInUseError(dataDir, process.pid);
    const lockPath = path.join(dataDir, DATA_DIR_LOCK_FILE);
    // The pid is written to a file of this process's own and linked into place: link() fails if the lock
    // exists, and a lock that exists always holds a whole pid and start time (an exclusive create followed
    // by a write would let a second server read an empty file and take it for stale).
    const ownPath = `${lockPath}.${process.pid}`;
    const ownStartTime = process.platform === 'linux' ? processStat(process.pid)?.startTime : undefined;
    const content = ownStartTime === undefined ? `${process.pid}\n` : `${process.pid}\n${ownStartTime}\n`;
    fs.writeFileSync(ownPath, content, { mode: 0o644 });
    try {
      // A stale lock is removed once, then linked like a fresh one: of two servers starting together on
      // a stale lock, one links and the other finds a live owner.
      for (let attempt = 0; ; attempt++) {
        try {
          fs.linkSync(ownPath, lockPath);
          lockedHere.add(key);
          return new DataDirLock(dataDir, lockPath, key);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const owner = readOwner(lockPath);
        if (owner !== undefined && owner.pid !== process.pid && isRunning(owner)) {
          throw new DataDirInUseError(dataDir, owner.pid);
        }
        if (attempt > 0)
          throw new Error(`could not lock data directory ${dataDir}: ${lockPath} keeps reappearing`);
        // Stale: its owner is gone (or it is this process's own leftover, and no server here holds it).
        fs.rmSync(lockPath, { force: true });
      }
    } finally {
      fs.rmSync(ownPath, { force: true });
    }
  }

  /** Removes the lock file if it is still this process's. Idempotent. */
  release(): void {
    if (this.isReleased) return;
    this.isReleased = true;
    lockedHere.delete(this.key);
    if (readOwner(this.lockPath)?.pid === process.pid) fs.rmSync(this.lockPath, { force: true });
  }
}

/** What a lock file says of its owner. */
interface LockOwner {
  readonly pid: number;
  /** Field 22 of its /proc/<pid>/stat (clock ticks since boot); undefined in a lock that holds only a pid. */
  readonly startTime: string | undefined;
}

function readOwner(lockPath: string): LockOwner | undefined {
  let text: string;
  try {
    text = fs.readFileSync(lockPath, 'utf8');
  } catch {
    return undefined;
  }
  const [pidLine, startLine] = text.split('\n');
  const pid = Number(pidLine.trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const startTime = startLine?.trim();
  return { pid, startTime: startTime !== undefined && DIGITS.test(startTime) ? startTime : undefined };
}

const DIGITS = /^\d+$/;

/** Linux process states of a process that no longer runs: zombie, dead (and dead as 2.6.33 to 3.13 wrote it). */
const NOT_RUNNING_STATES = new Set(['Z', 'X', 'x']);

function isRunning(owner: LockOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  const stat = processStat(owner.pid);
  // /proc hides it (hidepid) or it exited a moment ago: the signal found it, and a busy directory is the
  // safe answer.
  if (stat === undefined) return true;
  if (NOT_RUNNING_STATES.has(stat.state)) return false;
  return owner.startTime === undefined || owner.startTime === stat.startTime;
}

/**
 * The state (field 3) and start time (field 22) of a Linux process, from /proc/<pid>/stat; undefined if it
 * cannot be read. The line is "pid (comm) state ppid ...", and comm is the process's own name, which may
 * hold spaces and parentheses ("x) Z (y"): the fields are counted from the last ')'.
 */
function processStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const commEnd = text.lastIndexOf(')');
  if (commEnd < 0) return undefined;
  // fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
  const fields = text
    .slice(commEnd + 1)
    .trim()
    .split(' ');
  const state = fields[0];
  const startTime = fields[19];
  if (state === undefined || state === '' || startTime === undefined || !DIGITS.test(startTime)) {
    return undefined;
  }
  return { state, startTime };
}
