import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LeaderLinkStatus } from '../../log';

/** What the follower metrics read on scrape: the leader it copies from and how that goes. */
export interface FollowerSource {
  /** `HOST:PORT` of the leader (`--replica-of`). */
  readonly leader: string;
  readonly leaderStatus: LeaderLinkStatus;
}

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
 * What identifies this process and its place in a replicated cluster:
 *
 * - `cohort_build_info{version, node_id}` is 1, as Prometheus exporters publish their build (join it on
 *   `node_id` to tell which version each node of a cluster runs);
 * - on a follower, `cohort_follower_leader_reachable{leader}` (1 while the leader answers, 0 from a failed
 *   round until it answers again) and `cohort_follower_fetch_failures_total{leader}`. A leader exports
 *   neither series.
 */
export function registerNodeMetrics(
  registry: Registry,
  nodeId: number,
  follower: () => FollowerSource | undefined,
): void {
  const registers = [registry];
  new Gauge({
    name: 'cohort_build_info',
    help: 'Always 1; the labels say which cohort this is: version (package.json) and node_id (--node-id).',
    labelNames: ['version', 'node_id'],
    registers,
  }).set({ version: cohortVersion(), node_id: String(nodeId) }, 1);
  new Gauge({
    name: 'cohort_follower_leader_reachable',
    help: 'On a follower: 1 while its leader answers, 0 from a failed fetch round until it answers again.',
    labelNames: ['leader'],
    registers,
    collect() {
      this.reset();
      const source = follower();
      if (source !== undefined)
        this.set({ leader: source.leader }, source.leaderStatus.isReplicating ? 1 : 0);
    },
  });
  new Counter({
    name: 'cohort_follower_fetch_failures_total',
    help: 'On a follower: replication rounds that failed (leader unreachable, or the fetch refused).',
    labelNames: ['leader'],
    registers,
    collect() {
      this.reset();
      const source = follower();
      if (source !== undefined) this.inc({ leader: source.leader }, source.leaderStatus.failedRoundsTotal);
    },
  });
}
