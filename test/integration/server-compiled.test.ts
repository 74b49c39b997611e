import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { groupCoordinatorClient } from '../support/grpc-clients';
import type { CohortProcess } from '../support/spawn-cohort';
import { spawnCohort } from '../support/spawn-cohort';
import { runNode, type NodeRun } from '../support/run-node';

const REPO_ROOT = join(__dirname, '..', '..');
const COMPILE_TIMEOUT_MS = 180_000;

/**
 * What the Docker image runs, run here: `tsc` compiles src/ as `npm run build` does (into a throwaway
 * directory under dist/, so proto/ and node_modules/ resolve from it as they do from dist/src), then the
 * compiled server is started with plain node and probed with the compiled health probe.
 */
describe('the compiled server and health probe (what the Docker image runs)', () => {
  let outDir: string;
  let cohort: CohortProcess | undefined;

  beforeAll(() => {
    const distDir = join(REPO_ROOT, 'dist');
    mkdirSync(distDir, { recursive: true });
    outDir = mkdtempSync(join(distDir, 'test-build-'));
    const tsconfig = join(outDir, 'tsconfig.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: join(REPO_ROOT, 'tsconfig.json'),
        compilerOptions: { outDir, rootDir: REPO_ROOT, sourceMap: false, types: ['node'] },
        include: [join(REPO_ROOT, 'src')],
      }),
    );
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', tsconfig], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    if (tsc.status !== 0) throw new Error(`tsc failed:\n${tsc.stdout}${tsc.stderr}`);
  }, COMPILE_TIMEOUT_MS);

  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  afterEach(async () => {
    await cohort?.kill();
    cohort = undefined;
  });

  function probe(args: readonly string[], env: Record<string, string> = {}): Promise<NodeRun> {
    return runNode([join(outDir, 'src', 'health-probe.js'), ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
  }

  /** The server at `address` answers a real GroupCoordinator call: no groups yet. */
  async function expectServesNoGroups(address: string): Promise<void> {
    const client = groupCoordinatorClient(address);
    try {
      expect(await client.listGroups({})).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
    } finally {
      client.close();
    }
  }

  it('serves from dist/ with the contract found there, answers the probe SERVING, and exits 0 on SIGTERM', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0'], {}, { script: join(outDir, 'src', 'main.js') });
    const { address, port } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    await expectServesNoGroups(address as string);

    expect(await probe(['--address', address as string])).toEqual({
      code: 0,
      stdout: `${String(address)}: SERVING\n`,
      stderr: '',
    });
    // Without --address the probe reaches where COHORT_LISTEN says, a wildcard host on loopback.
    expect((await probe([], { COHORT_LISTEN: `0.0.0.0:${String(port)}` })).code).toBe(0);
    const unknown = await probe(['--address', address as string, '--service', 'cohort.v1.TestClock']);
    expect(unknown).toMatchObject({ code: 1, stdout: `${String(address)}: SERVICE_UNKNOWN\n` });

    cohort.child.kill('SIGTERM');
    expect(await cohort.exited).toEqual({ code: 0, signal: null });
    const gone = await probe(['--address', address as string, '--timeout-ms', '2000']);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toContain('UNREACHABLE');
  });

  it('runs the compiled server through the compiled CLI (cohort serve), which passes SIGTERM on', async () => {
    cohort = spawnCohort(
      ['serve', '--listen', '127.0.0.1:0'],
      {},
      { script: join(outDir, 'src', 'cli', 'main.js') },
    );
    const { address } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    await expectServesNoGroups(address as string);
    cohort.child.kill('SIGTERM');
    expect(await cohort.exited).toEqual({ code: 0, signal: null });
    expect(cohort.stderr()).toBe('');
  });

  it('exits 2 for arguments it does not understand', async () => {
    const result = await probe(['--adress', '127.0.0.1:1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown argument --adress');
  });

  it('exits 2 from the compiled server for a bad configuration', async () => {
    cohort = spawnCohort(['--listen', 'nowhere'], {}, { script: join(outDir, 'src', 'main.js') });
    expect(await cohort.exited).toEqual({ code: 2, signal: null });
    expect(cohort.stderr()).toContain("--listen ('nowhere') must be HOST:PORT");
  });
});
