import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npm run demo`, run as a user runs it (from its TypeScript sources, its own processes) on a short timeline: it must tell the
 * story in order — joins, assignment, the stopped consumer, the rebalance after its session timeout, the
 * lag back to zero — exit 0 on its own, and leave no process and no data directory behind.
 */

const REPO_ROOT = join(__dirname, '..', '..');

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('tells the story of a group losing a member and exits 0, cleaning up after itself', async () => {
  const child = spawn(
    process.execPath,
    [
      '-r',
      './scripts/register-typescript.js',
      'src/demo/main.ts',
      '--session-timeout-ms',
      '2000',
      '--steady-ms',
      '500',
      '--after-rebalance-ms',
      '500',
      '--timeout-ms',
      '90000',
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const lines = stdout.split('\n');
  const at = (pattern: RegExp): number => {
    const index = lines.findIndex((line) => pattern.test(line));
    if (index < 0) throw new Error(`no line matches ${String(pattern)} in:\n${stdout}`);
    return index;
  };
  const joins = ['consumer-1', 'consumer-2', 'consumer-3'].map((name) =>
    at(new RegExp(`\\] ${name} +joined generation \\d+( as leader)?: owns demo-orders \\[\\d`)),
  );
  const assignment = at(
    /\] group +Stable, 3 members: consumer-1 \[[\d, ]+\] +consumer-2 \[[\d, ]+\] +consumer-3 \[[\d, ]+\]/,
  );
  const stopped = at(/\] demo +stopping consumer-3 with SIGKILL/);
  const rebalanced = at(/\] group +Stable, 2 members: consumer-1 \[[\d, ]+\] +consumer-2 \[[\d, ]+\]/);
  const explained = at(/\] demo +rebalanced after the session timeout/);
  const drained = at(/\] lag +back to 0 on every partition: all \d+ records consumed and committed/);
  const done = at(/\] demo +done in/);
  // The live page's address comes first, so it can be opened before the group forms.
  expect(at(/\] server +live page: http:\/\/127\.0\.0\.1:\d+\/ /)).toBeLessThan(Math.min(...joins));
  expect(Math.max(...joins)).toBeLessThan(assignment);
  expect([assignment, stopped, rebalanced, explained, drained, done]).toEqual(
    [assignment, stopped, rebalanced, explained, drained, done].sort((a, b) => a - b),
  );
  // The demo polls DescribeGroups every 200 ms, and the survivors rejoin at their next heartbeat (every
  // 400 ms here), so the PreparingRebalance it may print between the two is a window it can miss; when it
  // is printed it must sit between the kill and the new assignment. What cannot vary: the group waited out
  // the dead member's 2 s session, counted from its last heartbeat (at most 0.4 s before the kill).
  const preparing = lines.findIndex(
    (line, i) => i > stopped && /\] group +PreparingRebalance, 2 members/.test(line),
  );
  if (preparing >= 0) expect(preparing).toBeLessThan(rebalanced);
  const waitedS = Number(
    (/after the session timeout: ([\d.]+)s after consumer-3/.exec(lines[explained]) as RegExpExecArray)[1],
  );
  expect(waitedS).toBeGreaterThanOrEqual(1.6);

  const dataDir = (/data in (\S+) \(removed at the end\)/.exec(stdout) as RegExpExecArray)[1];
  expect(existsSync(dataDir)).toBe(false);
  const pids = [...(/pids: (.*)/.exec(stdout) as RegExpExecArray)[1].matchAll(/ (\d+)/g)].map((m) =>
    Number(m[1]),
  );
  expect(pids).toHaveLength(4);
  expect(pids.filter(isRunning)).toEqual([]);
}, 120_000);
