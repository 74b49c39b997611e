import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (Linux's USER_HZ, 100 on every common build). */
let ticksPerSecond: number | undefined;

/**
 * CPU time (user + system, every thread) another process has used so far, in µs, from Linux's
 * /proc/<pid>/stat: how a bench charges a server child for the requests it answered without asking the
 * child. The resolution is one clock tick (10 ms), so measure over seconds. NaN where it cannot be read.
 */
export function processCpuUs(pid: number): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return Number.NaN;
  }
  // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based), so 11 and 12 from here.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6;
}
