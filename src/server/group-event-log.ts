import type { Logger } from 'pino';
import { ErrorCode } from '../errors';
import type {
  CoordinatorLoadResult,
  GroupCoordinatorListener,
  GroupState,
  OffsetRetentionCheckSummary,
  RebalanceReason,
} from '../group';
import type { Time } from '../time';

/**
 * The coordinator's events as log lines, each from a child logger with the group's id bound
 * (`"groupId":"orders"`), so one group's story can be filtered out of a busy server's log:
 *
 * - info: a rebalance starts (reason, the member that caused it, the generation it leaves) and completes
 *   (the new generation and how long it took on the server's clock); a member's session expires;
 * - debug: every state change, and every fenced request (FENCED_INSTANCE_ID, ILLEGAL_GENERATION);
 * - info: offsets expired (offsets.retention.minutes), or an Empty group removed with its last ones; a
 *   retention check's totals when it removed anything (debug when it did not);
 * - warn: group metadata that could not be stored, expired offsets that could not be removed.
 * - info: a `__consumer_offsets` partition with groups finished loading on this node (how many, and how
 *   long from the election: Kafka's "Finished loading offsets and group metadata"), or was unloaded (debug
 *   for a partition without groups); error: its load
 *   failed (its groups answer COORDINATOR_NOT_AVAILABLE until the next election); debug: a stale election
 *   or resignation ignored.
 *
 * Child loggers are kept only while a group is active: one that goes Empty or Dead drops its own.
 */
export function groupEventLog(logger: Logger, time: Time): GroupCoordinatorListener {
  const children = new Map<string, Logger>();
  const rebalanceStartMs = new Map<string, number>();
  const log = (groupId: string): Logger => {
    let child = children.get(groupId);
    if (child === undefined) {
      child = logger.child({ groupId });
      children.set(groupId, child);
    }
    return child;
  };
  // Requests name any group id they like, existing or not: their lines must not leave a logger behind.
  const transient = (groupId: string): Logger => children.get(groupId) ?? logger.child({ groupId });
  return {
    onPrepareRebalance: (
      groupId: string,
      generationId: number,
      reason: RebalanceReason,
      memberId: string,
    ) => {
      if (!rebalanceStartMs.has(groupId)) rebalanceStartMs.set(groupId, time.monotonicMs());
      log(groupId).info({ reason, memberId, generationId }, 'rebalance started');
    },
    onStateChange: (groupId: string, previous: GroupState, next: GroupState, generationId: number) => {
      const child = log(groupId);
      child.debug({ from: previous, to: next, generationId }, 'group state changed');
      if (next === 'Stable' || next === 'Empty') {
        const startMs = rebalanceStartMs.get(groupId);
        rebalanceStartMs.delete(groupId);
        if (startMs !== undefined) {
          const durationMs = time.monotonicMs() - startMs;
          child.info({ generationId, durationMs, state: next }, 'rebalance completed');
        }
      }
      if (next === 'Empty' || next === 'Dead') {
        children.delete(groupId);
        if (next === 'Dead') rebalanceStartMs.delete(groupId);
      }
    },
    onMemberExpired: (groupId: string, memberId: string, groupInstanceId: string) => {
      log(groupId).info({ memberId, groupInstanceId }, 'member session expired');
    },
    onFenced: (groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode) => {
      if (!logger.isLevelEnabled('debug')) return;
      transient(groupId).debug(
        { memberId, groupInstanceId, errorCode: ErrorCode[errorCode] },
        'request fenced',
      );
    },
    onGroupStoreFailed: (groupId: string, generationId: number, error: unknown) => {
      transient(groupId).warn({ err: error, generationId }, 'group metadata could not be stored');
    },
    onOffsetsExpired: (groupId: string, partitions: number, isGroupRemoved: boolean) => {
      // A group that never committed goes with no offsets: say what happened to it, not "0 expired".
      const message = isGroupRemoved ? 'group expired' : 'offsets expired';
      transient(groupId).info({ partitions }, message);
    },
    onOffsetExpiryFailed: (groupId: string, error: unknown) => {
      transient(groupId).warn({ err: error }, 'expired offsets could not be removed');
    },
    // A partition with no groups is debug: a node starts with fifty of them, and says nothing by them.
    onShardLoaded: (partition: number, leaderEpoch: number, groups: number, durationMs: number) => {
      const fields = { partition, leaderEpoch, groups, durationMs };
      if (groups > 0) logger.info(fields, 'offsets partition loaded');
      else logger.debug(fields, 'offsets partition loaded');
    },
    onPartitionReplayed: (partition: number, leaderEpoch: number, result: CoordinatorLoadResult) => {
      logger.debug({ partition, leaderEpoch, ...result }, 'offsets partition replayed');
    },
    onShardLoadFailed: (partition: number, leaderEpoch: number, error: unknown) => {
      logger.error({ err: error, partition, leaderEpoch }, 'offsets partition failed to load');
    },
    onShardUnloaded: (partition: number, leaderEpoch: number, groups: number) => {
      if (groups > 0) logger.info({ partition, leaderEpoch, groups }, 'offsets partition unloaded');
      else logger.debug({ partition, leaderEpoch, groups }, 'offsets partition unloaded');
    },
    onStaleLeadership: (partition: number, leaderEpoch: number, currentEpoch: number) => {
      logger.debug({ partition, leaderEpoch, currentEpoch }, 'stale offsets partition leadership ignored');
    },
    onOffsetRetentionCheckCompleted: (summary: OffsetRetentionCheckSummary) => {
      const removedAny = summary.offsetsExpired > 0 || summary.groupsExpired > 0;
      if (removedAny) logger.info(summary, 'offset retention check completed');
      else logger.debug(summary, 'offset retention check completed');
    },
  };
}
