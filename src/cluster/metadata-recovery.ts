import type { LocalReplicaState } from '../log/partition-roles';
import { clusterIdentityKey, encodeClusterIdentity, recoveryReportPrefix } from './cluster-identity';

export { recoveryReportPrefix };
import { MetadataStoreError, type Compare, type MetadataStore, type TxnOp } from './metadata-store';
import { encodePartitionState, partitionKey, topicKey, type PartitionState } from './partition-state';
import { encodeReplicaAssignment, type ReplicaAssignment } from './replica-assignment';

/**
 * Rebuilding the cluster's metadata from the nodes' logs after etcd lost it (docs/operations.md, "When
 * etcd loses the cluster's metadata"). etcd held which topics exist, each partition's replicas, leader,
 * leader epoch and ISR; the nodes' data directories still hold every partition's replicas, each with the
 * leader epoch of its last batch and its log end offset. From those the metadata can be written again,
 * safely, on three conditions this module checks:
 *
 * 1. Every node of the cluster has reported (`recovery/<node-id>`, written by each node while it finds the
 *    identity missing), and all for the same cluster uuid. The operator names the nodes: a node that did
 *    not report may hold the only replica at a partition's latest epoch, and choosing another would
 *    drop records that were acknowledged.
 * 2. Each partition's leader is the replica with the highest (last leader epoch, log end offset). The
 *    latest leader's log holds every committed record (a committed record is on every in-sync replica,
 *    the leader among them), and no replica has records of that epoch the leader lacks, since followers
 *    copy from it: so that replica's log contains every acknowledged record. Its ISR is itself alone;
 *    the others rejoin once they have caught up from it (truncating to its epoch boundaries first).
 * 3. Every leader epoch starts above every epoch any replica has seen (the highest + 1), so no log is
 *    ever asked to take an epoch lower than one it holds, and fencing works from the first request.
 *
 * Worked example: `orders-0` on nodes 1, 2, 3 reported (epoch 4, LEO 120), (4, 118), (3, 130). Node 3's
 * 130 records include a tail of epoch 3 that the epoch-4 leader never had (it was truncated away by the
 * election that made epoch 4). The leader is node 1 (epoch 4, 120), the new epoch is 5, the ISR [1];
 * node 2 catches up to 120, node 3 truncates to the end of epoch 3 as node 1 knows it, then both rejoin.
 *
 * Written in bounded transactions, each only while the identity is still missing; the identity comes
 * last (with the reports removed), so no node registers on half-written metadata, and a recovery cut
 * off midway is simply run again.
 */
export function recoveryReportKey(clusterId: string, nodeId: number): string {
  return `${recoveryReportPrefix(clusterId)}${nodeId}`;
}

/** What a node found on its disk while etcd had no identity for its cluster. */
export interface RecoveryReport {
  readonly nodeId: number;
  readonly clusterUuid: string;
  readonly replicas: readonly LocalReplicaState[];
}

export function encodeRecoveryReport(report: RecoveryReport): string {
  return JSON.stringify({
    nodeId: report.nodeId,
    clusterUuid: report.clusterUuid,
    replicas: report.replicas.map((r) => [
      r.topic,
      r.partitionIndex,
      r.leaderEpoch,
      r.logEndOffset,
      r.topicId ?? null,
      r.partitionCount ?? null,
    ]),
  });
}

/** The report in a value, or a sentence saying why it is not one. */
export function decodeRecoveryReport(key: string, value: string): RecoveryReport | string {
  let parsed: { nodeId?: unknown; clusterUuid?: unknown; replicas?: unknown };
  try {
    parsed = JSON.parse(value) as typeof parsed;
  } catch {
    return `${key} is not JSON`;
  }
  const { nodeId, clusterUuid, replicas } = parsed ?? {};
  if (!Number.isSafeInteger(nodeId) || (nodeId as number) < 0) return `${key} has no node id`;
  if (typeof clusterUuid !== 'string' || clusterUuid === '') return `${key} has no cluster uuid`;
  if (!Array.isArray(replicas)) return `${key} has no replicas`;
  const decoded: LocalReplicaState[] = [];
  for (const entry of replicas as unknown[]) {
    const [topic, partitionIndex, leaderEpoch, logEndOffset, topicId, partitionCount] = Array.isArray(entry)
      ? (entry as unknown[])
      : [];
    if (
      typeof topic !== 'string' ||
      !Number.isSafeInteger(partitionIndex) ||
      !Number.isSafeInteger(leaderEpoch) ||
      !Number.isSafeInteger(logEndOffset) ||
      (topicId != null && typeof topicId !== 'string') ||
      (partitionCount != null && !Number.isSafeInteger(partitionCount))
    ) {
      return `${key} has a replica that is not [topic, partition, leaderEpoch, logEndOffset, topicId, partitionCount]`;
    }
    decoded.push({
      topic,
      partitionIndex,
      leaderEpoch,
      logEndOffset,
      ...(topicId == null ? {} : { topicId }),
      ...(partitionCount == null ? {} : { partitionCount }),
    } as LocalReplicaState);
  }
  return { nodeId: nodeId as number, clusterUuid, replicas: decoded };
}

