import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docFiles, REPO_ROOT, shellBlocks } from '../support/doc-examples';
import { docShellEnv, runBash, withoutBuild } from '../support/doc-shell';
import { startTestServer, type TestServer } from '../support/start-test-server';

/**
 * Every ```sh block in README.md and docs/ is run here, as a user would paste it into bash
 * (test/support/doc-shell.ts), or says above it which test runs it instead (`<!-- run by ...: step -->`,
 * one step of a walk-through that needs what earlier blocks started) or why nothing runs it
 * (`<!-- not run: ... -->`, naming the test that covers it instead). A block runs from the repository's
 * root against a fresh server of its own, with the defaults a user's shell would have pointed at that
 * server instead of the default ports: COHORT_ADDRESS for the CLI, COHORT_LISTEN / COHORT_ADMIN_LISTEN for
 * the health probe, and the literal addresses 127.0.0.1:7070 and 127.0.0.1:7071 rewritten to the server's.
 */
describe('the shell commands in the docs', () => {
  const blocks = docFiles().flatMap(shellBlocks);
  const runnable = blocks.filter((b) => b.notRun === undefined && b.runBy === undefined);
  let prefix: string;
  let server: TestServer | undefined;

  beforeAll(() => {
    if (!existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'))) {
      throw new Error('dist/ is not built: run `npm ci` (its prepare script builds it) or `npm run build`');
    }
    prefix = mkdtempSync(join(tmpdir(), 'cohort-npm-prefix-'));
  });
  afterAll(() => rmSync(prefix, { recursive: true, force: true }));
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('runs most of them, and says why for the others', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(4);
    for (const block of blocks) {
      if (block.runBy !== undefined)
        expect([block.where, existsSync(join(REPO_ROOT, block.runBy.test))]).toEqual([block.where, true]);
      if (block.notRun === undefined) continue;
      // The reason names the test or check that covers the block, or why nothing can.
      expect([block.where, /test|\.ci\/run|not a Debian package|no Docker/.test(block.notRun)]).toEqual([
        block.where,
        true,
      ]);
    }
  });

  it.each(runnable.map((b) => [b.where, b.code] as const))(
    '%s runs as shown',
    async (_where, code) => {
      server = await startTestServer({ adminListen: '127.0.0.1:0', groupInitialRebalanceDelayMs: 0 });
      const admin = new URL(server.adminUrl!).host;
      const script = withoutBuild(code)
        .replaceAll('127.0.0.1:7070', server.target)
        .replaceAll('127.0.0.1:7071', admin);
      const outcome = await runBash(
        script,
        docShellEnv(prefix, {
          COHORT_ADDRESS: server.target,
          COHORT_LISTEN: server.target,
          COHORT_ADMIN_LISTEN: admin,
          // A block that starts a server must not take the Kafka port of whatever else runs.
          COHORT_KAFKA_LISTEN: '127.0.0.1:0',
        }),
      );
      expect({ code: outcome.code, output: outcome.output }).toEqual({ code: 0, output: expect.any(String) });
      // What the comments promise shows up: a consume prints its records, a probe its verdict.
      if (/cohort consume .*--max-messages 2/.test(code))
        expect(outcome.output.match(/order [12]$/gm)?.sort()).toEqual(['order 1', 'order 2']);
      if (/health-probe/.test(code)) expect(outcome.output).toMatch(/SERVING[\s\S]*200 ready/);
    },
    120_000,
  );
});
