import type { IsrChangeProposer, IsrChangeResult } from '../log/partition-roles';
import { toPartitionLeadership } from './cluster-metadata-view';
import type { ClusterState } from './cluster-state';
import type { MetadataStore } from './metadata-store';
import {
  decodePartitionState,
  expandIsr,
  partitionKey,
  shrinkIsr,
  topicKey,
  writePartitionState,
  type PartitionState,
  type StoredPartitionState,
} from './partition-state';
import { decodeReplicaAssignment } from './replica-assignment';

/**
 * A leader's ISR changes over etcd (Kafka's ZooKeeper-era `Partition.shrinkIsr` / `expandIsr` with the
 * `zkVersion` compare, KIP-497's AlterPartition in spirit): the proposed ISR is turned into the
 * leader's own decisions from `partition-state.ts` — `shrinkIsr` for the replicas that leave, `expandIsr`
 * for each that joins, both at the leader epoch the log layer acts at — applied to the partition's state
 * as it was at `partitionEpoch` (the key's mod revision), and written only if the key's mod revision is
 * still `partitionEpoch`. Any leader election moves the mod revision, so a deposed leader cannot write.
 *
 * - No session, no write: a node whose session is not active (checked before the read and again
 *   before the write) answers `failed` without sending anything.
 * - The state at `partitionEpoch` comes from the node's view when it is there, else from one read.
 *   A state that moved answers `stale` with the current one; so does a state in which this node does not
 *   lead at `leaderEpoch`.
 * - `writePartitionState` resolves a lost answer by a read; when even that fails the outcome is unknown
 *   and the answer is `failed`: the log layer assumes neither outcome and proposes again later.
 *
 * Example: {leader 2, epoch 5, isr [2, 3]} at mod revision 40; node 2 proposes isr [2] at (5, 40): the
 * key is written if still at 40 → committed {leader 2, epoch 5, isr [2]} at, say, 41. A proposal at
 * (5, 40) after that answers stale with the state at 41.
 */
export interface EtcdIsrChangeProposerOptions {
  readonly store: MetadataStore;
  readonly clusterId: string;
  readonly nodeId: number;
  /** The node's session: the proposer writes only while it is active. */
  readonly session: { isActive(): boolean };
  /** The node's current view, where the state at `partitionEpoch` is usually found without a read. */
  readonly cluster: () => ClusterState | undefined;
}

export class SessionInactiveError extends Error {
  constructor() {
    super('the node has no active session with the metadata store; it proposes nothing');
    this.name = 'SessionInactiveError';
  }
}

export class EtcdIsrChangeProposer implements IsrChangeProposer {
  constructor(private readonly options: EtcdIsrChangeProposerOptions) {}

  async proposeIsr(
    topic: string,
    partitionIndex: number,
    leaderEpoch: number,
    partitionEpoch: number,
    isr: readonly number[],
  ): Promise<IsrChangeResult> {
    const { store, clusterId, nodeId, session } = this.options;
    if (!session.isActive()) return { kind: 'failed', error: new SessionInactiveError() };
    let known: Awaited<ReturnType<EtcdIsrChangeProposer['stateAt']>>;
    try {
      known = await this.stateAt(topic, partitionIndex, partitionEpoch);
    } catch (error) {
      return { kind: 'failed', error };
    }
    const { replicas, stored, topicId } = known;
    if (stored === undefined) return { kind: 'stale', state: null };
    const current = toPartitionLeadership(topic, partitionIndex, replicas, stored, topicId);
    if (stored.modRevision !== partitionEpoch) return { kind: 'stale', state: current };
    const decided = decide(stored.state, replicas, nodeId, leaderEpoch, isr);
    switch (decided.outcome) {
      case 'notLeader':
        return { kind: 'stale', state: current };
      case 'invalid':
        return { kind: 'failed', error: new RangeError(decided.reason) };
      case 'unchanged':
        return { kind: 'committed', state: current };
      case 'changed':
        break;
    }
    // The read may have taken a while: the session must still be active when the write leaves.
    if (!session.isActive()) return { kind: 'failed', error: new SessionInactiveError() };
    let result;
    try {
      result = await writePartitionState(store, {
        clusterId,
        topic,
        partition: partitionIndex,
        expectedModRevision: partitionEpoch,
        state: decided.state,
      });
    } catch (error) {
      return { kind: 'failed', error };
    }
    switch (result.outcome) {
      case 'updated':
        return {
          kind: 'committed',
          state: toPartitionLeadership(topic, partitionIndex, replicas, result.stored, topicId),
        };
      case 'stale':
        return {
          kind: 'stale',
          state:
            result.current === undefined
              ? null
              : toPartitionLeadership(topic, partitionIndex, replicas, result.current, topicId),
        };
      case 'notController':
        // Not reachable: a leader's write carries no controller epoch.
        return { kind: 'failed', error: new Error('unexpected notController for an ISR change') };
    }
  }

