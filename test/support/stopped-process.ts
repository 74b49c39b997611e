import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/**
 * SIGSTOP that has taken effect. kill(2) returns once the signal is queued; the process stops as the
 * kernel gets to each of its threads, and a thread already running on the other core goes on until
 * then. On a loaded two-core machine that took up to 64 ms: a "stopped" etcd answered /health, and a
 * test asserting it could not failed. Tests freeze a process with this and then rely on it being frozen.
 *
 * Linux only (it reads /proc), as every process these tests start is.
 */
export async function stopProcess(child: ChildProcess, timeoutMs = 5_000): Promise<void> {
  const { pid } = child;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    throw new Error('the process is not running');
  }
  child.kill('SIGSTOP');
  const deadline = Date.now() + timeoutMs;
  while (!isEveryThreadStopped(pid)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`process ${pid} exited`);
    if (Date.now() > deadline) throw new Error(`process ${pid} did not stop within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * Every thread of `pid` stopped (T), or gone (Z, X, or its entry vanished as it exited). A stopped
 * process starts no thread, so once every listed one is stopped the whole process is.
 */
function isEveryThreadStopped(pid: number): boolean {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch (error) {
    throw new Error(`process ${pid} cannot be watched stopping (it exited?): ${(error as Error).message}`);
  }
  return threads.every((thread) => {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${thread}/stat`, 'utf8');
    } catch {
      return true;
    }
    // "tid (comm) S ...": the command may hold spaces and parentheses, the state follows the last ')'.
    const state = stat[stat.lastIndexOf(')') + 2];
    return state === 'T' || state === 'Z' || state === 'X';
  });
}
