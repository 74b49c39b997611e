import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(__dirname, '..', '..');

/** The code blocks of these languages must be examples/ files (or regions of them) or say why not. */
const RUNNABLE_LANGUAGES = new Set(['ts', 'typescript', 'js', 'javascript', 'py', 'python']);

/** `<!-- example: examples/x.ts -->` or `<!-- example: examples/x.ts#region -->` right above a block. */
const EXAMPLE_MARKER = /^<!-- example: ([^\s#]+)(?:#([\w-]+))? -->$/;
/** `<!-- not an example: why -->`: a block that is deliberately not run (a patch, say). */
const EXEMPT_MARKER = /^<!-- not an example: .+ -->$/;

export interface DocBlock {
  /** `docs/sdk.md:120`, the fence's line. */
  readonly where: string;
  readonly language: string;
  readonly code: string;
  /** What the marker above it names; undefined when exempt; null when there is no marker. */
  readonly example: { readonly file: string; readonly region: string | undefined } | undefined | null;
}

/** README.md and every docs/*.md. */
export function docFiles(): string[] {
  const docs = readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs.sort()];
}

/** Every fenced block of a runnable language in `doc`, with the marker above it. */
export function runnableBlocks(doc: string): DocBlock[] {
  const lines = readFileSync(join(REPO_ROOT, doc), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})(\S*)/.exec(lines[i]);
    if (fence === null) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== fence[1]) end++;
    if (RUNNABLE_LANGUAGES.has(fence[2])) {
      let above = i - 1;
      while (above >= 0 && lines[above].trim() === '') above--;
      const marker = above >= 0 ? lines[above] : '';
      const example = EXAMPLE_MARKER.exec(marker);
      blocks.push({
        where: `${doc}:${i + 1}`,
        language: fence[2],
        code: lines.slice(i + 1, end).join('\n') + '\n',
        example:
          example !== null
            ? { file: example[1], region: example[2] }
            : EXEMPT_MARKER.test(marker)
              ? undefined
              : null,
      });
    }
    i = end;
  }
  return blocks;
}

/**
 * The text of an example file, or of one region of it: the lines between `// #region NAME` and
 * `// #endregion NAME` (`# region NAME` / `# endregion NAME` in Python), less their common indentation.
 */
export function exampleText(file: string, region?: string): string {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  if (region === undefined) return text;
  const lines = text.split('\n');
  const marker = (word: string) => new RegExp(`^\\s*(//|#) ?#?${word} ${region}\\s*$`);
  const start = lines.findIndex((line) => marker('region').test(line));
  const end = lines.findIndex((line, i) => i > start && marker('endregion').test(line));
  if (start < 0 || end < 0) throw new Error(`${file} has no region ${region}`);
  const body = lines.slice(start + 1, end);
  const indent = Math.min(...body.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length));
  return body.map((line) => line.slice(indent)).join('\n') + '\n';
}

/** `<!-- not run: why -->` right above a ```sh block: the tests do not execute it, and say why here. */
const NOT_RUN_MARKER = /^<!-- not run: (.+) -->$/;

/**
 * `<!-- run by test/x.test.ts: step -->` right above a ```sh block: that test runs it, as step `step` of
 * a story the docs tell over several blocks (a walk-through whose commands need what earlier ones started).
 */
const RUN_BY_MARKER = /^<!-- run by (\S+\.test\.ts): ([\w-]+) -->$/;

/** A ```sh block of a doc. */
export interface ShellBlock {
  readonly where: string;
  readonly code: string;
  /** Why the tests do not run it (its `<!-- not run: ... -->` marker), or undefined: they run it. */
  readonly notRun: string | undefined;
  /** The test that runs it as one step of a walk-through (its `<!-- run by ... -->` marker), if any. */
  readonly runBy: { readonly test: string; readonly step: string } | undefined;
}

/** The text of every ```sh block in `doc`, with where it starts and whether the tests run it. */
export function shellBlocks(doc: string): ShellBlock[] {
  const lines = readFileSync(join(REPO_ROOT, doc), 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})(\S*)/.exec(lines[i]);
    if (fence === null) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== fence[1]) end++;
    if (fence[2] === 'sh') {
      let above = i - 1;
      while (above >= 0 && lines[above].trim() === '') above--;
      const notRun = above >= 0 ? NOT_RUN_MARKER.exec(lines[above]) : null;
      const runBy = above >= 0 ? RUN_BY_MARKER.exec(lines[above]) : null;
      blocks.push({
        where: `${doc}:${i + 1}`,
        code: lines.slice(i + 1, end).join('\n'),
        notRun: notRun?.[1],
        runBy: runBy === null ? undefined : { test: runBy[1], step: runBy[2] },
      });
    }
    i = end;
  }
  return blocks;
}
