import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { liveChildProcesses } from '../support/child-processes';
import { ClusterConsumer, ClusterProducer, monotonicMs } from '../support/cluster-clients';
import { CohortCluster, waitFor } from '../support/cohort-cluster';
import { LogHistory } from '../support/log-history';
import { checkLogHistory, describeVerdict, failedChecks } from '../support/log-history-checker';

/**
 * etcd loses its data under a running cluster (docs/operations.md, "When etcd loses the cluster's
 * metadata"): three cohort nodes and etcd as real processes, two acks=-1 producers and a consumer on a
 * topic of three replicas, a group's coordinator found; then etcd is killed, its data directory wiped and
 * it is started again, empty. The nodes must not build a new cluster over their data: they stay
 * unready saying why, keep the topic in Metadata and acknowledge nothing. A node restarted meanwhile
 * waits the same way. The documented path then runs: `POST /recover-metadata?nodes=1,2,3` on one node's
 * admin listener rebuilds the metadata from the nodes' logs, writes resume, the replicas rejoin the ISR,
 * the group has a coordinator again. The recorded history of every produce, fetch and Metadata answer,
 * with every replica's final log, goes to the checker: nothing acknowledged lost.
 */
const SESSION_TIMEOUT_MS = 4_000;
const ALL_NODES = [1, 2, 3];

let cluster: CohortCluster | undefined;
beforeAll(async () => {
  cluster = await CohortCluster.start({
    nodeCount: 3,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    minInsyncReplicas: 2,
  });
}, 300_000);
afterAll(async () => {
  await cluster?.stop();
  expect(liveChildProcesses().filter((c) => /src\/main\.ts|etcd/.test(c.command))).toEqual([]);
}, 60_000);

it('waits unready while etcd has lost the metadata, recovers it from the nodes, and loses no acknowledged write', async () => {
  const c = cluster!;
  const ref = { topic: 'etcd-loss', partition: 0 };
  const group = `etcd-loss-${randomBytes(3).toString('hex')}`;
  const history = new LogHistory(monotonicMs);
  await c.createTopic(ref.topic, 1, 3);
  await c.awaitIsr(ref, ALL_NODES);
  await c.coordinatorOf(group);
  const options = { partition: ref, nodeTargets: c.nodeTargets, history, callDeadlineMs: 3_000 };
  const producers = [1, 2].map((n) => new ClusterProducer({ ...options, name: `producer-${n}` }).start());
  const consumer = new ClusterConsumer({ ...options, name: 'consumer' }).start();
  const acks = (): number => producers.reduce((sum, p) => sum + p.ackCount, 0);
  const moreAcks = async (count: number, what: string, timeoutMs = 30_000): Promise<void> => {
    const target = acks() + count;
    await waitFor(`${count} more acknowledged writes ${what}`, timeoutMs, () =>
      acks() >= target ? true : undefined,
    );
  };
  const topicIdOn = (nodeId: number): string =>
    /topic_id: (\S+)/.exec(
      readFileSync(join(c.node(nodeId).dataDir, 'etcd-loss-0', 'partition.metadata'), 'utf8'),
    )![1]!;
  try {
    await moreAcks(10, 'before a restart');
    // A restart moves leader epochs up with no write after them on idle partitions (__consumer_offsets):
    // the nodes that keep running know epochs above their logs' last batches.
    await c.restart(2);
    await c.awaitIsr(ref, ALL_NODES, 60_000);
    await moreAcks(10, 'before etcd loses its data');
    const topicId = topicIdOn(1);

    const wipedAtMs = monotonicMs();
    await c.etcd!.wipe();
    const lostReason = async (nodeId: number): Promise<string | undefined> => {
      const { status, body } = await c.admin(nodeId, '/readyz').catch(() => ({ status: 0, body: '' }));
      return status === 503 && /etcd has lost cluster .*'s metadata/.test(body) ? body : undefined;
    };
    for (const nodeId of ALL_NODES) {
      await waitFor(`node ${nodeId} to say etcd lost the metadata`, 30_000, () => lostReason(nodeId));
    }
    // A node restarted meanwhile waits the same way (and reports its logs, opened only for that).
    await c.kill(3);
    c.spawnNode(3);
    await waitFor('the restarted node 3 to say etcd lost the metadata', 60_000, () => lostReason(3));

    // Nothing acknowledged once the sessions could have lapsed; the topic did not vanish from Metadata.
    const quietFromMs = Math.max(wipedAtMs + SESSION_TIMEOUT_MS, monotonicMs());
    const acksBefore = acks();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(producers.flatMap((p) => p.outcomesSince(quietFromMs, (o) => o.kind === 'ok'))).toEqual([]);
    expect(acks()).toBe(acksBefore);
    for (const nodeId of [1, 2]) expect(await c.partitionMetadata(nodeId, ref)).toBeDefined();

    // The documented path: name every node; refused until all have reported, then done once.
    expect((await c.admin(1, '/recover-metadata?nodes=1,2', 'POST')).status).toBe(409);
    const recovered = await waitFor('the metadata recovery', 30_000, async () => {
      const answer = await c.admin(1, '/recover-metadata?nodes=1,2,3', 'POST');
      return answer.status === 200 ? answer.body : undefined;
    });
    expect(JSON.parse(recovered)).toMatchObject({ outcome: 'recovered', topics: 2 });
    const again = await c.admin(2, '/recover-metadata?nodes=1,2,3', 'POST');
    expect(again).toMatchObject({ status: 409, body: expect.stringMatching(/nothing to recover/) });

    for (const nodeId of ALL_NODES) {
      await waitFor(`node ${nodeId} ready again`, 60_000, async () =>
        (await c.admin(nodeId, '/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined,
      );
    }
    await moreAcks(20, 'after the recovery', 60_000);
    await c.awaitIsr(ref, ALL_NODES, 60_000);
    await c.coordinatorOf(group);
    // The same topic came back (its id kept), on every replica.
    expect(ALL_NODES.map(topicIdOn)).toEqual(ALL_NODES.map(() => topicId));
  } finally {
    await Promise.all([...producers, consumer].map((client) => client.stop()));
  }

  const finalLogs = await c.collectFinalLogs([ref], () => history);
  for (const log of finalLogs) history.addFinalLog(log);
  history.close();
  const verdict = checkLogHistory(history.snapshot());
  console.log(JSON.stringify({ test: 'cluster-etcd-loss', ...verdict.stats }));
  if (!verdict.isValid) console.log(describeVerdict(verdict));
  expect(failedChecks(verdict)).toEqual([]);
  expect(verdict.stats.acknowledgedWrites).toBeGreaterThanOrEqual(40);
  expect(verdict.stats.finalLogs).toBe(3);
}, 400_000);
