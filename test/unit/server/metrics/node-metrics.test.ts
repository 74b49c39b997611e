import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cohortVersion, UNKNOWN_VERSION } from '../../../../src/server/metrics/node-metrics';
import { ServerMetrics } from '../../../../src/server/metrics/server-metrics';
import { ManualTime } from '../../../../src/time';
import { samplesOf, valueOf } from './metrics-reader';
import packageJson from '../../../../package.json';

describe('node metrics', () => {
  it('publishes cohort_build_info with the package version and the node id', async () => {
    const metrics = new ServerMetrics({ time: new ManualTime(), nodeId: 3 });
    const samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_build_info', { version: packageJson.version, node_id: 3 })).toBe(1);
    expect(samples.filter((s) => s.name === 'cohort_build_info')).toHaveLength(1);
  });

  it('finds the version of the package named cohort walking up, and says unknown without one', () => {
    const root = mkdtempSync(join(tmpdir(), 'cohort-version-'));
    try {
      const nested = join(root, 'app', 'dist', 'src', 'server', 'metrics');
      mkdirSync(nested, { recursive: true });
      writeFileSync(join(root, 'app', 'package.json'), JSON.stringify({ name: 'cohort', version: '9.8.7' }));
      // Another package's manifest on the way is not cohort's.
      writeFileSync(
        join(root, 'app', 'dist', 'package.json'),
        JSON.stringify({ name: 'other', version: '1' }),
      );
      expect(cohortVersion(nested)).toBe('9.8.7');
      expect(cohortVersion(join(root))).toBe(UNKNOWN_VERSION);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
