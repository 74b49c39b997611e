import { openSync, readSync } from 'node:fs';

/**
 * CPU time of the calling (main) thread, from Linux's /proc/thread-self/schedstat (its first field, in ns):
 * unlike process.cpuUsage(), it leaves out libuv's thread pool and V8's helper threads, so a long task on
 * the event loop shows as what it cost the loop. NaN where the file does not exist.
 */
const schedstat = openSchedstat();
const schedstatBuffer = Buffer.alloc(128);

function openSchedstat(): number | undefined {
  try {
    return openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return undefined;
  }
}

/** CPU time of the main thread in µs (NaN where schedstat cannot be read). */
export function mainThreadCpuUs(): number {
  if (schedstat === undefined) return Number.NaN;
  const n = readSync(schedstat, schedstatBuffer, 0, schedstatBuffer.length, 0);
  const text = schedstatBuffer.toString('latin1', 0, n);
  return Number(text.slice(0, text.indexOf(' '))) / 1_000;
}
