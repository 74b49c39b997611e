import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import { MAX_DELAY_MS } from '../timer';
import { CONSUMER_OFFSETS_TOPIC, type OffsetsPartition } from './consumer-offsets';
import { DelayedHighWatermark } from './delayed-high-watermark';
import { DelayedProduce, type ProducePartitionStatus } from './delayed-produce';
import {
  DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS,
  OffsetsTopicLeadership,
  type OffsetsTopicOptions,
} from './offsets-topic';
import type { ParkedOperations } from './parked-operations';
import type { Partition } from './partition';
import type { PartitionLookup } from './partition-lookup';
import type { LogAppendInfo, SimpleRecord } from './storage';

/** What the coordinator's partitions need of the node that hosts them (ReplicaManager). */
export interface OffsetsTopicPartitionsHost {
  readonly time: Time;
  readonly nodeId: number;
  /** The hosted partitions: a write is for the replica hosted under its key when it was made, no other. */
  readonly partitions: PartitionLookup;
  /** Where a write waits for its commit and a load for its HW (the produce purgatory). */
  readonly parked: ParkedOperations;
  /** shutdown() has begun: nothing is led here any more, and a write answered now was cut by it. */
  isShuttingDown(): boolean;
  /** Whether this node may act as a leader now (its session; ReplicaManagerOptions.leadershipGuard). */
  isLeadershipActive(): boolean;
  reportError(error: unknown, what: string): void;
}

/**
 * The partitions of `__consumer_offsets` as the group coordinator writes them (Kafka's
 * PartitionWriter, over ReplicaManager), on the node that leads them:
 *
 * - `append`: records appended as the leader at a leader epoch, resolved once the HW covers them (acks=-1,
 *   the leader's fsync included), rejected NOT_LEADER_OR_FOLLOWER once the epoch is gone here;
 * - `awaitHighWatermark`: resolved once the HW reaches an offset, rejected likewise;
 * - who is told that this node leads a partition, or no longer does (`updateLeadership`, `resign`): the
 *   offsets listener, with a ConsumerOffsetsWriter over the partition (OffsetsTopicLeadership), whose
 *   OffsetsPartition is these two calls bound to the partition and the epoch it was elected at.
 *
 * Without OffsetsTopicOptions the topic is still hosted (compacted) if the cluster assigns it, but nobody
 * is told of its leadership and nothing writes it.
 */
export class OffsetsTopicPartitions {
  private readonly leadership: OffsetsTopicLeadership | undefined;
  private readonly commitTimeoutMs: number;

  constructor(
    private readonly host: OffsetsTopicPartitionsHost,
    options: OffsetsTopicOptions | undefined,
  ) {
    this.leadership =
      options === undefined
        ? undefined
        : // A listener that throws must not stop the partition changes it is told of halfway.
          new OffsetsTopicLeadership(options, host.time, (error) =>
            host.reportError(error, 'the __consumer_offsets listener failed'),
          );
    this.commitTimeoutMs = options?.commitTimeoutMs ?? DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS;
  }

  /**
   * Tells the offsets listener whether `partition` (if of `__consumer_offsets`) is led here, and at which
   * epoch: after every change of its role.
   */
  updateLeadership(partition: Partition): void {
    if (this.leadership === undefined || partition.topic !== CONSUMER_OFFSETS_TOPIC) return;
    const isLeading = partition.isLeader && !this.host.isShuttingDown() && this.host.isLeadershipActive();
    this.leadership.update(this.offsetsPartitionOf(partition), isLeading, partition.leaderEpoch);
  }

  /** `partition` (if of `__consumer_offsets`) is no longer hosted here. */
  resign(partition: Partition): void {
    if (partition.topic === CONSUMER_OFFSETS_TOPIC) this.leadership?.resign(partition.partitionIndex);
  }

  /** Resigns every partition led here (the session is gone, or shutdown). */
  resignAll(): void {
    this.leadership?.resignAll();
  }

  /** Settles once every resigned store's writes and compaction have (before the logs close). */
  async settled(): Promise<void> {
    await this.leadership?.settled();
  }

