import { liveChildProcesses } from '../support/child-processes';
import { ClusterConsumer, ClusterProducer, monotonicMs } from '../support/cluster-clients';
import { CohortCluster, waitFor } from '../support/cohort-cluster';
import { LogHistory } from '../support/log-history';
import { checkLogHistory, describeVerdict, failedChecks } from '../support/log-history-checker';

/**
 * The history pipeline of the cluster fault tests on one node without etcd: producers (acks=-1) and a
 * consumer record what they do while the node is killed with SIGKILL and restarted on its data
 * directory; the node's log is then read back as a consumer and from its data directory, and the whole
 * history must pass the checker: every acknowledged write survives the kill (each was fsynced before its
 * answer), in order, and nothing read vanishes.
 */
const T = { topic: 'history', partition: 0 };
let cluster: CohortCluster | undefined;

afterAll(async () => {
  await cluster?.stop();
  expect(liveChildProcesses().filter((c) => /src\/main\.ts|etcd/.test(c.command))).toEqual([]);
});

it('keeps every acknowledged write across a kill -9 and restart, by the checker over the whole history', async () => {
  cluster = await CohortCluster.start({ mode: 'single' });
  await cluster.createTopic(T.topic, 1, 1);
  const history = new LogHistory(monotonicMs);
  const clients = { partition: T, nodeTargets: cluster.nodeTargets, history, callDeadlineMs: 2_000 };
  const producers = [1, 2].map((n) => new ClusterProducer({ ...clients, name: `producer-${n}` }).start());
  const consumer = new ClusterConsumer({ ...clients, name: 'consumer-1' }).start();
  try {
    const acks = (): number => producers.reduce((sum, p) => sum + p.ackCount, 0);
    await waitFor('20 acknowledged writes', 20_000, () => (acks() >= 20 ? true : undefined));
    const killedAtMs = monotonicMs();
    await cluster.kill(1);
    await cluster.startNode(1);
    await waitFor('an acknowledged write after the restart', 20_000, () =>
      producers.some((p) => p.outcomesSince(killedAtMs, (o) => o.kind === 'ok').length > 0)
        ? true
        : undefined,
    );
    const afterRestart = acks();
    await waitFor('20 more acknowledged writes', 20_000, () =>
      acks() >= afterRestart + 20 ? true : undefined,
    );
    // The kill cut calls off: they are unknown outcomes, not failures.
    expect(
      producers.flatMap((p) => p.outcomesSince(killedAtMs, (o) => o.kind === 'info')).length,
    ).toBeGreaterThan(0);
  } finally {
    await Promise.all([...producers, consumer].map((client) => client.stop()));
  }
  for (const log of await cluster.collectFinalLogs([T], () => history)) history.addFinalLog(log);
  history.close();

  const verdict = checkLogHistory(history.snapshot());
  expect(failedChecks(verdict)).toEqual([]);
  expect(describeVerdict(verdict)).toMatch(/^history valid/);
  expect(verdict.stats.acknowledgedWrites).toBeGreaterThanOrEqual(40);
  expect(verdict.stats.recordsRead).toBeGreaterThan(0);
  expect(verdict.stats.finalLogs).toBe(1);
}, 120_000);