/** The metadata to write: every topic's assignment and every partition's first state after recovery. */
export interface RecoveryPlan {
  readonly clusterUuid: string;
  readonly topics: ReadonlyMap<string, ReplicaAssignment>;
  /** `topic/p` → its state. */
  readonly states: ReadonlyMap<string, PartitionState>;
}

/**
 * The plan from the reports, for the nodes the operator named; or every reason it cannot be made (a
 * named node that did not report, a node that reported and was not named, reports of different clusters,
 * a partition no node holds).
 */
export function planMetadataRecovery(
  reports: readonly RecoveryReport[],
  nodes: readonly number[],
): { readonly plan: RecoveryPlan } | { readonly problems: readonly string[] } {
  const problems: string[] = [];
  const named = new Set(nodes);
  const reported = new Map(reports.map((r) => [r.nodeId, r]));
  if (named.size === 0) problems.push('name every node of the cluster');
  for (const id of [...named].sort((a, b) => a - b)) {
    if (!reported.has(id)) problems.push(`node ${id} has not reported: start it (on its own data directory)`);
  }
  for (const id of [...reported.keys()].sort((a, b) => a - b)) {
    if (!named.has(id))
      problems.push(`node ${id} reported but was not named: name it, or stop it and delete its report`);
  }
  const uuids = new Set(reports.map((r) => r.clusterUuid));
  if (uuids.size > 1) {
    problems.push(
      `the reports name different clusters (${reports.map((r) => `node ${r.nodeId}: ${r.clusterUuid}`).join(', ')})`,
    );
  }
  if (problems.length > 0) return { problems };

  // topic → partition → its replicas as reported.
  const byTopic = new Map<string, Map<number, { nodeId: number; replica: LocalReplicaState }[]>>();
  for (const report of reports) {
    for (const replica of report.replicas) {
      let partitions = byTopic.get(replica.topic);
      if (partitions === undefined) byTopic.set(replica.topic, (partitions = new Map()));
      let hosts = partitions.get(replica.partitionIndex);
      if (hosts === undefined) partitions.set(replica.partitionIndex, (hosts = []));
      hosts.push({ nodeId: report.nodeId, replica });
    }
  }
  const topics = new Map<string, ReplicaAssignment>();
  const states = new Map<string, PartitionState>();
  for (const topic of [...byTopic.keys()].sort()) {
    const partitions = byTopic.get(topic)!;
    // The count the nodes knew (their registries), not only the partitions some replica still holds: a
    // topic whose last partitions lost every replica must not come back smaller (a group's partition is
    // its hash modulo the count of __consumer_offsets).
    const knownCounts = [...partitions.values()].flatMap((hosts) =>
      hosts.flatMap(({ replica }) => (replica.partitionCount === undefined ? [] : [replica.partitionCount])),
    );
    const count = Math.max(Math.max(...partitions.keys()) + 1, ...knownCounts);
    const missing = [...Array(count).keys()].filter((p) => !partitions.has(p));
    if (missing.length > 0) {
      problems.push(`topic ${topic} has partitions no node holds: ${missing.join(', ')}`);
      continue;
    }
    const topicIds = new Set<string>();
    for (const hosts of partitions.values()) {
      for (const { replica } of hosts) if (replica.topicId !== undefined) topicIds.add(replica.topicId);
    }
    if (topicIds.size > 1) {
      problems.push(
        `topic ${topic}'s replicas belong to different topics of that name (topic ids ${[...topicIds].join(', ')}): ` +
          'move the directories of the one to drop aside on their nodes, then report again',
      );
      continue;
    }
    // Every partition gets as many replicas as the one held most widely: a replica whose directory is
    // gone is given back to a named node that lacks one, and starts empty, catching up from the leader.
    const replicationFactor = Math.max(...[...partitions.values()].map((hosts) => hosts.length));
    const replicaSets: number[][] = [];
    for (let p = 0; p < count; p++) {
      const hosts = partitions.get(p)!;
      const leader = hosts.reduce((best, host) =>
        isAhead(host.replica, best.replica) ||
        (isSame(host.replica, best.replica) && host.nodeId < best.nodeId)
          ? host
          : best,
      );
      const highestEpoch = Math.max(...hosts.map((h) => h.replica.leaderEpoch));
      const others = hosts
        .map((h) => h.nodeId)
        .filter((id) => id !== leader.nodeId)
        .sort((a, b) => a - b);
      const spare = [...named]
        .filter((id) => !hosts.some((h) => h.nodeId === id))
        .sort((a, b) => a - b)
        .slice(0, replicationFactor - hosts.length);
      replicaSets.push([leader.nodeId, ...others, ...spare]);
      states.set(`${topic}/${p}`, {
        leader: leader.nodeId,
        leaderEpoch: Math.max(0, highestEpoch + 1),
        isr: [leader.nodeId],
        controllerEpoch: 0,
      });
    }
    const [topicId] = topicIds;
    topics.set(
      topic,
      topicId === undefined ? { partitions: replicaSets } : { partitions: replicaSets, topicId },
    );
  }
  if (problems.length > 0) return { problems };
  return { plan: { clusterUuid: [...uuids][0] ?? '', topics, states } };
}

