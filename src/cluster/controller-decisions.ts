import { electLeader, NO_LEADER, type PartitionState } from './partition-state';

/**
 * The controller's per-partition decisions, as pure functions of the assignment, the stored state and
 * which nodes are alive: after Kafka's ZooKeeper-era `PartitionStateMachine` (offline partitions get a
 * leader) and `ReplicaStateMachine` (a replica going offline leaves the ISRs it was in). Each answers
 * the state to write, or undefined when the partition needs nothing.
 */

export interface PartitionDecisionOptions {
  readonly controllerEpoch: number;
  readonly uncleanLeaderElection: boolean;
}

/**
 * What a partition needs given who is alive, Kafka's `onReplicasBecomeOffline` and
 * `onBrokerStartup` in one level-triggered rule:
 * - Its leader is gone (or it has none): elect one, the first live ISR member in assignment order
 *   (`electLeader`), the new ISR its live part. With no live ISR member it goes offline (leader -1,
 *   leader epoch bumped so the old leader is fenced) and keeps its ISR, so whichever of those replicas
 *   returns first leads again; unclean election, when enabled, takes a live replica outside the ISR
 *   instead. A partition already offline that still has nobody to elect is left alone: no write, no
 *   epoch churn for every node event.
 * - Its leader is alive but a follower in its ISR is not: that follower leaves the ISR, leader epoch
 *   bumped (Kafka's `removeReplicasFromIsr` with `newLeaderAndIsr`), so the leader does not wait for it
 *   to acknowledge writes. The leader itself never leaves its ISR.
 * - A node that registered again since the state was written (`hasRestartedSince`: its `nodes/<id>` key
 *   is newer than the state; Kafka's broker epoch, KIP-380) has failed and come back, whatever the
 *   controller saw in between: it may have lost an unflushed tail its followers had copied. It counts as
 *   failed: as leader, the partition gets a new election among the other live ISR members (it leads
 *   again, one epoch up, only when it is the only live one); as a follower, it leaves the ISR.
 */
export function decidePartition(
  replicas: readonly number[],
  current: PartitionState,
  isAlive: (nodeId: number) => boolean,
  options: PartitionDecisionOptions,
  hasRestartedSince: (nodeId: number) => boolean = () => false,
): PartitionState | undefined {
  const { controllerEpoch } = options;
  if (current.leader === NO_LEADER || !isAlive(current.leader)) {
    const elected = electLeader(replicas, current, isAlive, options);
    if (elected.leader === NO_LEADER && current.leader === NO_LEADER) return undefined;
    return elected;
  }
  const isSteady = (replica: number): boolean => isAlive(replica) && !hasRestartedSince(replica);
  if (hasRestartedSince(current.leader)) {
    // Failure and startup at once: the others in sync first; the restarted leader only if none is.
    const steadyIsr = current.isr.filter(isSteady);
    const candidates = steadyIsr.length > 0 ? steadyIsr : current.isr.filter(isAlive);
    return electLeader(replicas, { ...current, isr: candidates }, isAlive, options);
  }
  const isr = current.isr.filter((replica) => replica === current.leader || isSteady(replica));
  if (isr.length === current.isr.length) return undefined;
  return { leader: current.leader, leaderEpoch: current.leaderEpoch + 1, isr, controllerEpoch };
}

/**
 * Kafka's preferred-replica election: the preferred replica (the first in the assignment) leads if it
 * is alive and in the ISR and does not already; the ISR is unchanged and the leader epoch bumped.
 */
export function electPreferredLeader(
  replicas: readonly number[],
  current: PartitionState,
  isAlive: (nodeId: number) => boolean,
  controllerEpoch: number,
): PartitionState | undefined {
  const preferred = replicas[0];
  if (preferred === undefined || current.leader === preferred) return undefined;
  if (!isAlive(preferred) || !current.isr.includes(preferred)) return undefined;
  return { leader: preferred, leaderEpoch: current.leaderEpoch + 1, isr: current.isr, controllerEpoch };
}

export interface PartitionView {
  readonly replicas: readonly number[];
  readonly state: PartitionState;
}

/**
 * Kafka's `checkAndTriggerAutoLeaderRebalance` test: per preferred node, the share of the partitions
 * it is preferred for that another node leads. The nodes whose share is above `maxImbalanceRatio`
 * (Kafka's `leader.imbalance.per.broker.percentage` / 100) are the ones to move leadership back to.
 */
export function imbalancedNodes(partitions: Iterable<PartitionView>, maxImbalanceRatio: number): Set<number> {
  const preferredCount = new Map<number, number>();
  const notLeadingCount = new Map<number, number>();
  for (const { replicas, state } of partitions) {
    const preferred = replicas[0];
    if (preferred === undefined) continue;
    preferredCount.set(preferred, (preferredCount.get(preferred) ?? 0) + 1);
    if (state.leader !== preferred) notLeadingCount.set(preferred, (notLeadingCount.get(preferred) ?? 0) + 1);
  }
  const imbalanced = new Set<number>();
  for (const [node, count] of preferredCount) {
    if ((notLeadingCount.get(node) ?? 0) / count > maxImbalanceRatio) imbalanced.add(node);
  }
  return imbalanced;
}
