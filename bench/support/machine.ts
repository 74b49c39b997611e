import { readFileSync } from 'node:fs';
import * as os from 'node:os';

export interface MachineDescription {
  node: string;
  v8: string;
  cpu: string;
  cores: number;
  /** The CPUs this process may run on (Linux), e.g. "0" under `taskset -c 0`; "?" elsewhere. */
  cpusAllowed: string;
  platform: string;
  memoryGiB: number;
}

/** What a reader needs to judge a figure: the runtime, the CPU, and whether the run was pinned to one core. */
export function describeMachine(): MachineDescription {
  let cpusAllowed = '?';
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const match = /^Cpus_allowed_list:\s*(\S+)/m.exec(status);
    if (match) cpusAllowed = match[1];
  } catch {
    // Not Linux: leave it unknown.
  }
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    cpu: cpus.length > 0 ? cpus[0].model : '?',
    cores: cpus.length,
    cpusAllowed,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  };
}
