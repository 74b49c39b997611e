import {
  NO_LEADER_ID,
  type ClusterMetadataUpdate,
  type PartitionLeadership,
  type PartitionRoleTarget,
} from '../../src/log/partition-roles';

export type RoleCall =
  | { readonly kind: 'apply'; readonly update: ClusterMetadataUpdate; readonly atMs: number }
  | { readonly kind: 'resign'; readonly atMs: number };

/**
 * A PartitionRoleTarget that records every call, in order, with the monotonic time it came at: the
 * cluster layer's tests check what the log layer would have been told, and when.
 */
export class RecordingRoleTarget implements PartitionRoleTarget {
  readonly calls: RoleCall[] = [];
  /** Runs inside each call, after it is recorded (a test's check of the moment). */
  onCall: ((call: RoleCall) => void) | undefined;

  constructor(private readonly nowMs: () => number) {}

  applyClusterMetadata(update: ClusterMetadataUpdate): void {
    this.record({ kind: 'apply', update, atMs: this.nowMs() });
  }

  resignLeadership(): void {
    this.record({ kind: 'resign', atMs: this.nowMs() });
  }

  /** The last update applied, if any. */
  get lastUpdate(): ClusterMetadataUpdate | undefined {
    for (let i = this.calls.length - 1; i >= 0; i--) {
      const call = this.calls[i];
      if (call.kind === 'apply') return call.update;
    }
    return undefined;
  }

  /** The partition as the last update named it. */
  partition(topic: string, partitionIndex = 0): PartitionLeadership | undefined {
    return this.lastUpdate?.partitions.find((p) => p.topic === topic && p.partitionIndex === partitionIndex);
  }

  /** The leader the last update named for the partition, NO_LEADER_ID when none or unknown. */
  leaderOf(topic: string, partitionIndex = 0): number {
    return this.partition(topic, partitionIndex)?.leader ?? NO_LEADER_ID;
  }

  private record(call: RoleCall): void {
    this.calls.push(call);
    this.onCall?.(call);
  }
}