  /** The replicas and the state: from the view when it holds `partitionEpoch`, else read in one txn. */
  private async stateAt(
    topic: string,
    partitionIndex: number,
    partitionEpoch: number,
  ): Promise<{
    replicas: readonly number[];
    stored: StoredPartitionState | undefined;
    topicId?: string | undefined;
  }> {
    const cluster = this.options.cluster();
    const known = cluster?.topics.get(topic);
    const replicas = known?.partitions[partitionIndex];
    const stored = cluster?.partitions.get(`${topic}/${partitionIndex}`);
    if (replicas !== undefined && stored?.modRevision === partitionEpoch) {
      return { replicas, stored, topicId: known?.topicId };
    }
    const { store, clusterId } = this.options;
    const stateKey = partitionKey(clusterId, topic, partitionIndex);
    const assignmentKey = topicKey(clusterId, topic);
    const response = await store.txn({
      compare: [],
      success: [
        { type: 'get', key: assignmentKey },
        { type: 'get', key: stateKey },
      ],
    });
    const [assignmentRead, stateRead] = response.results;
    const assignmentKv = assignmentRead?.type === 'get' ? assignmentRead.kvs[0] : undefined;
    const stateKv = stateRead?.type === 'get' ? stateRead.kvs[0] : undefined;
    const assignment =
      assignmentKv === undefined ? undefined : decodeReplicaAssignment(assignmentKv.key, assignmentKv.value);
    const readReplicas = assignment?.partitions[partitionIndex];
    if (readReplicas === undefined || stateKv === undefined) return { replicas: [], stored: undefined };
    return {
      replicas: readReplicas,
      topicId: assignment?.topicId,
      stored: {
        state: decodePartitionState(stateKv.key, stateKv.value),
        modRevision: stateKv.modRevision,
      },
    };
  }
}

/** The proposed ISR as the leader's shrink (who leaves) then expansions (who joins, one by one). */
function decide(
  current: PartitionState,
  replicas: readonly number[],
  nodeId: number,
  leaderEpoch: number,
  isr: readonly number[],
): ReturnType<typeof shrinkIsr> {
  const leaving = current.isr.filter((replica) => !isr.includes(replica));
  const joining = isr.filter((replica) => !current.isr.includes(replica));
  let state = current;
  let changed = false;
  if (leaving.length > 0) {
    const shrunk = shrinkIsr(state, nodeId, leaderEpoch, leaving);
    if (shrunk.outcome !== 'changed') return shrunk;
    state = shrunk.state;
    changed = true;
  }
  for (const replica of joining) {
    const expanded = expandIsr(state, replicas, nodeId, leaderEpoch, replica);
    if (expanded.outcome === 'unchanged') continue;
    if (expanded.outcome !== 'changed') return expanded;
    state = expanded.state;
    changed = true;
  }
  if (!changed) {
    // Nothing to change; still only the leader at that epoch may hear "committed".
    return current.leader === nodeId && current.leaderEpoch === leaderEpoch
      ? { outcome: 'unchanged' }
      : { outcome: 'notLeader' };
  }
  return { outcome: 'changed', state };
}
