import type { TopicPartition } from '../protocol/topic-partition';

/*
 * What the live page is sent of the groups (GroupBoard, page-stream.ts): each group's row for the groups
 * table, the whole view of the group a page shows, and its members' heartbeats. Offsets are decimal
 * strings: JSON has no int64.
 */

/** One member as the page shows it. */
export interface BoardMember {
  readonly memberId: string;
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  /** Owned partitions; null unless the group is a consumer group whose assignment decodes. */
  readonly assignment: readonly TopicPartition[] | null;
  /**
   * When the coordinator last heard from the member (its wall clock, ms); null when it does not know (a
   * member on its first join). As of the group's last change, and at most a lag round old while a page
   * shows the group (GroupBoard.select). The page shows the age and lets it grow.
   */
  readonly lastHeartbeatMs: number | null;
}

/** A member that left the group, and how. */
export interface DepartedMember {
  readonly memberId: string;
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  /** `session-expired`, `member-left`, or the reason of the change that removed it. */
  readonly reason: string;
  readonly atMs: number;
}

/**
 * One rebalance: from the change that started it until the group was Stable (or Empty) again. Never
 * changed once made: a change of the rebalance replaces it (views share them, see GroupEntry).
 */
export interface Rebalance {
  readonly startMs: number;
  /** Every reason that joined in, first the one that started it (deduplicated, in order). */
  readonly reasons: readonly string[];
  /** The generation the rebalance made (set at join-completed); the previous one until then. */
  readonly generationId: number;
  readonly endMs: number | null;
  /** `Stable` or `Empty` once done. */
  readonly endState: string | null;
}

/** One partition's lag as the stream sends it (offsets as decimal strings: JSON has no int64). */
export interface BoardPartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly committedOffset: string | null;
  readonly highWatermark: string | null;
  readonly lag: string | null;
  readonly memberId: string | null;
}

/** Everything the page shows of one group. */
export interface BoardGroup {
  readonly groupId: string;
  readonly state: string;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocol: string;
  readonly members: readonly BoardMember[];
  /** The reason of the latest change, and when it happened (the coordinator's wall clock). */
  readonly reason: string;
  readonly changedAtMs: number;
  readonly rebalances: readonly Rebalance[];
  readonly departed: readonly DepartedMember[];
  readonly partitions: readonly BoardPartitionLag[];
  /** Lag summed over the partitions whose lag is known; null when none is. */
  readonly totalLag: string | null;
  /** `[timeMs, totalLag]` pairs, oldest first. */
  readonly lagSamples: readonly (readonly [number, number])[];
  /** As in the row: the group's coordinator, null while it is not known. */
  readonly coordinatorId: number | null;
}

/**
 * One group as the groups table shows it: what every page hears of every group. A few hundred bytes,
 * where a whole view (BoardGroup) holds a timeline, departed members, partitions and lag samples that
 * only the page showing the group needs. `groupId`, `state` and `generationId` come first, as in a view.
 */
export interface BoardGroupRow {
  readonly groupId: string;
  readonly state: string;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocol: string;
  readonly memberCount: number;
  /** As in the view: lag summed over the partitions whose lag is known; null when none is. */
  readonly totalLag: string | null;
  /** When the last rebalance ended, or started while it is in progress; null before any. */
  readonly lastRebalanceMs: number | null;
  /**
   * The node that coordinates the group (its `__consumer_offsets` partition's leader), as the board last
   * heard; null while it is not known: the group's partition moved away from its coordinator (or that node
   * stopped answering) and no node has told of it since.
   */
  readonly coordinatorId: number | null;
}

/**
 * Members of one group and their last heartbeat (`[memberId, ms]` pairs): those that moved since the
 * previous round, or every member when a page has just selected the group.
 */
export interface BoardHeartbeats {
  readonly groupId: string;
  readonly members: readonly (readonly [string, number | null])[];
}
