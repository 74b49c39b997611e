import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ServerMetrics } from '../../../../src/server/metrics/server-metrics';
import { ManualTime } from '../../../../src/time';

const DOC_PATH = join(__dirname, '../../../../docs/operations.md');

/** The metric names of the table in docs/operations.md (first cell of rows that start with a backtick). */
function documentedMetrics(markdown: string): string[] {
  return markdown
    .split('\n')
    .filter((line) => /^\| `[a-z0-9_]+` +\| (gauge|counter|histogram) /.test(line))
    .map((line) => line.split('|')[1].trim().replace(/`/g, ''));
}

describe('docs/operations.md', () => {
  const markdown = readFileSync(DOC_PATH, 'utf8');
  const metrics = new ServerMetrics({ time: new ManualTime() });
  const registered = metrics.registry.getMetricsAsArray().map((metric) => metric.name);

  it('lists every metric a server registers, each once, and no other', () => {
    const documented = documentedMetrics(markdown);
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...registered].sort());
  });

  it('gives each documented metric the type the registry exposes', () => {
    for (const metric of metrics.registry.getMetricsAsArray()) {
      const row = markdown.split('\n').find((line) => line.startsWith(`| \`${metric.name}\``));
      expect(row?.split('|')[2].trim()).toBe(String(metric.type));
    }
  });
});
