import { readdirSync, readFileSync } from 'node:fs';

/** A process whose parent is the one asked about. */
export interface ChildProcessInfo {
  readonly pid: number;
  /** Its command line, arguments joined by spaces. */
  readonly command: string;
}

/**
 * The live child processes of `parentPid` (this process by default), read from Linux's /proc: what a
 * test's afterAll checks to prove it leaked no cohort node or etcd, whatever its harness believes it
 * stopped. Zombies (exited, not yet reaped) are not live and are left out.
 */
export function liveChildProcesses(parentPid = process.pid): ChildProcessInfo[] {
  const children: ChildProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    let command: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [state, ppid] = [fields[0], Number(fields[1])];
    if (ppid === parentPid && state !== 'Z') children.push({ pid: Number(entry), command });
  }
  return children;
}

/** Whether a process with this pid exists (signal 0 reaches it). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
