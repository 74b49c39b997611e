import type {
  ClusterNodeAddress,
  IsrChangeProposer,
  IsrChangeResult,
  PartitionLeadership,
  ReplicaManager,
} from '../../../src/log';
import { topicPartitionKey } from '../../../src/log';

/** A proposal the test answers itself (FakeCluster with `isManual`). */
export interface HeldProposal {
  readonly nodeId: number;
  readonly key: string;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly isr: readonly number[];
  readonly resolve: (result: IsrChangeResult) => void;
}

/**
 * What the cluster layer does, in memory: partition states with a version (the partition epoch) that
 * every ISR change is compared against, as etcd's mod revision is, and a complete update pushed to every
 * registered replica manager after each change (the watch). With `isManual`, proposals are held for the
 * test to answer (`held`).
 */
export class FakeCluster {
  readonly states = new Map<string, PartitionLeadership>();
  readonly managers = new Map<number, ReplicaManager>();
  readonly held: HeldProposal[] = [];
  liveNodes: ClusterNodeAddress[] = [];
  isManual = false;
  private version = 100;

  proposerFor(nodeId: number): IsrChangeProposer {
    return {
      proposeIsr: (topic, partitionIndex, leaderEpoch, partitionEpoch, isr) => {
        const key = topicPartitionKey(topic, partitionIndex);
        if (this.isManual) {
          return new Promise((resolve) =>
            this.held.push({ nodeId, key, leaderEpoch, partitionEpoch, isr, resolve }),
          );
        }
        return Promise.resolve(this.commitIsr(nodeId, key, leaderEpoch, partitionEpoch, isr));
      },
    };
  }

  /** The store's compare-and-set of an ISR change; a committed one is published. */
  commitIsr(
    nodeId: number,
    key: string,
    leaderEpoch: number,
    partitionEpoch: number,
    isr: readonly number[],
  ): IsrChangeResult {
    const current = this.states.get(key)!;
    if (
      current.leader !== nodeId ||
      current.leaderEpoch !== leaderEpoch ||
      current.partitionEpoch !== partitionEpoch
    ) {
      return { kind: 'stale', state: current };
    }
    const state = { ...current, isr: [...isr], partitionEpoch: ++this.version };
    this.states.set(key, state);
    queueMicrotask(() => this.publish());
    return { kind: 'committed', state };
  }

  /** Sets a partition's state (a topic's creation, an election): a new version, published at once. */
  set(
    topic: string,
    partitionIndex: number,
    state: Pick<PartitionLeadership, 'leader' | 'leaderEpoch' | 'isr' | 'replicas' | 'topicId'>,
    publish = true,
  ): PartitionLeadership {
    const full: PartitionLeadership = {
      topic,
      partitionIndex,
      ...state,
      partitionEpoch: ++this.version,
    };
    this.states.set(topicPartitionKey(topic, partitionIndex), full);
    if (publish) this.publish();
    return full;
  }

  /** A new leader from `isr`'s first live member, at the next epoch (the controller's election). */
  elect(topic: string, partitionIndex: number, leader: number, isr: readonly number[]): PartitionLeadership {
    const current = this.states.get(topicPartitionKey(topic, partitionIndex))!;
    return this.set(topic, partitionIndex, {
      leader,
      leaderEpoch: current.leaderEpoch + 1,
      isr: [...isr],
      replicas: current.replicas,
    });
  }

  /** Every live, registered manager gets the complete view. */
  publish(only?: readonly number[]): void {
    const partitions = [...this.states.values()];
    for (const [nodeId, manager] of this.managers) {
      if (only !== undefined && !only.includes(nodeId)) continue;
      if (!this.liveNodes.some((node) => node.nodeId === nodeId)) continue;
      manager.applyClusterMetadata({ liveNodes: this.liveNodes, controllerId: 0, partitions });
    }
  }
}
