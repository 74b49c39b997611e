/**
 * bench:cluster, section coordinator-failover: kill -9 of the node that coordinates a group of 100 SDK
 * members (one CohortClient started from every node's address, test/support/group-commit-workload.ts:
 * each member owns one of 100 partitions and commits an offset for it every 100 ms; a reader fetches the
 * group's offsets every 250 ms), and how long until the group works again on its new coordinator.
 *
 * Each member is "confirmed" on the new coordinator once a commit it sent after the kill is acknowledged
 * in the generation it holds at that point and still holds at the end. An OffsetCommit carries the
 * member id and generation, and the coordinator accepts it only from a member of that generation, so an
 * acknowledged one is the coordinator's word that the member holds its assignment there. When the move
 * needs no rebalance (the group's record survives in `__consumer_offsets` and the members' sessions start
 * afresh on the new coordinator, as Kafka's do), the generation is the one from before the kill; when
 * it rebalances, the generation is the new one and the figure includes the rebalance. Figures per round:
 * - first acknowledged commit after the kill (any member);
 * - all members confirmed: the last member's first confirming commit;
 * - the rebalance, when there was one: the first revocation or assignment after the kill → the last
 *   member's assignment in the final generation.
 * - from the new coordinator's log: when it was elected leader of the group's `__consumer_offsets`
 *   partition and when that partition was loaded (`offsets partition loaded`: its time less its
 *   `durationMs`, and its time), so a slow round shows which step was slow.
 * Goal for all members confirmed: ≤ node session timeout + the round's rebalance time (0 without one)
 * + 1 s. Every round's history is checked (test/support/group-history-checker.ts): acknowledged commits
 * lost over the runs must be 0. The killed node restarts on its data directory after each round.
 */
import { performance } from 'node:perf_hooks';
import { CohortCluster, waitFor } from '../../test/support/cohort-cluster';
import { GroupCommitWorkload } from '../../test/support/group-commit-workload';
import { GroupHistory } from '../../test/support/group-history';
import { checkGroupHistory } from '../../test/support/group-history-checker';
import { groupPartitionFor } from '../../src/protocol/group-placement';
import type { LogLine } from '../../test/support/capture-logger';
import { line, table, verdict } from '../support/report';
import { median } from '../support/stats';

export const COORDINATOR_FAILOVER_MEMBERS = 100;
const PARTITIONS = 100;
/** Longer than any takeover: members must not expire while their coordinator is gone. */
const MEMBER_SESSION_MS = 30_000;
const HEARTBEAT_INTERVAL_MS = 1_000;
const REBALANCE_TIMEOUT_MS = 15_000;
const SLACK_MS = 1_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface FailoverRound {
  readonly killed: number;
  readonly tookOver: number;
  /** From the kill: the new coordinator elected for the group's partition, and the partition loaded. */
  readonly electedMs: number;
  readonly loadedMs: number;
  readonly firstAckMs: number;
  readonly allConfirmedMs: number;
  readonly rebalanced: boolean;
  readonly rebalanceMs: number;
  readonly goalMs: number;
  readonly acknowledgedCommits: number;
  readonly lost: number;
  readonly isValid: boolean;
}

/**
 * The partition's load on `nodeId` after `sinceWallMs`, from the node's log: [elected, loaded] in ms after
 * `sinceWallMs` (NaN when the line is not there).
 */
function loadTimes(
  cluster: CohortCluster,
  nodeId: number,
  partition: number,
  sinceWallMs: number,
): [number, number] {
  const lines = cluster.node(nodeId).process?.lines ?? [];
  const loaded = lines.find(
    (l): l is LogLine =>
      typeof l !== 'string' &&
      l.msg === 'offsets partition loaded' &&
      l.partition === partition &&
      typeof l.time === 'number' &&
      l.time >= sinceWallMs,
  );
  if (loaded === undefined) return [NaN, NaN];
  const at = (loaded.time as number) - sinceWallMs;
  return [at - (loaded.durationMs as number), at];
}

