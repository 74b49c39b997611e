import { performance } from 'node:perf_hooks';
import { CohortClient, type GroupWatchEvent } from '../../src';
import { ErrorCode } from '../../src/errors';
import { CohortCluster, waitFor } from '../support/cohort-cluster';
import { GroupCommitWorkload } from '../support/group-commit-workload';
import { GroupHistory } from '../support/group-history';
import { checkGroupHistory, describeGroupViolations } from '../support/group-history-checker';
import { groupCoordinatorClient } from '../support/grpc-clients';

/**
 * Groups across a cluster (issue 15): three cohort nodes and etcd as real processes, the members SDK
 * clients started from every node's address, finding their coordinator as users' members do.
 *
 * 1. kill -9 of the coordinator of a group of 50 members that commit offsets continuously (and a reader
 *    that fetches them): the group is Stable again on another node, and the recorded history passes the
 *    checker (test/support/group-history-checker.ts): no acknowledged commit lost, nothing read and later
 *    gone, no member handed two assignments in one generation, no partition handed twice.
 * 2. SIGSTOP of the coordinator past its session, SIGCONT after another node took the group over: the old
 *    coordinator answers nothing but NOT_COORDINATOR for the group (Heartbeat, OffsetCommit, OffsetFetch,
 *    JoinGroup), and an SDK watch of the group, opened before, follows it to the new coordinator.
 * 3. A rolling restart (kill -9 and start, one node after the other) under a group of static members: no
 *    more rebalances than coordinator moves (the members keep their ids and generation across a move).
 * 4. etcd killed and restarted on its data dir and port, at once (shorter than the session: nothing a
 *    member sees changes) and after the session timeout (every node stops coordinating on its own clock:
 *    no commit sent after the timeout is acknowledged while etcd is down; commits are acknowledged again
 *    within ETCD_RECOVERY_MS after etcd returns, and the group is Stable), the history checked.
 */
const SESSION_TIMEOUT_MS = 5_000;
/** Elections, loads and the members' backoffs on a loaded 2-core machine: the bound adds this. */
const TAKEOVER_SLACK_MS = 20_000;
/**
 * After a long etcd outage: the nodes register again (their retry backoff), a controller is elected and
 * elects every partition's leader again, the new shards load and the members find them.
 */
const ETCD_RECOVERY_MS = SESSION_TIMEOUT_MS + TAKEOVER_SLACK_MS;
const MEMBERS = 50;
const PARTITIONS = 50;
const MEMBER_SESSION_MS = 30_000;

let cluster: CohortCluster | undefined;

beforeAll(async () => {
  cluster = await CohortCluster.start({
    nodeCount: 3,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    minInsyncReplicas: 2,
    // Few partitions: each node leads two, and the test's groups still move with their partition.
    extraArgs: ['--offsets-topic-num-partitions', '6', '--group-initial-rebalance-delay-ms', '500'],
  });
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
});

