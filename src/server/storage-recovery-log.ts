import type { Logger } from 'pino';
import type { CorruptRegion, LogRecoveryListener } from '../log/storage';
import type { RecoveryMetrics } from './metrics/recovery-metrics';

/**
 * What storage recovery repaired, as log lines and metrics (docs/operations.md, "Damaged files"):
 *
 * - error: damaged fsynced data removed (`corrupt`: under --truncate-corrupt-logs, or in
 *   `__consumer_offsets`), and every batch or record the `__consumer_offsets` load skipped;
 * - warn: a torn tail cut after a crash (with the segments deleted after it), an overlap cut, a
 *   recovery-point, leader-epoch or high-watermark checkpoint that could not be read or written, an
 *   append whose leader epoch is below the partition's latest;
 * - info: an offset index rebuilt (normal after a crash: the index is written after its log), and a file
 *   holding no data removed (an interrupted compaction's leftovers, an index without its log, an empty
 *   segment), a leader-epoch cache rebuilt for a data directory written before leader epochs.
 *
 * Each line names the file, the offset and the bytes, so an operator can tell what was lost.
 */
export function storageRecoveryLog(
  logger: Logger,
  metrics: RecoveryMetrics,
): {
  readonly listener: LogRecoveryListener;
  /** The `__consumer_offsets` load skipped bytes holding no valid batch (the log's side of the load). */
  readonly onCorruptRegion: (region: CorruptRegion) => void;
  /** The `__consumer_offsets` load skipped a record it could not decode (the group layer's side). */
  readonly onCorruptRecord: (offset: number, error: unknown) => void;
} {
  const listener: LogRecoveryListener = {
    onTruncation: (event) => {
      metrics.onTruncation(event.kind, event.truncatedBytes);
      const fields = { ...event, kind: event.kind };
      if (event.kind === 'corrupt') {
        logger.error(fields, 'damaged data below the recovery point was removed from a log');
      } else if (event.kind === 'torn_tail') {
        logger.warn(fields, 'a torn tail left by a crash was cut from a log');
      } else {
        logger.warn(fields, 'a segment overlapping the next was cut where the next one starts');
      }
    },
    onFileRemoved: (dir, file, reason) => {
      logger.info({ dir, file, reason }, 'a file holding no data of a log was removed');
    },
    onIndexRebuild: (event) => {
      metrics.onIndexRebuild();
      logger.info(event, 'an offset index was rebuilt from its log');
    },
    onCheckpointUnreadable: (dir, file) => {
      metrics.onCheckpointError();
      logger.warn(
        { dir, file },
        'the recovery-point checkpoint could not be read; the whole log was recovered',
      );
    },
    onCheckpointError: (dir, error) => {
      metrics.onCheckpointError();
      logger.warn({ dir, err: error }, 'the recovery-point checkpoint could not be written');
    },
    onLeaderEpochCacheRebuilt: (event) => {
      if (event.reason === 'unreadable') {
        metrics.onCheckpointError();
        logger.warn(event, 'the leader-epoch checkpoint could not be read; it was rebuilt from the log');
      } else {
        logger.info(
          event,
          'the leader-epoch checkpoint was built from the log (written before leader epochs)',
        );
      }
    },
    onNonMonotonicLeaderEpoch: (dir, epoch, startOffset, latestEpoch) => {
      logger.warn(
        { dir, epoch, startOffset, latestEpoch },
        'a follower append carried a leader epoch below the latest; the entries it contradicts were removed',
      );
    },
    onHighWatermarkCheckpointUnreadable: (dir, file) => {
      metrics.onCheckpointError();
      logger.warn(
        { dir, file },
        'the high-watermark checkpoint could not be read; the partition starts without it',
      );
    },
    onStrayLog: (dir, stray, strayTopicId, topicId) => {
      logger.warn(
        { dir, stray, strayTopicId, topicId },
        'a partition directory of an earlier topic of the same name was moved aside; the log starts empty',
      );
    },
    onCheckpoint: (dir, recoveryPoint, isCleanShutdown) => {
      logger.trace({ dir, recoveryPoint, isCleanShutdown }, 'recovery point checkpointed');
    },
  };
  const onCorruptRegion = (region: CorruptRegion): void => {
    metrics.onConsumerOffsetsCorrupt('batch');
    logger.error(
      { ...region },
      'the __consumer_offsets load skipped bytes holding no valid batch; the writes they held are lost',
    );
  };
  const onCorruptRecord = (offset: number, error: unknown): void => {
    metrics.onConsumerOffsetsCorrupt('record');
    logger.error({ offset, err: error }, 'the __consumer_offsets load skipped a record it could not decode');
  };
  return { listener, onCorruptRegion, onCorruptRecord };
}
