import { randomBytes } from 'node:crypto';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { liveChildProcesses } from '../support/child-processes';
import { CohortCluster } from '../support/cohort-cluster';
import type { LogLine } from '../support/capture-logger';
import { spawnCohort, type CohortProcess } from '../support/spawn-cohort';

/**
 * A data directory knows whose it is (docs/operations.md, "Cluster identity"): a node started on a copy
 * of another cluster's directory, on a single server's, or a single server on a cluster node's, refuses
 * to start and says why, instead of serving the other history's records.
 */
jest.setTimeout(120_000);

const uuidOf = (dataDir: string): string =>
  /cluster\.uuid=(.+)/.exec(readFileSync(join(dataDir, 'meta.properties'), 'utf8'))![1]!;

async function exitOf(process: CohortProcess): Promise<{ code: number | null; fatal: string }> {
  const { code } = await process.exited;
  const fatal = process.lines
    .filter((line): line is LogLine => typeof line !== 'string' && line.level >= 50)
    .map((line) => `${line.msg} ${JSON.stringify(line.err ?? '')}`)
    .join('\n');
  return { code, fatal };
}

describe('a node on a data directory that is not its own', () => {
  const name = `identity-${randomBytes(3).toString('hex')}`;
  let a: CohortCluster | undefined;
  let b: CohortCluster | undefined;
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    expect(liveChildProcesses()).toEqual([]);
  });

  it("refuses to start on a copy of another cluster's directory, naming both clusters' uuids", async () => {
    // Two clusters of the same name on two etcds, each with a topic written at leader epoch 0.
    [a, b] = await Promise.all([
      CohortCluster.start({ nodeCount: 1, minInsyncReplicas: 1, clusterId: name }),
      CohortCluster.start({ nodeCount: 1, minInsyncReplicas: 1, clusterId: name }),
    ]);
    await Promise.all([a.createTopic('orders', 1, 1), b.createTopic('orders', 1, 1)]);
    const aDir = a.node(1).dataDir;
    const bDir = b.node(1).dataDir;
    const [aUuid, bUuid] = [uuidOf(aDir), uuidOf(bDir)];
    expect(aUuid).not.toBe(bUuid);

    // B's node, stopped cleanly, gets a copy of A's directory (without its lock) and is started again.
    await b.stopNode(1);
    rmSync(bDir, { recursive: true, force: true });
    cpSync(aDir, bDir, { recursive: true, filter: (source) => !source.endsWith('.lock') });
    const { code, fatal } = await exitOf(b.spawnNode(1));
    expect(code).toBe(1);
    expect(fatal).toContain(`cluster ${name} is cluster.uuid ${bUuid}`);
    expect(fatal).toContain(`data belongs to cluster.uuid ${aUuid}`);
  });

  it("refuses another cluster name's, another node id's, and the other mode's directory before it binds", async () => {
    const dataDir = a!.node(1).dataDir;
    const copy = `${dataDir}-copy`;
    cpSync(dataDir, copy, { recursive: true, filter: (source) => !source.endsWith('.lock') });
    const etcd = a!.etcd!.endpoints.join(',');
    const start = (args: string[]): CohortProcess =>
      spawnCohort(['--listen', '127.0.0.1:0', '--data-dir', copy, ...args], {
        COHORT_CLUSTER_SECRET: randomBytes(32).toString('hex'),
      });
    const cases: [string[], RegExp][] = [
      [
        ['--etcd-endpoints', etcd, '--cluster-id', 'another', '--node-id', '1'],
        /belongs to cluster identity-/,
      ],
      [['--etcd-endpoints', etcd, '--cluster-id', name, '--node-id', '2'], /belongs to node 1/],
      [['--node-id', '1'], /holds a cluster node's data, not a single server's/],
    ];
    try {
      for (const [args, reason] of cases) {
        const { code, fatal } = await exitOf(start(args));
        expect(code).toBe(1);
        expect(fatal).toMatch(reason);
        expect(fatal).toContain('cohort could not start');
      }
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
