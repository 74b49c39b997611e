import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Gauge, type Registry } from 'prom-client';

/** The value of the `version` label when no package.json of cohort is found above this file. */
export const UNKNOWN_VERSION = 'unknown';

/**
 * cohort's version: the `version` of the first package.json named `cohort` found walking up from `from`
 * (src/server/metrics from source, dist/src/server/metrics once built, /app in the image).
 */
export function cohortVersion(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      try {
        const manifest = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown; version?: unknown };
        if (manifest.name === 'cohort' && typeof manifest.version === 'string') return manifest.version;
      } catch {
        // Not JSON: not ours; keep walking.
      }
    }
    if (dirname(dir) === dir) return UNKNOWN_VERSION;
  }
}

/**
 * What identifies this process: `cohort_build_info{version, node_id}` is 1, as Prometheus exporters
 * publish their build (join it on `node_id` to tell which version each node of a cluster runs).
 */
export function registerNodeMetrics(registry: Registry, nodeId: number): void {
  new Gauge({
    name: 'cohort_build_info',
    help: 'Always 1; the labels say which cohort this is: version (package.json) and node_id (--node-id).',
    labelNames: ['version', 'node_id'],
    registers: [registry],
  }).set({ version: cohortVersion(), node_id: String(nodeId) }, 1);
}