  /**
   * A store's write (OffsetsPartition.appendCommitted): appended as leader at `leaderEpoch` with acks=-1
   * semantics and parked as a DelayedProduce in the produce purgatory until the HW passes it with the ISR
   * at the minimum and the leader's fsync covers it, or the commit timeout (REQUEST_TIMED_OUT). Once this
   * node no longer leads the partition at that epoch (a new epoch, a follower, unassigned, the session
   * lost, shutdown) it rejects NOT_LEADER_OR_FOLLOWER, whatever the purgatory found.
   */
  append(partition: Partition, records: readonly SimpleRecord[], leaderEpoch: number): Promise<void> {
    const key = partition.key;
    const { isLeading, notLeader, lookup } = this.leadershipAt(partition, leaderEpoch);
    if (!isLeading()) return Promise.reject(notLeader());
    let info: LogAppendInfo;
    try {
      info = partition.appendRecordsToLeader(records, -1);
    } catch (error) {
      return Promise.reject(error);
    }
    this.host.parked.afterLeaderAppend(key, partition.maybeIncrementLeaderHW());
    const status: ProducePartitionStatus = {
      key,
      requiredOffset: info.lastOffset + 1,
      acksPending: true,
      isFlushed: info.flushed === null,
      errorCode: ErrorCode.REQUEST_TIMED_OUT,
    };
    return this.host.parked.park<DelayedProduce, void>(
      [key],
      (respond) => {
        const op = new DelayedProduce(this.commitTimeoutMs, [status], lookup, respond);
        if (info.flushed !== null) op.awaitFlush(status, info.flushed);
        return op;
      },
      (_op, resolve, reject) => {
        if (!isLeading()) reject(notLeader());
        else if (status.errorCode === ErrorCode.NONE) resolve();
        else {
          reject(
            new CohortError(
              status.errorCode,
              status.errorCode === ErrorCode.REQUEST_TIMED_OUT
                ? `${key}: not committed within ${this.commitTimeoutMs} ms`
                : `${key}: the write was not committed`,
            ),
          );
        }
      },
    );
  }

  /**
   * A store's wait for its load to be committed (OffsetsPartition.awaitHighWatermark): parked as a
   * DelayedHighWatermark in the produce purgatory, under the partition's key, until the HW reaches
   * `offset`; rejected NOT_LEADER_OR_FOLLOWER once this node no longer leads the partition at `leaderEpoch`
   * (every such change checks the key's watchers; shutdown completes every parked operation).
   */
  awaitHighWatermark(partition: Partition, offset: number, leaderEpoch: number): Promise<void> {
    const { isLeading, notLeader, lookup } = this.leadershipAt(partition, leaderEpoch);
    if (!isLeading()) return Promise.reject(notLeader());
    if (partition.highWatermark >= offset) return Promise.resolve();
    return this.host.parked.park<DelayedHighWatermark, void>(
      [partition.key],
      (respond) => new DelayedHighWatermark(MAX_DELAY_MS, partition.key, offset, lookup, respond),
      (op, resolve, reject) => {
        if (!isLeading()) reject(notLeader());
        else if (op.errorCode === ErrorCode.NONE) resolve();
        else reject(new CohortError(op.errorCode, `${partition.key}: the HW did not reach ${offset}`));
      },
    );
  }

  /** The partition as its store sees it: its log and HW, and the two calls above bound to it. */
  private offsetsPartitionOf(partition: Partition): OffsetsPartition & { readonly partitionIndex: number } {
    return {
      key: partition.key,
      partitionIndex: partition.partitionIndex,
      log: partition.log,
      get highWatermark() {
        return partition.highWatermark;
      },
      appendCommitted: (records: readonly SimpleRecord[], leaderEpoch: number) =>
        this.append(partition, records, leaderEpoch),
      awaitHighWatermark: (offset: number, leaderEpoch: number) =>
        this.awaitHighWatermark(partition, offset, leaderEpoch),
    };
  }

  /**
   * Whether this node still leads `partition` at `leaderEpoch` (not shutting down, the same replica, its
   * leader at that epoch, the session active), the error a store's call gets once it does not, and the
   * partition as a delayed operation sees it: gone once it is no longer led here at the epoch.
   */
  private leadershipAt(
    partition: Partition,
    leaderEpoch: number,
  ): { isLeading: () => boolean; notLeader: () => CohortError; lookup: PartitionLookup } {
    const key = partition.key;
    const isLeading = (): boolean =>
      !this.host.isShuttingDown() &&
      this.host.partitions.getPartition(key) === partition &&
      partition.isLeader &&
      partition.leaderEpoch === leaderEpoch &&
      this.host.isLeadershipActive();
    const notLeader = (): CohortError =>
      new CohortError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `node ${this.host.nodeId} does not lead ${key} at leader epoch ${leaderEpoch}`,
      );
    return { isLeading, notLeader, lookup: { getPartition: () => (isLeading() ? partition : undefined) } };
  }
}
