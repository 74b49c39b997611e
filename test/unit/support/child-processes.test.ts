import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { liveChildProcesses } from '../../support/child-processes';

it('lists a live child process with its command line, and not once it has exited', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  await once(child, 'spawn');
  expect(liveChildProcesses()).toContainEqual({ pid: child.pid, command: 'sleep 30' });
  child.kill('SIGKILL');
  await once(child, 'exit');
  expect(liveChildProcesses().map((c) => c.pid)).not.toContain(child.pid);
});