function isAhead(a: LocalReplicaState, b: LocalReplicaState): boolean {
  return (
    a.leaderEpoch > b.leaderEpoch || (a.leaderEpoch === b.leaderEpoch && a.logEndOffset > b.logEndOffset)
  );
}

function isSame(a: LocalReplicaState, b: LocalReplicaState): boolean {
  return a.leaderEpoch === b.leaderEpoch && a.logEndOffset === b.logEndOffset;
}

/** Reads every node's report; a value that is not one is a problem, not skipped. */
export async function readRecoveryReports(
  store: MetadataStore,
  clusterId: string,
): Promise<{ readonly reports: RecoveryReport[]; readonly problems: string[]; readonly readAs: Compare[] }> {
  const { kvs } = await store.range(recoveryReportPrefix(clusterId));
  const reports: RecoveryReport[] = [];
  const problems: string[] = [];
  for (const kv of kvs) {
    const decoded = decodeRecoveryReport(kv.key, kv.value);
    if (typeof decoded === 'string') problems.push(decoded);
    else reports.push(decoded);
  }
  // Every write of the recovery holds only while each report is still the one read.
  const readAs: Compare[] = kvs.map((kv) => ({
    key: kv.key,
    target: 'modRevision',
    result: 'equal',
    operand: kv.modRevision,
  }));
  return { reports, problems, readAs };
}

/** Operations per transaction: well under etcd's default limit of 128 (`--max-txn-ops`). */
export const RECOVERY_TXN_OPS = 64;

/**
 * The identity came back (restored, or another recovery finished first), or a report changed, while this
 * recovery was writing.
 */
export class MetadataRecoveryConflictError extends Error {
  constructor(clusterId: string) {
    super(
      `${clusterIdentityKey(clusterId)} exists (the metadata was restored, or recovered by another call), ` +
        'or a node reported again meanwhile: nothing more was written; run the recovery again if needed',
    );
    this.name = 'MetadataRecoveryConflictError';
  }
}

/**
 * Writes the plan: topics and partition states in transactions of at most RECOVERY_TXN_OPS puts, each
 * only while the identity is missing, then the identity with the reports deleted. Throws
 * MetadataRecoveryConflictError when the identity appeared meanwhile; the store's errors propagate (a
 * write whose outcome is unknown is safe to run again: every value is the same, and the identity is
 * written only by the last transaction, only if absent).
 */
export async function writeMetadataRecovery(
  store: MetadataStore,
  clusterId: string,
  plan: RecoveryPlan,
  /** Compares that hold while the reports are the ones the plan was made from (readRecoveryReports). */
  reportsReadAs: readonly Compare[] = [],
): Promise<void> {
  const identityAbsent: Compare[] = [
    { key: clusterIdentityKey(clusterId), target: 'createRevision', result: 'equal', operand: 0 },
    ...reportsReadAs,
  ];
  const puts: TxnOp[] = [];
  for (const [topic, assignment] of plan.topics) {
    puts.push({ type: 'put', key: topicKey(clusterId, topic), value: encodeReplicaAssignment(assignment) });
    assignment.partitions.forEach((_, p) => {
      const state = plan.states.get(`${topic}/${p}`)!;
      puts.push({ type: 'put', key: partitionKey(clusterId, topic, p), value: encodePartitionState(state) });
    });
  }
  for (let i = 0; i < puts.length; i += RECOVERY_TXN_OPS) {
    const response = await store.txn({
      compare: identityAbsent,
      success: puts.slice(i, i + RECOVERY_TXN_OPS),
    });
    if (!response.succeeded) throw new MetadataRecoveryConflictError(clusterId);
  }
  let response;
  try {
    response = await store.txn({
      compare: identityAbsent,
      success: [
        { type: 'put', key: clusterIdentityKey(clusterId), value: encodeClusterIdentity(plan.clusterUuid) },
        { type: 'delete', key: recoveryReportPrefix(clusterId), prefix: true },
      ],
    });
  } catch (error) {
    if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
    // Applied or not: the identity tells.
    const { kv } = await store.get(clusterIdentityKey(clusterId));
    if (kv?.value === encodeClusterIdentity(plan.clusterUuid)) return;
    throw error;
  }
  if (!response.succeeded) throw new MetadataRecoveryConflictError(clusterId);
}
