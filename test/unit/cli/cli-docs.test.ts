import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import packageJson from '../../../package.json';

const REPO_ROOT = join(__dirname, '..', '..', '..');
const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** The first ```sh block after `heading` (or from the start), as lines. */
function firstShellBlock(markdown: string, heading?: string): string[] {
  const from = heading === undefined ? 0 : markdown.indexOf(heading);
  expect(from).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(markdown.slice(from));
  return (block?.[1] ?? '').split('\n').filter((line) => line.trim() !== '');
}

/**
 * The documented way to run the CLI is its build, the package's bin: `npm run cli` transpiles the sources
 * on every call, which costs seconds a command.
 */
describe('how the docs run the CLI', () => {
  it('is the package bin, built from src/cli/main.ts, a script node runs directly', () => {
    expect(packageJson.bin).toEqual({ cohort: 'dist/src/cli/main.js' });
    expect(read('src/cli/main.ts').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it.each([
    ['docs/cli.md', undefined],
    ['README.md', '## The CLI'],
  ])('%s builds and links the bin first, then runs cohort, not npm run cli', (path, heading) => {
    const lines = firstShellBlock(read(path), heading);
    expect(lines[0]).toMatch(/^npm run build && npm link\b/);
    const commands = lines.slice(1);
    expect(commands.length).toBeGreaterThan(0);
    for (const line of commands) expect(line).toMatch(/^(\S.*\| )?cohort /);
  });
});
