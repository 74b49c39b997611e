import { execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { runNode, type NodeRun } from '../support/run-node';

const REPO_ROOT = join(__dirname, '..', '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** npm pack builds the package (tsc), npm install fetches its dependencies (from npm's cache when it can). */
const SETUP_TIMEOUT_MS = 300_000;

const run = promisify(execFile);

function versionOf(name: string): string {
  return (
    JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
}

function node(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<NodeRun> {
  return runNode(args, { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
}

/**
 * What a newcomer does with cohort in a TypeScript project of their own: `npm pack` (which builds the
 * package through its `prepare` script), install the tarball into a fresh project, compile the README's
 * example there under `strict`, and run it against a real server. Two projects: CommonJS with
 * `module: commonjs` (resolution through `main` and `types`), which also type-checks cohort's declarations
 * themselves (`skipLibCheck: false`); and an ES module configured by `tsc --init` (`module: nodenext`,
 * resolution through `exports` as `node16` resolves too; it imports the CommonJS package's named exports).
 * Each compile costs seconds.
 */
describe('the packed package, in a fresh TypeScript project', () => {
  let work: string;
  let t: TestServer | undefined;
  // `tsconfig: 'tsc --init'`: the configuration `tsc --init` writes, as it is (module nodenext, strict,
  // verbatimModuleSyntax, exactOptionalPropertyTypes, noUncheckedIndexedAccess, ...).
  const projects = {
    commonjs: {
      type: 'commonjs',
      tsconfig: {
        compilerOptions: {
          strict: true,
          module: 'commonjs',
          target: 'ES2022',
          types: ['node'],
          skipLibCheck: false,
          outDir: 'out',
        },
        files: ['main.ts'],
      },
      output: 'out/main.js',
    },
    nodenext: { type: 'module', tsconfig: 'tsc --init', output: 'main.js' },
  } as const;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'cohort-package-'));
    await run(NPM, ['pack', '--silent', '--pack-destination', work], { cwd: REPO_ROOT });
    const [tarball] = readdirSync(work).filter((name) => name.endsWith('.tgz'));
    writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'fresh', private: true }));
    await run(
      NPM,
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        join(work, tarball),
        `typescript@${versionOf('typescript')}`,
        `@types/node@${versionOf('@types/node')}`,
      ],
      { cwd: work },
    );
    const tsc = join(work, 'node_modules', 'typescript', 'bin', 'tsc');
    await Promise.all(
      Object.entries(projects).map(async ([name, project]) => {
        const dir = join(work, name);
        mkdirSync(dir);
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: project.type }));
        copyFileSync(join(REPO_ROOT, 'examples', 'sdk-in-ten-lines.ts'), join(dir, 'main.ts'));
        if (project.tsconfig === 'tsc --init') {
          const init = await node([tsc, '--init'], dir);
          if (init.code !== 0) throw new Error(`tsc --init failed:\n${init.stdout}${init.stderr}`);
        } else writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(project.tsconfig));
        const compiled = await node([tsc, '-p', 'tsconfig.json'], dir);
        if (compiled.code !== 0)
          throw new Error(`tsc (${name}) failed:\n${compiled.stdout}${compiled.stderr}`);
      }),
    );
  }, SETUP_TIMEOUT_MS);

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it.each(Object.keys(projects))(
    'compiles and runs the README example in a %s project',
    async (name) => {
      // The server's defaults, as `npm start` has them: the group forms after its 3 s initial rebalance delay.
      t = await startTestServer();
      const env = { COHORT_ADDRESS: t.target };
      const dir = join(work, name);
      expect(await node([projects[name as keyof typeof projects].output], dir, env)).toEqual({
        code: 0,
        stdout: 'partition 1, offset 0: order 1\n',
        stderr: '',
      });
    },
    60_000,
  );

  it('ships the admin page: the installed server serves it, uPlot included', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cohort-package-data-'));
    const server = spawn(
      process.execPath,
      [
        join(work, 'node_modules', 'cohort', 'dist', 'src', 'main.js'),
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        '127.0.0.1:0',
        '--kafka-listen',
        '127.0.0.1:0',
        '--data-dir',
        dataDir,
      ],
      { cwd: work, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const adminAddress = await new Promise<string>((resolve, reject) => {
        server.once('exit', (code) => reject(new Error(`the packed server exited (${code})`)));
        createInterface({ input: server.stdout! }).on('line', (line) => {
          const parsed = JSON.parse(line) as { msg?: string; adminAddress?: string };
          if (parsed.msg === 'cohort listening' && parsed.adminAddress !== undefined)
            resolve(parsed.adminAddress);
        });
      });
      const page = await fetch(`http://${adminAddress}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<script src="/assets/page.js">');
      for (const asset of ['page.js', 'page.css', 'uPlot.iife.min.js', 'uPlot.min.css']) {
        const response = await fetch(`http://${adminAddress}/assets/${asset}`);
        expect([asset, response.status]).toEqual([asset, 200]);
        expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1_000);
      }
    } finally {
      server.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('exports only its entry point: internals cannot be imported', async () => {
    const deep = await node(['-e', "require('cohort/dist/src/client/retrying-caller')"], work);
    expect(deep.code).not.toBe(0);
    expect(deep.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
    const entry = await node(['-e', "console.log(typeof require('cohort').CohortClient)"], work);
    expect(entry.stdout).toBe('function\n');
  });
});