/** A test whose failure prints what the nodes said last: that explains it (a lost session, a load, a move). */
function scenario(name: string, body: () => Promise<void>, timeoutMs: number): void {
  test(
    name,
    async () => {
      try {
        await body();
      } catch (error) {
        if (cluster !== undefined) process.stderr.write(`${cluster.describeNodes(60)}\n`);
        throw error;
      }
    },
    timeoutMs,
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function bootstrap(c: CohortCluster): string[] {
  return c.nodeIds().map((id) => c.node(id).target);
}

/** Heartbeat, OffsetCommit, OffsetFetch and JoinGroup of a member of `groupId`, sent at once; their codes. */
async function queuedRequests(
  client: ReturnType<typeof groupCoordinatorClient>,
  groupId: string,
  identity: { memberId: string; generationId: number },
): Promise<Record<string, number | undefined>> {
  const [heartbeat, commit, fetched, join] = await Promise.all([
    client.heartbeat({ groupId, memberId: identity.memberId, generationId: identity.generationId }),
    client.offsetCommit({
      groupId,
      memberId: identity.memberId,
      generationId: identity.generationId,
      topics: [
        {
          name: 'work',
          partitions: [
            { partitionIndex: 0, committedOffset: 1, committedLeaderEpoch: -1, committedMetadata: '' },
          ],
        },
      ],
    }),
    client.offsetFetch({ groupId, topics: [{ name: 'work', partitionIndexes: [0] }] }),
    client.joinGroup({
      groupId,
      memberId: identity.memberId,
      sessionTimeoutMs: MEMBER_SESSION_MS,
      rebalanceTimeoutMs: 15_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    }),
  ]);
  return {
    heartbeat: heartbeat.errorCode,
    commit: commit.topics[0]?.partitions[0]?.errorCode,
    fetch: fetched.errorCode,
    join: join.errorCode,
  };
}

function workload(
  c: CohortCluster,
  history: GroupHistory,
  groupId: string,
  extra: { static?: boolean; commits?: boolean } = {},
) {
  return new GroupCommitWorkload(history, {
    bootstrap: bootstrap(c),
    groupId,
    topic: 'work',
    partitions: PARTITIONS,
    members: extra.static === true ? 10 : MEMBERS,
    sessionTimeoutMs: MEMBER_SESSION_MS,
    heartbeatIntervalMs: 1_000,
    rebalanceTimeoutMs: 15_000,
    ...(extra.static === true ? { groupInstanceIdPrefix: `${groupId}-instance` } : {}),
    ...(extra.commits === false ? { commits: false } : {}),
  });
}

scenario(
  'kill -9 of a group coordinator: the group is Stable on another node and no acknowledged commit is lost',
  async () => {
    const c = cluster!;
    const history = new GroupHistory();
    const groupId = 'faults-kill';
    const load = workload(c, history, groupId);
    try {
      load.start();
      await waitFor('the group Stable with every member', 120_000, () => load.isStable());
      const before = await c.coordinatorOf(groupId);
      await sleep(2_000);
      const killedAt = performance.now();
      await c.kill(before);
      const after = await c.coordinatorOf(groupId, before);
      await waitFor(
        'a commit acknowledged after the kill',
        SESSION_TIMEOUT_MS + TAKEOVER_SLACK_MS,
        async () => (load.lastAck !== undefined && load.lastAck.invokedAtMs > killedAt ? true : undefined),
      );
      const takeoverMs = load.lastAck!.ackedAtMs - killedAt;
      await waitFor('the group Stable again with every member', 120_000, () => load.isStable());
      await sleep(2_000);
      await load.stopTraffic();
      await load.recordFinalOffsets();
      const verdict = checkGroupHistory(history.close());
      process.stdout.write(
        `coordinator node ${before} killed, node ${after} took over; first acknowledged commit after ` +
          `${Math.round(takeoverMs)} ms; ${JSON.stringify(verdict.stats)}\n`,
      );
      expect(describeGroupViolations(verdict)).toBe('');
      expect(verdict.stats.acknowledgedCommits).toBeGreaterThan(0);
      expect(verdict.stats.generations).toBeGreaterThan(0);
    } finally {
      await load.close();
      await c.startNode(c.nodeIds().find((id) => c.node(id).state === 'killed') ?? -1).catch(() => undefined);
    }
  },
  400_000,
);

scenario(
  'SIGSTOP of a coordinator past its session: after SIGCONT it answers NOT_COORDINATOR for the moved group',
  async () => {
    const c = cluster!;
    const history = new GroupHistory();
    const groupId = 'faults-pause';
    const load = workload(c, history, groupId);
    const watcher = new CohortClient({ bootstrap: bootstrap(c), clientId: 'faults-watch' });
    try {
      load.start();
      await waitFor('the group Stable with every member', 120_000, () => load.isStable());
      const paused = await c.coordinatorOf(groupId);
      const identity = load.memberIdentity()!;
      // An SDK watch of the group, on its coordinator before the move.
      const events: GroupWatchEvent[] = [];
      let watchError: unknown;
      const watch = watcher.watchGroups([groupId]);
      const reading = (async () => {
        try {
          for await (const event of watch) events.push(event);
        } catch (error) {
          watchError = error;
        }
      })();
      await waitFor('the watch snapshot', 30_000, async () => (events.length > 0 ? true : undefined));
      // A connection to the coordinator opened before the pause: the requests sent while it is stopped wait
      // in its socket and are read right after SIGCONT, possibly before the session's expiry timer runs.
      const old = groupCoordinatorClient(c.node(paused).target);
      try {
        await old.findCoordinator({ keyType: 0, keys: [groupId] });
        await c.pause(paused);
        let answers: Promise<Record<string, number | undefined>>;
        let found: ReturnType<typeof old.findCoordinator>;
        try {
          await c.coordinatorOf(groupId, paused);
          await waitFor('the group Stable on its new coordinator', 120_000, () => load.isStable());
          answers = queuedRequests(old, groupId, identity);
          found = old.findCoordinator({ keyType: 0, keys: [groupId] });
          await sleep(200);
        } finally {
          c.resume(paused);
        }
        expect(await answers).toEqual({
          heartbeat: ErrorCode.NOT_COORDINATOR,
          commit: ErrorCode.NOT_COORDINATOR,
          fetch: ErrorCode.NOT_COORDINATOR,
          join: ErrorCode.NOT_COORDINATOR,
        });
        // Nor does it name itself: 15 while its session may be gone, or the new coordinator once it knows.
        const [located] = (await found).coordinators;
        expect(located.nodeId).not.toBe(paused);
        if (located.nodeId < 0) expect(located.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
        // And on a fresh connection, once it has caught up with its own clock.
        const fresh = groupCoordinatorClient(c.node(paused).target);
        try {
          expect(await queuedRequests(fresh, groupId, identity)).toEqual({
            heartbeat: ErrorCode.NOT_COORDINATOR,
            commit: ErrorCode.NOT_COORDINATOR,
            fetch: ErrorCode.NOT_COORDINATOR,
            join: ErrorCode.NOT_COORDINATOR,
          });
        } finally {
          fresh.close();
        }
      } finally {
        old.close();
      }
      // The old coordinator told the watch the group left it (NOT_COORDINATOR); the SDK found the new one
      // and watches there, from a new snapshot.
      const moved = await waitFor('the watch on the new coordinator', 60_000, async () => {
        if (watchError !== undefined) return { watchError };
        const unloaded = events.findIndex((e) => e.reason === 'group-unloaded');
        const again = events.findIndex((e, i) => i > unloaded && e.isSnapshot && e.group.error === null);
        return unloaded >= 0 && again >= 0 ? { unloaded: events[unloaded], again: events[again] } : undefined;
      });
      expect(moved).not.toHaveProperty('watchError');
      if ('watchError' in moved) return;
      expect(moved.unloaded.group.error?.code).toBe(ErrorCode.NOT_COORDINATOR);
      expect(moved.again.group.state).not.toBe('Dead');
      expect(events[0].isSnapshot).toBe(true);
      await watch.return();
      await reading;
      await load.stopTraffic();
      await load.recordFinalOffsets();
      const verdict = checkGroupHistory(history.close());
      process.stdout.write(
        `coordinator node ${paused} paused past its session; ${JSON.stringify(verdict.stats)}\n`,
      );
      expect(describeGroupViolations(verdict)).toBe('');
    } finally {
      await watcher.close();
      await load.close();
    }
  },
  400_000,
);

scenario(
  'a rolling restart under static members causes no more rebalances than coordinator moves',
  async () => {
    const c = cluster!;
    const history = new GroupHistory();
    const groupId = 'faults-rolling';
    const load = workload(c, history, groupId, { static: true, commits: false });
    try {
      load.start();
      const first = await waitFor('the group Stable with every member', 120_000, () => load.isStable());
      // Every coordinator change, polled while the nodes restart (a partition may move away and back).
      let moves = 0;
      let coordinator = await c.coordinatorOf(groupId);
      let isPolling = true;
      const poller = (async () => {
        while (isPolling) {
          const now = await c.coordinatorOf(groupId).catch(() => coordinator);
          if (now !== coordinator) moves++;
          coordinator = now;
          await sleep(250);
        }
      })();
      try {
        for (const nodeId of c.nodeIds()) {
          await c.restart(nodeId);
          await waitFor(`the group Stable after node ${nodeId} restarted`, 120_000, () => load.isStable());
        }
      } finally {
        isPolling = false;
        await poller;
      }
      const last = await waitFor('the group Stable at the end', 120_000, () => load.isStable());
      const rebalances = last.generationId - first.generationId;
      const verdict = checkGroupHistory(history.close());
      process.stdout.write(
        `rolling restart: generation ${first.generationId} → ${last.generationId}, ${moves} coordinator moves observed; ` +
          `${JSON.stringify(verdict.stats)}\n`,
      );
      expect(describeGroupViolations(verdict)).toBe('');
      expect(rebalances).toBeLessThanOrEqual(moves);
    } finally {
      await load.close();
    }
  },
  600_000,
);

scenario(
  'etcd killed and restarted: a short outage changes nothing, a long one fences every coordinator until etcd is back',
  async () => {
    const c = cluster!;
    const history = new GroupHistory();
    const groupId = 'faults-etcd';
    const load = workload(c, history, groupId);
    try {
      load.start();
      const stable = await waitFor('the group Stable with every member', 120_000, () => load.isStable());
      const coordinator = await c.coordinatorOf(groupId);
      await sleep(1_000);

      // 1. etcd down for less than half the session: the sessions outlive it, nobody notices.
      const shortFromMs = performance.now();
      await c.killEtcd();
      await c.restartEtcd();
      const shortOutageMs = performance.now() - shortFromMs;
      // Past the moment a session that could not renew would have expired.
      await sleep(Math.max(0, shortFromMs + SESSION_TIMEOUT_MS + 1_000 - performance.now()));
      const isShortChecked = shortOutageMs <= SESSION_TIMEOUT_MS / 2;
      if (isShortChecked) {
        expect(load.commitFailuresSince(shortFromMs)).toEqual([]);
        expect(load.rebalanceNoticesSince(shortFromMs)).toEqual([]);
        expect(await c.coordinatorOf(groupId)).toBe(coordinator);
        expect((await load.isStable()).generationId).toBe(stable.generationId);
      }

      // 2. etcd down for longer than the session: every node stops coordinating on its own clock.
      const longFromMs = performance.now();
      await c.killEtcd();
      await waitFor('a commit refused after etcd went away', SESSION_TIMEOUT_MS + TAKEOVER_SLACK_MS, () =>
        load.commitFailuresSince(longFromMs).length > 0 ? true : undefined,
      );
      await sleep(Math.max(0, longFromMs + SESSION_TIMEOUT_MS + 1_000 - performance.now()));
      const etcdBackMs = performance.now();
      // Sent after every session's deadline and acknowledged before etcd returned: a deposed coordinator's.
      const fencedAcks = load
        .acknowledgedCommits()
        .filter((a) => a.invokedAtMs >= longFromMs + SESSION_TIMEOUT_MS && a.ackedAtMs < etcdBackMs);
      expect(fencedAcks).toEqual([]);
      await c.restartEtcd();
      await waitFor('a commit acknowledged after etcd returned', ETCD_RECOVERY_MS, () =>
        load.acknowledgedCommits().some((a) => a.invokedAtMs > etcdBackMs) ? true : undefined,
      );
      const recoveryMs =
        Math.min(
          ...load
            .acknowledgedCommits()
            .filter((a) => a.invokedAtMs > etcdBackMs)
            .map((a) => a.ackedAtMs),
        ) - etcdBackMs;
      await waitFor('the group Stable after etcd returned', 120_000, () => load.isStable());
      await sleep(1_000);
      await load.stopTraffic();
      await load.recordFinalOffsets();
      const verdict = checkGroupHistory(history.close());
      process.stdout.write(
        `etcd outages: short ${Math.round(shortOutageMs)} ms (checked: ${isShortChecked}); long: first ` +
          `acknowledged commit ${Math.round(recoveryMs)} ms after etcd returned; ${JSON.stringify(verdict.stats)}\n`,
      );
      expect(describeGroupViolations(verdict)).toBe('');
      expect(verdict.stats.acknowledgedCommits).toBeGreaterThan(0);
    } finally {
      await load.close();
    }
  },
  400_000,
);
