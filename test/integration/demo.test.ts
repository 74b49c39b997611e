import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { get, type ClientRequest } from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isRunning } from '../support/child-processes';
import { demoPids, expectDemoStory } from '../support/demo-story';

/**
 * `npm run demo`, run as a user runs it (from its TypeScript sources, its own processes) on a short timeline: it must tell the
 * story in order — joins, assignment, the stopped consumer, the rebalance after its session timeout, the
 * lag back to zero — exit 0 on its own, and leave no process and no data directory behind.
 */

const REPO_ROOT = join(__dirname, '..', '..');

/** The demo as `npm run demo` runs it, on a short timeline (a 2 s session, half-second phases). */
function spawnQuickDemo(): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(
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
}

it('tells the story of a group losing a member and exits 0, cleaning up after itself', async () => {
  const child = spawnQuickDemo();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const lines = expectDemoStory(stdout, 1.6);
  // The live page's address comes first, so it can be opened before the group forms.
  const livePage = lines.findIndex((line) => /\] server +live page: http:\/\/127\.0\.0\.1:\d+\/ /.test(line));
  const firstJoin = lines.findIndex((line) => /\] consumer-\d +joined/.test(line));
  expect([livePage >= 0, livePage < firstJoin]).toEqual([true, true]);

  const dataDir = (/data in (\S+) \(removed at the end\)/.exec(stdout) as RegExpExecArray)[1];
  expect(existsSync(dataDir)).toBe(false);
  const pids = demoPids(stdout);
  expect(pids).toHaveLength(4);
  expect(pids.filter(isRunning)).toEqual([]);
}, 120_000);

it('keeps serving its live page once done while a page is open, says so, and stops at Ctrl-C', async () => {
  const child = spawnQuickDemo();
  let stdout = '';
  let stderr = '';
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  let page: ClientRequest | undefined;
  try {
    const lineMatching = (pattern: RegExp): Promise<RegExpExecArray> =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(stdout);
          if (match !== null) resolve(match);
        };
        child.stdout.on('data', check);
        void closed.then(() => reject(new Error(`the demo ended before ${pattern}:\n${stdout}${stderr}`)));
        check();
      });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const [, url] = await lineMatching(/live page: (http:\/\/127\.0\.0\.1:\d+)\//);
    // A page's stream, held open as a browser tab holds it.
    const opened = new Promise<void>((resolve, reject) => {
      page = get(`${url}/api/stream`, (response) => {
        response.resume();
        resolve();
      });
      page.on('error', reject);
    });
    await opened;
    await lineMatching(
      /a live page is open: the live page stays at http:\/\/127\.0\.0\.1:\d+\/ until Ctrl-C/,
    );
    // Still serving: the page's files answer.
    const status = await new Promise<number | undefined>((resolve, reject) =>
      get(`${url}/`, (response) => {
        response.resume();
        resolve(response.statusCode);
      }).on('error', reject),
    );
    expect(status).toBe(200);
    child.kill('SIGINT');
    expect(await closed).toBe(0);
    expect(stderr).toBe('');
    expectDemoStory(stdout, 1.6);
    const pids = demoPids(stdout);
    expect(pids.filter(isRunning)).toEqual([]);
  } finally {
    page?.destroy();
    if (child.exitCode === null) child.kill('SIGKILL');
    await closed;
  }
}, 120_000);
