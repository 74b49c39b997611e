import { brokenInvariant } from './broken-invariant';
import type { GroupConfig } from './group-config';
import type { GroupCoordinatorOptions } from './group-coordinator-options';
import { GroupCoordinatorRouter } from './group-coordinator-router';
import type { Time } from '../time';

export {
  DEFAULT_REPLY_SLICE_SIZE,
  INVALID_OFFSET,
  NEW_MEMBER_JOIN_TIMEOUT_MS,
  RETENTION_CHECK_OFFSETS_PER_TURN,
} from './group-coordinator-options';
export type {
  GroupCoordinatorListener,
  GroupCoordinatorOptions,
  GroupCoordinatorRuntimeOptions,
  PartitionStores,
  ShardStores,
} from './group-coordinator-options';

/**
 * A group coordinator that leads every group on the stores it is given: a GroupCoordinatorRouter over one
 * `__consumer_offsets` partition, elected at epoch 0 when it is made. Whatever the stores hold comes back at
 * construction; state still to be replayed into them comes back with `load()`. Embedders, tests and
 * benches that run one coordinator use it; a server leading some of many partitions uses the router and
 * its `onElection` / `onResignation`.
 */
export class GroupCoordinator extends GroupCoordinatorRouter {
  constructor(config: GroupConfig, time: Time, options: GroupCoordinatorOptions = {}) {
    super(config, time, { ...options, numPartitions: 1 });
    const shard = this.elect(0, 0, {
      offsetStore: options.offsetStore,
      metadataStore: options.metadataStore,
    });
    shard?.restoreNow();
  }

  /**
   * Loads group state that `loading` is bringing into the stores (a replay of `__consumer_offsets`).
   * Until it resolves every group request gets COORDINATOR_LOAD_IN_PROGRESS (with Kafka's exceptions:
   * Heartbeat NONE, SyncGroup REBALANCE_IN_PROGRESS); then every stored group comes back, each restored
   * member's session starting afresh. If `loading` rejects, or a stored group is unusable, the coordinator
   * serves nothing (COORDINATOR_NOT_AVAILABLE) and the returned promise rejects.
   */
  load(loading: Promise<unknown>): Promise<void> {
    const shard = this.shardOf(0);
    if (shard === undefined) return Promise.reject(brokenInvariant('the coordinator has resigned'));
    return shard.load(loading);
  }
}
