import type { GroupConfig } from './group-config';
import type { GroupCoordinatorOptions } from './group-coordinator-options';
import { GroupCoordinatorRouter } from './group-coordinator-router';
import { InMemoryPartitionWriter } from './in-memory-partition-writer';
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
} from './group-coordinator-options';

/**
 * A group coordinator that leads every group, on one `__consumer_offsets` partition: a
 * GroupCoordinatorRouter over one partition, elected when it is made. Without a writer its partition is
 * an InMemoryPartitionWriter: empty, so there is nothing to replay and it serves at once, and every write
 * goes through it as through a log, committed at once. Given a writer (a partition that holds records
 * already), it loads it as an election does; `whenLoaded` says when it serves. Embedders, tests and
 * benches that run one coordinator use it; a server leading some of many partitions uses the router and
 * its `onElection` / `onResignation`.
 */
export class GroupCoordinator extends GroupCoordinatorRouter {
  constructor(config: GroupConfig, time: Time, options: GroupCoordinatorOptions = {}) {
    super(config, time, { ...options, numPartitions: 1 });
    const { writer } = options;
    if (writer === undefined) this.elect(0, 0, new InMemoryPartitionWriter());
    else void this.onElection(0, writer.leaderEpoch, writer);
  }
}
