import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_SETTINGS } from '../../../src/config';

const DOC_PATH = join(__dirname, '../../../docs/configuration.md');

/** The rows of the settings table: cells with the backticks stripped. */
function settingsRows(markdown: string): string[][] {
  return markdown
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim().replace(/^`|`$/g, '')),
    );
}

describe('docs/configuration.md', () => {
  const markdown = readFileSync(DOC_PATH, 'utf8');
  const rows = settingsRows(markdown);

  it('has exactly one table row per setting, in schema order', () => {
    expect(rows.map((row) => row[0])).toEqual(CONFIG_SETTINGS.map((spec) => spec.key));
  });

  it.each(CONFIG_SETTINGS.map((spec) => [spec.key, spec] as const))(
    'documents the flag, environment variable, default and bounds of %s as the schema has them',
    (_key, spec) => {
      const row = rows.find((r) => r[0] === spec.key);
      // An environment-only setting (a secret) has no flag; its row says so with a dash.
      const flag = spec.isEnvOnly === true ? '—' : spec.flag;
      expect(row?.slice(1, 4)).toEqual([flag, spec.env, String(spec.defaultValue)]);
      if (spec.kind === 'integer') expect(row?.[4]).toMatch(new RegExp(`^${spec.min}–${spec.max}\\b`));
      expect(markdown).toContain(`### \`${spec.key}\``);
      if (spec.kafkaName !== undefined) expect(markdown).toContain(`\`${spec.kafkaName}\``);
    },
  );
});
