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
 * owner's pid (as PostgreSQL's postmaster.pid does). A lock left by a process that died without releasing
 * it (kill -9, a crash) is stale: its pid no longer runs, and the next server takes it over. A pid reused
 * by an unrelated process makes the directory look busy; the error names the file to remove.
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
    // exists, and a lock that exists always holds a whole pid (an exclusive create followed by a write
    // would let a second server read an empty file and take it for stale).
    const ownPath = `${lockPath}.${process.pid}`;
    fs.writeFileSync(ownPath, `${process.pid}\n`, { mode: 0o644 });
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
        const ownerPid = readOwnerPid(lockPath);
        if (ownerPid !== undefined && ownerPid !== process.pid && isRunning(ownerPid)) {
          throw new DataDirInUseError(dataDir, ownerPid);
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
    if (readOwnerPid(this.lockPath) === process.pid) fs.rmSync(this.lockPath, { force: true });
  }
}

function readOwnerPid(lockPath: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(lockPath, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
