import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { docFiles, exampleText, REPO_ROOT, runnableBlocks, shellBlocks } from '../../support/doc-examples';

/**
 * Every TypeScript, JavaScript and Python block in README.md and docs/ is an example that the tests run:
 * a file under examples/ (or a `#region` of one), shown verbatim. test/integration/examples.test.ts runs the
 * programs, jest runs examples/*.test.ts, test/integration/python-member.test.ts the Python member. A
 * block that cannot run (a patch, say) says why in a `<!-- not an example: ... -->` comment above it.
 */
describe('the code in the docs', () => {
  const blocks = docFiles().flatMap(runnableBlocks);

  it('finds the docs and their code blocks', () => {
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('is all examples, or says why a block is not', () => {
    const unmarked = blocks.filter((b) => b.example === null).map((b) => b.where);
    expect(unmarked).toEqual([]);
  });

  it.each(blocks.filter((b) => b.example).map((b) => [b.where, b] as const))(
    '%s shows its example exactly',
    (_where, block) => {
      const { file, region } = block.example ?? { file: '', region: undefined };
      expect(block.code).toBe(exampleText(file, region));
    },
  );

  // test/integration/doc-shell-commands.test.ts runs the shell blocks; those it does not run (they start
  // servers, build images, call grpcurl) must still name only scripts and files that exist.
  const scripts = Object.keys(
    (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts,
  );
  const shell = docFiles().flatMap(shellBlocks);

  it('runs only npm scripts that package.json has, in its shell commands', () => {
    const unknown = shell.flatMap(({ where, code }) =>
      [...code.matchAll(/npm run ([\w:-]+)/g)]
        .filter(([, name]) => !scripts.includes(name))
        .map(([run]) => `${where}: ${run}`),
    );
    expect(shell.length).toBeGreaterThan(10);
    expect(unknown).toEqual([]);
  });

  it('names only files of this repository that exist, in its shell commands', () => {
    const missing = shell.flatMap(({ where, code }) => {
      const made = [...code.matchAll(/mkdir -p (\S+)/g)].map(([, dir]) => dir); // made by the block itself
      return [...code.matchAll(/(?<![\w/.-])((?:examples|scripts|proto|src|dist\/src)\/[\w./-]*\w)/g)]
        .map(([, path]) => path)
        .filter((path) => !path.startsWith('dist/') && !made.some((dir) => path.startsWith(dir)))
        .filter((path) => !existsSync(join(REPO_ROOT, path)))
        .map((path) => `${where}: ${path}`);
    });
    expect(missing).toEqual([]);
  });
});
