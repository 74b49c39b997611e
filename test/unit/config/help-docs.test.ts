import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_SETTINGS, helpText } from '../../../src/config';

/**
 * `cohort --help` (what `npm start -- --help` prints) read as a user reads it, against docs/configuration.md:
 * the settings table and each setting's own section. configuration-docs.test.ts keeps the table in step with
 * the schema; this test reads the printed help instead, so that a flag the help shows and the doc lacks (or
 * the reverse), a default that differs, or a help text that names a flag or an HTTP path its section never
 * mentions fails the tests. What a sentence claims cannot be compared mechanically; the names in it can.
 */
const DOC = readFileSync(join(__dirname, '../../../docs/configuration.md'), 'utf8');

interface HelpEntry {
  readonly flag: string | null;
  readonly env: string;
  readonly defaultShown: string;
  readonly description: string;
}

/** The settings of the help text, each from its usage line to the next. */
function helpEntries(text: string): HelpEntry[] {
  const entries: HelpEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const usage = /^ {2}(--[a-z0-9-]+)|^ {2}(COHORT_[A-Z0-9_]+)=/.exec(lines[i]);
    if (usage === null) continue;
    const detail =
      /^ {6}(?:env (COHORT_[A-Z0-9_]+), default (.*)|environment only \(no flag\), default (.*))$/.exec(
        lines[i + 1] ?? '',
      );
    if (detail === null) throw new Error(`no env/default line after ${lines[i]}`);
    const description: string[] = [];
    for (let j = i + 2; j < lines.length && lines[j].startsWith('      '); j++)
      description.push(lines[j].trim());
    entries.push({
      flag: usage[1] ?? null,
      env: detail[1] ?? usage[2],
      defaultShown: detail[2] ?? detail[3],
      description: description.join(' '),
    });
  }
  return entries;
}

/** The settings table: flag, environment variable and default of each row, backticks stripped. */
function tableRows(markdown: string): { key: string; flag: string; env: string; defaultValue: string }[] {
  return markdown
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [key, flag, env, defaultValue] = line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim().replace(/^`|`$/g, ''));
      return { key, flag, env, defaultValue };
    });
}

/** The text of `### \`key\`` up to the next heading. */
function section(key: string): string {
  const at = DOC.indexOf(`### \`${key}\``);
  if (at < 0) return '';
  const end = DOC.slice(at + 1).search(/\n#{1,3} /);
  return end < 0 ? DOC.slice(at) : DOC.slice(at, at + 1 + end);
}

/**
 * The HTTP paths a text names: `/healthz`, `/api/stream`, and `/` when written as the live page's (`(/)`,
 * `` `/` ``); not the parts of a URL, a file path or a fraction.
 */
function httpPaths(text: string): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(/(?<=^|[\s(`])(\/[a-z-]+(?:\/[a-z-]+)*|\/)(?=[\s),.`:;]|$)/g)) {
    const path = m[1];
    if (path === '/' && !/\(`?\/`?[),]|`\/`/.test(text.slice(Math.max(0, m.index - 2), m.index + 3)))
      continue;
    found.add(path);
  }
  return found;
}

const help = helpEntries(helpText());
const rows = tableRows(DOC);
const keyOfFlag = new Map(CONFIG_SETTINGS.filter((s) => s.isEnvOnly !== true).map((s) => [s.flag, s.key]));
const keyOfEnv = new Map(CONFIG_SETTINGS.map((s) => [s.env, s.key]));

describe('cohort --help against docs/configuration.md', () => {
  it('shows every setting of the table, and the table has every setting it shows', () => {
    expect(help.map((e) => e.env).sort()).toEqual(rows.map((r) => r.env).sort());
    expect(help.flatMap((e) => (e.flag === null ? [] : [e.flag])).sort()).toEqual(
      rows.flatMap((r) => (r.flag === '—' ? [] : [r.flag])).sort(),
    );
  });

  it.each(help.map((entry) => [entry.flag ?? entry.env, entry] as const))(
    'gives %s the environment variable and default of its row',
    (_name, entry) => {
      const row = rows.find((r) => r.env === entry.env);
      expect(row).toBeDefined();
      expect({ flag: entry.flag ?? '—', defaultValue: entry.defaultShown }).toEqual({
        flag: row!.flag,
        defaultValue: row!.defaultValue === '' ? 'none' : row!.defaultValue,
      });
    },
  );

  it.each(help.map((entry) => [entry.flag ?? entry.env, entry] as const))(
    "names in %s's help only flags and HTTP paths that its section of the doc names too",
    (_name, entry) => {
      const key = keyOfEnv.get(entry.env)!;
      const text = section(key);
      expect(text).not.toBe('');
      // Another setting, named by its flag in the help, is named by its flag or its key in the doc.
      const flags = [...entry.description.matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]);
      const missingFlags = flags.filter((flag) => {
        const other = keyOfFlag.get(flag);
        if (other === undefined) return !text.includes(flag); // not cohort's: the doc must name it as is
        return !text.includes(flag) && !text.includes(`\`${other}\``);
      });
      // An HTTP path served (`/metrics`, `/`): the doc must say so as well.
      const missingPaths = [...httpPaths(entry.description)].filter((path) => !httpPaths(text).has(path));
      expect({ missingFlags, missingPaths }).toEqual({ missingFlags: [], missingPaths: [] });
    },
  );

  it.each(help.map((entry) => [entry.flag ?? entry.env, entry] as const))(
    "names in %s's help, if it serves HTTP, every HTTP path its section of the doc names",
    (_name, entry) => {
      // A listener's help that lists fewer paths than it serves (the admin listener's once said
      // "/healthz, /readyz and /metrics" after it had come to serve the live page) fails here.
      const described = httpPaths(entry.description);
      if (described.size === 0) return; // not an HTTP listener: a path in its section is context
      const missing = [...httpPaths(section(keyOfEnv.get(entry.env)!))].filter(
        (path) => !described.has(path),
      );
      expect(missing).toEqual([]);
    },
  );
});