async function failoverRound(
  cluster: CohortCluster,
  index: number,
  offsetsPartitions: number,
): Promise<FailoverRound> {
  const groupId = `coordinator-failover-${index}`;
  const history = new GroupHistory();
  const load = new GroupCommitWorkload(history, {
    bootstrap: cluster.nodeIds().map((id) => cluster.node(id).target),
    groupId,
    topic: 'work',
    partitions: PARTITIONS,
    members: COORDINATOR_FAILOVER_MEMBERS,
    sessionTimeoutMs: MEMBER_SESSION_MS,
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
  });
  let killed: number | undefined;
  try {
    load.start();
    const before = await waitFor('the group Stable with every member', 180_000, () => load.isStable());
    const formedAtMs = performance.now();
    // The group is committing, not just formed: every member has had a commit acknowledged.
    await waitFor('an acknowledged commit of every member', 60_000, () =>
      load.membersSince(formedAtMs).every((m) => m.firstAck !== undefined) ? true : undefined,
    );
    await sleep(1_000);
    killed = await cluster.coordinatorOf(groupId);
    const killedAtMs = performance.now();
    const killedAtWallMs = Date.now();
    await cluster.kill(killed);
    const tookOver = await cluster.coordinatorOf(groupId, killed);
    // Every member confirmed in the generation it holds, and that generation the group's on its new node.
    const confirmed = await waitFor(
      'every member confirmed on the new coordinator',
      cluster.sessionTimeoutMs + 120_000,
      async () => {
        const members = load.membersSince(killedAtMs);
        if (members.some((m) => m.firstAckInGeneration === undefined)) return undefined;
        const stable = await load.isStable();
        return stable === undefined ? undefined : { members, generationId: stable.generationId };
      },
      50,
    );
    const firstAckMs =
      Math.min(...confirmed.members.map((m) => m.firstAck?.ackedAtMs ?? Infinity)) - killedAtMs;
    const allConfirmedMs =
      Math.max(...confirmed.members.map((m) => m.firstAckInGeneration!.ackedAtMs)) - killedAtMs;
    const rebalanced = confirmed.generationId !== before.generationId;
    // The rebalance: from the first member that noticed it to the last one assigned in the new generation.
    const rebalanceMs = rebalanced
      ? Math.max(...confirmed.members.map((m) => m.assignedAtMs)) -
        Math.max(
          killedAtMs,
          Math.min(
            ...load.rebalanceNoticesSince(killedAtMs),
            ...confirmed.members.map((m) => m.assignedAtMs),
          ),
        )
      : 0;
    const [electedMs, loadedMs] = loadTimes(
      cluster,
      tookOver,
      groupPartitionFor(groupId, offsetsPartitions),
      killedAtWallMs,
    );
    await sleep(1_000);
    await load.stopTraffic();
    await load.recordFinalOffsets();
    const checked = checkGroupHistory(history.close());
    return {
      killed,
      tookOver,
      electedMs,
      loadedMs,
      firstAckMs,
      allConfirmedMs,
      rebalanced,
      rebalanceMs,
      goalMs: cluster.sessionTimeoutMs + rebalanceMs + SLACK_MS,
      acknowledgedCommits: checked.stats.acknowledgedCommits,
      lost: checked.checks.find((c) => c.name === 'acknowledged-commit-lost')!.violations.length,
      isValid: checked.isValid,
    };
  } finally {
    await load.close();
    if (killed !== undefined && cluster.node(killed).state === 'killed') await cluster.startNode(killed);
  }
}

/** Runs `rounds` rounds on `cluster` (every node running at the start and at the end); returns figures. */
export async function benchCoordinatorFailover(
  cluster: CohortCluster,
  rounds: number,
  offsetsPartitions: number,
): Promise<Record<string, number>> {
  line('');
  line(
    `5. Coordinator failover: kill -9 of the coordinator of ${COORDINATOR_FAILOVER_MEMBERS} committing SDK ` +
      'members → first acknowledged commit, every member confirmed on the new coordinator (ms)',
  );
  const results: FailoverRound[] = [];
  for (let r = 0; r < rounds; r++) results.push(await failoverRound(cluster, r, offsetsPartitions));
  const lost = results.reduce((n, r) => n + r.lost, 0);
  const invalid = results.filter((r) => !r.isValid).length;
  const overGoal = results.filter((r) => r.allConfirmedMs > r.goalMs).length;
  table([
    [
      'round',
      'killed → new',
      'elected',
      'loaded',
      'first ack',
      'all confirmed',
      'rebalanced',
      'rebalance',
      'goal',
      'acks',
    ],
    ...results.map((r, i) => [
      i,
      `${r.killed} → ${r.tookOver}`,
      Math.round(r.electedMs),
      Math.round(r.loadedMs),
      Math.round(r.firstAckMs),
      Math.round(r.allConfirmedMs),
      r.rebalanced ? 'yes' : 'no',
      Math.round(r.rebalanceMs),
      `≤ ${Math.round(r.goalMs)} ${verdict(r.allConfirmedMs <= r.goalMs)}`,
      r.acknowledgedCommits,
    ]),
  ]);
  table([
    ['figure', 'value', 'goal'],
    ['acknowledged commits lost', lost, `0 ${verdict(lost === 0)}`],
    ['histories checked / invalid', `${results.length} / ${invalid}`, ''],
  ]);
  return {
    coordinator_failover_members: COORDINATOR_FAILOVER_MEMBERS,
    coordinator_failover_rounds: results.length,
    coordinator_failover_elected_median_ms: Math.round(median(results.map((r) => r.electedMs))),
    coordinator_failover_loaded_median_ms: Math.round(median(results.map((r) => r.loadedMs))),
    coordinator_failover_first_ack_median_ms: Math.round(median(results.map((r) => r.firstAckMs))),
    coordinator_failover_all_confirmed_median_ms: Math.round(median(results.map((r) => r.allConfirmedMs))),
    coordinator_failover_all_confirmed_max_ms: Math.round(Math.max(...results.map((r) => r.allConfirmedMs))),
    coordinator_failover_rebalanced_rounds: results.filter((r) => r.rebalanced).length,
    coordinator_failover_rebalance_max_ms: Math.round(Math.max(...results.map((r) => r.rebalanceMs))),
    coordinator_failover_rounds_over_goal: overGoal,
    coordinator_failover_acknowledged_commits: results.reduce((n, r) => n + r.acknowledgedCommits, 0),
    coordinator_failover_acknowledged_commits_lost: lost,
    coordinator_failover_histories_invalid: invalid,
    coordinator_failover_goal_max_ms: Math.round(Math.max(...results.map((r) => r.goalMs))),
  };
}
