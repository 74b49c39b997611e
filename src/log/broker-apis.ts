import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  NO_LEADER_EPOCH,
  UNDEFINED_EPOCH_OFFSET,
} from './broker-protocol';
import type {
  BrokerRequestContext,
  EpochEndOffset,
  FetchableTopicResponse,
  FetchPartitionData,
  FetchRequest,
  FetchResponse,
  FetchTopic,
  ListOffsetsPartitionResponse,
  ListOffsetsRequest,
  ListOffsetsResponse,
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse,
  ProducePartitionData,
  ProducePartitionResponse,
  ProduceRecord,
  ProduceRequest,
  ProduceResponse,
} from './broker-protocol';
import { DelayedFetch } from './delayed-fetch';
import type { FetchParams, FetchPartitionStatus } from './delayed-fetch';
import { DelayedProduce, flushErrorCode } from './delayed-produce';
import type { ProducePartitionStatus } from './delayed-produce';
import { epochEndOffset } from './leader-epochs';
import type { ParkedOperations } from './parked-operations';
import type { Partition } from './partition';
import { replicaAuthorizationError } from './replica-authorization';
import type { LogAppendInfo, LogReadInfo, LogRecord, SimpleRecord } from './storage';
import { RESERVED_TOPIC_NAMES, topicPartitionKey } from './topic-partition';
import type { TopicRegistry } from './topic-registry';

/** What the requests need of the node that serves them (ReplicaManager). */
export interface BrokerApisHost {
  readonly time: Time;
  /** The hosted partitions, and why one is not hosted here. */
  readonly partitions: TopicRegistry;
  /** Where a Produce waits for acks=-1 and a Fetch for min_bytes. */
  readonly parked: ParkedOperations;
  /** Replication must come from the node it names (BrokerConfig.requireAuthenticatedReplicas). */
  readonly requireAuthenticatedReplicas: boolean;
  /** Requests are refused (NOT_LEADER_OR_FOLLOWER) from shutdown on. */
  isShutdown(): boolean;
  /** Whether this node may act as a leader now (its session): a leader without one takes no writes. */
  isLeadershipActive(): boolean;
  /** A follower's fetch changed its leader's ISR; `isHwIncreased`: the HW moved with it. */
  afterIsrChange(partition: Partition, isrBefore: readonly number[], isHwIncreased: boolean): void;
}

/** A partition's part of a Produce, as processed. */
interface ProduceEntry {
  readonly response: { -readonly [K in keyof ProducePartitionResponse]: ProducePartitionResponse[K] };
  readonly key: string;
  readonly info: LogAppendInfo | null;
}

const NO_RECORDS: readonly LogRecord[] = Object.freeze([]);

/**
 * The requests on this node's partitions (Kafka's KafkaApis, with ReplicaManager's `appendRecords` and
 * `fetchMessages`): Produce, Fetch, ListOffsets and OffsetForLeaderEpoch, each checked, run on the hosted
 * partitions and answered, at once or once what it waits for has happened.
 *
 * Produce (`appendRecords`): acks must be 0, 1 or -1 (else INVALID_REQUIRED_ACKS everywhere). Each
 * partition appends on its leader (Partition.appendRecordsToLeader); the append wakes parked follower
 * Fetches of that partition and, if the HW moved (an ISR of one), consumer Fetches and DelayedProduces.
 * - acks=0 answers at once with what happened;
 * - acks=1 answers once the leader's fsync covers the records (the flush policy's promise);
 * - acks=-1 parks a DelayedProduce on every appended partition until the ISR has the records and the
 *   leader has fsynced them, or `timeoutMs` passes (REQUEST_TIMED_OUT).
 *
 * Fetch (`fetchMessages`): reads every partition (a consumer below the HW, a follower below the LEO, at
 * most `maxBytes` in all but always the first record found, KIP-74). A follower's fetch offset also
 * updates the leader's view of it, which may grow the ISR and move the HW, completing DelayedProduces
 * and consumer DelayedFetches. If fewer than `minBytes` were found, no partition failed and `maxWaitMs`
 * > 0, a DelayedFetch parks on every partition.
 *
 * Every parked call is released when its caller goes away (the context's onCancel) and answered at
 * `shutdown()`. All of this runs on one event loop: an append, a read and the wake-ups it causes happen
 * without interleaving; re-entrancy (a completion that triggers another) is the purgatory's business.
 */
export class BrokerApis {
  /** Operations that expired, by kind (Kafka's ExpiresPerSec meters, as counts). */
  readonly expired = { produce: 0, consumerFetch: 0, followerFetch: 0 };
  /** Reads shared by the DelayedFetches one event completes (see `sharedRead`). */
  private readonly completionReads = new Map<string, LogReadInfo>();
  private readonly clearCompletionReads = (): void => this.completionReads.clear();

  constructor(private readonly host: BrokerApisHost) {}

  /** A log was truncated, cut by retention or closed: the shared reads may name records that are gone. */
  clearSharedReads(): void {
    this.completionReads.clear();
  }

  produce(request: ProduceRequest, context: BrokerRequestContext = {}): Promise<ProduceResponse> {
    const { acks, timeoutMs } = request;
    let requestError = ErrorCode.NONE;
    if (acks !== 0 && acks !== 1 && acks !== -1) requestError = ErrorCode.INVALID_REQUIRED_ACKS;
    else if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) requestError = ErrorCode.INVALID_REQUEST;
    const entries: ProduceEntry[] = [];
    const response: ProduceResponse = {
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((data) => {
          const entry = this.appendToLocalLog(topic.name, data, acks, requestError);
          entries.push(entry);
          return entry.response;
        }),
      })),
    };
    if (acks === 0 || requestError !== ErrorCode.NONE) return Promise.resolve(response);
    if (acks === 1) return this.awaitFlushes(entries).then(() => response);
    return this.delayProduce(timeoutMs, entries, response, context);
  }

  private appendToLocalLog(
    topic: string,
    data: ProducePartitionData,
    acks: number,
    requestError: ErrorCode,
  ): ProduceEntry {
    const { partitionIndex, records } = data;
    const key = topicPartitionKey(topic, partitionIndex);
    const failed = (errorCode: ErrorCode): ProduceEntry => ({
      response: { partitionIndex, errorCode, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1 },
      key,
      info: null,
    });
    if (requestError !== ErrorCode.NONE) return failed(requestError);
    if (this.host.isShutdown()) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // Only the group layer writes the internal topic (through its stores), as in Kafka.
    if (RESERVED_TOPIC_NAMES.has(topic)) return failed(ErrorCode.INVALID_TOPIC_EXCEPTION);
    const partition = this.host.partitions.getPartition(key);
    if (partition === undefined) {
      return failed(this.host.partitions.unhostedPartitionError(topic, partitionIndex));
    }
    // A leader whose session is gone may already have been replaced: it must not take writes.
    if (partition.isLeader && !this.host.isLeadershipActive())
      return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let info: LogAppendInfo;
    try {
      info =
        data.clientBatch === undefined
          ? partition.appendRecordsToLeader(records.map(toSimpleRecord), acks, data.receivedBatchBytes)
          : partition.appendClientBatchToLeader(data.clientBatch, acks);
    } catch (error) {
      if (!(error instanceof CohortError)) throw error;
      const entry = failed(error.code);
      entry.response.logStartOffset = partition.logStartOffset;
      return entry;
    }
    // The HW moves on append only with an ISR of one.
    this.host.parked.afterLeaderAppend(key, partition.maybeIncrementLeaderHW());
    return {
      response: {
        partitionIndex,
        errorCode: ErrorCode.NONE,
        baseOffset: info.firstOffset,
        logAppendTimeMs: info.logAppendTimeMs,
        logStartOffset: info.logStartOffset,
      },
      key,
      info,
    };
  }

  /** acks=1: every appended partition is answered once the leader's fsync covers it. */
  private async awaitFlushes(entries: readonly ProduceEntry[]): Promise<void> {
    await Promise.all(
      entries.map(async (entry) => {
        const flushed = entry.info === null ? null : entry.info.flushed;
        if (flushed === null) return;
        try {
          await flushed;
        } catch (error) {
          entry.response.errorCode = flushErrorCode(error);
        }
      }),
    );
  }

  private delayProduce(
    timeoutMs: number,
    entries: readonly ProduceEntry[],
    response: ProduceResponse,
    context: BrokerRequestContext,
  ): Promise<ProduceResponse> {
    const appended = entries.filter((entry) => entry.info !== null);
    if (appended.length === 0) return Promise.resolve(response);
    const statuses: ProducePartitionStatus[] = appended.map((entry) => ({
      key: entry.key,
      requiredOffset: entry.info!.lastOffset + 1,
      acksPending: true,
      isFlushed: entry.info!.flushed === null,
      errorCode: ErrorCode.REQUEST_TIMED_OUT,
    }));
    return this.host.parked.park<DelayedProduce, ProduceResponse>(
      statuses.map((status) => status.key),
      (respond) => {
        const op = new DelayedProduce(timeoutMs, statuses, this.host.partitions, respond, () => {
          this.expired.produce++;
        });
        for (let i = 0; i < appended.length; i++) {
          const flushed = appended[i]!.info!.flushed;
          if (flushed !== null) op.awaitFlush(statuses[i]!, flushed);
        }
        return op;
      },
      (_op, resolve) => {
        for (let i = 0; i < appended.length; i++) appended[i]!.response.errorCode = statuses[i]!.errorCode;
        resolve(response);
      },
      context,
    );
  }

  // --- Fetch ---

  fetch(request: FetchRequest, context: BrokerRequestContext = {}): Promise<FetchResponse> {
    const { replicaId, maxWaitMs, minBytes, maxBytes } = request;
    if (
      ![replicaId, maxWaitMs, minBytes, maxBytes].every(Number.isSafeInteger) ||
      maxWaitMs < 0 ||
      minBytes < 0 ||
      maxBytes < 0
    ) {
      return Promise.resolve({ errorCode: ErrorCode.INVALID_REQUEST, responses: [] });
    }
    const authorizationError = replicaAuthorizationError(
      replicaId,
      context,
      this.host.requireAuthenticatedReplicas,
    );
    if (authorizationError !== ErrorCode.NONE) {
      return Promise.resolve({ errorCode: authorizationError, responses: [] });
    }
    const params: FetchParams = {
      replicaId,
      isFromFollower: replicaId >= 0,
      minBytes,
      maxBytes,
      servesBatches: request.servesBatches === true,
    };
    const statuses: FetchPartitionStatus[] = [];
    const read = this.readFromLocalLog(params, request.topics, statuses);
    if (maxWaitMs === 0 || statuses.length === 0 || read.bytesReadable >= minBytes || read.hasError) {
      return Promise.resolve(read.response);
    }
    return this.host.parked.park<DelayedFetch, FetchResponse>(
      statuses.map((status) => status.key),
      (respond) =>
        new DelayedFetch(maxWaitMs, params, statuses, this.host.partitions, respond, () => {
          if (params.isFromFollower) this.expired.followerFetch++;
          else this.expired.consumerFetch++;
        }),
      (_op, resolve) => resolve(this.readFromLocalLog(params, request.topics, null).response),
      context,
    );
  }

  /**
   * Reads every requested partition (Kafka's readFromLocalLog). With `statuses` (the first read of a
   * Fetch) it also records where each fetch offset sits, for a DelayedFetch, and applies a follower's
   * fetch offsets to the leader's replication state; the re-read at completion passes null.
   */
  private readFromLocalLog(
    params: FetchParams,
    topics: readonly FetchTopic[],
    statuses: FetchPartitionStatus[] | null,
  ): { response: FetchResponse; bytesReadable: number; hasError: boolean } {
    let bytesRemaining = params.maxBytes;
    let bytesReadable = 0;
    let minOneMessage = true;
    let hasError = false;
    const nowMs = this.host.time.monotonicMs();
    const responses = topics.map((topic): FetchableTopicResponse => ({
      name: topic.name,
      partitions: topic.partitions.map((request): FetchPartitionData => {
        const key = topicPartitionKey(topic.name, request.partitionIndex);
        const partition = this.host.partitions.getPartition(key);
        const failed = (errorCode: ErrorCode): FetchPartitionData => {
          hasError = true;
          return {
            partitionIndex: request.partitionIndex,
            errorCode,
            highWatermark: partition?.highWatermark ?? -1,
            logStartOffset: partition?.logStartOffset ?? -1,
            records: NO_RECORDS,
          };
        };
        if (this.host.isShutdown()) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
        if (partition === undefined) {
          return failed(this.host.partitions.unhostedPartitionError(topic.name, request.partitionIndex));
        }
        const epochError = partition.checkCurrentLeaderEpoch(request.currentLeaderEpoch);
        if (epochError !== ErrorCode.NONE) return failed(epochError);
        if (params.isFromFollower && !partition.isFollowerReplica(params.replicaId)) {
          return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
        }
        if (!Number.isSafeInteger(request.partitionMaxBytes) || request.partitionMaxBytes < 0) {
          return failed(ErrorCode.INVALID_FETCH_SIZE);
        }
        let info: LogReadInfo;
        try {
          const maxBytes = Math.min(request.partitionMaxBytes, bytesRemaining);
          info =
            statuses === null
              ? this.sharedRead(partition, request.fetchOffset, maxBytes, params, minOneMessage)
              : partition.read(
                  request.fetchOffset,
                  maxBytes,
                  params.isFromFollower,
                  minOneMessage,
                  !params.servesBatches,
                );
          bytesRemaining = Math.max(0, bytesRemaining - info.sizeInBytes);
          bytesReadable += info.sizeInBytes;
          if (info.sizeInBytes > 0) minOneMessage = false;
          if (statuses !== null) {
            statuses.push({
              key,
              partitionMaxBytes: request.partitionMaxBytes,
              startOffsetMetadata: info.fetchOffsetMetadata,
            });
          }
        } catch (error) {
          if (!(error instanceof CohortError)) throw error;
          return failed(error.code);
        }
        if (statuses !== null && params.isFromFollower) {
          this.updateFollowerFetchState(partition, params.replicaId, request.fetchOffset, nowMs);
        }
        return {
          partitionIndex: request.partitionIndex,
          errorCode: ErrorCode.NONE,
          highWatermark: partition.highWatermark,
          logStartOffset: partition.logStartOffset,
          ...(params.servesBatches
            ? { records: NO_RECORDS, batches: info.batches }
            : { records: info.records }),
        };
      }),
    }));
    return { response: { errorCode: ErrorCode.NONE, responses }, bytesReadable, hasError };
  }

  /**
   * A read for a completing DelayedFetch, shared with the identical reads of the same wake-up: when a
   * produce wakes a thousand consumers parked at one offset, the log is read once, not a thousand times.
   * The key holds everything the result depends on in an append-only log (the readable end included, so
   * an append or a HW move makes a new key); truncation and retention clear the cache, and it lives only
   * until the current task's microtasks run.
   */
  private sharedRead(
    partition: Partition,
    fetchOffset: number,
    maxBytes: number,
    params: FetchParams,
    minOneMessage: boolean,
  ): LogReadInfo {
    const { isFromFollower, servesBatches } = params;
    const end = isFromFollower ? partition.logEndOffset : partition.highWatermark;
    const cacheKey = `${partition.key}:${fetchOffset}:${end}:${maxBytes}:${minOneMessage ? 1 : 0}:${isFromFollower ? 1 : 0}:${servesBatches ? 1 : 0}`;
    let info = this.completionReads.get(cacheKey);
    if (info === undefined) {
      info = partition.read(fetchOffset, maxBytes, isFromFollower, minOneMessage, !servesBatches);
      if (this.completionReads.size === 0) queueMicrotask(this.clearCompletionReads);
      this.completionReads.set(cacheKey, info);
    }
    return info;
  }

  private updateFollowerFetchState(
    partition: Partition,
    replicaId: number,
    fetchOffset: number,
    nowMs: number,
  ): void {
    const isrBefore = partition.isr;
    const isHwIncreased = partition.updateFollowerFetchState(replicaId, fetchOffset, nowMs);
    if (partition.isr !== isrBefore) this.host.afterIsrChange(partition, isrBefore, isHwIncreased);
    else if (isHwIncreased) this.host.parked.checkAndComplete(partition.key);
  }

  // --- ListOffsets ---

  listOffsets(request: ListOffsetsRequest): Promise<ListOffsetsResponse> {
    return Promise.resolve({
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((query): ListOffsetsPartitionResponse => {
          const { partitionIndex, timestamp, currentLeaderEpoch } = query;
          const answer = (
            errorCode: ErrorCode,
            offset = -1,
            timestampMs = -1,
          ): ListOffsetsPartitionResponse => ({
            partitionIndex,
            errorCode,
            offset,
            timestamp: timestampMs,
          });
          const partition = this.host.partitions.getPartition(topicPartitionKey(topic.name, partitionIndex));
          if (partition === undefined) {
            return answer(this.host.partitions.unhostedPartitionError(topic.name, partitionIndex));
          }
          const epochError = partition.checkCurrentLeaderEpoch(currentLeaderEpoch);
          if (epochError !== ErrorCode.NONE) return answer(epochError);
          // Offsets are a leader's answer, as in Kafka: a follower's HW may lag the leader's.
          if (!partition.isLeader || this.host.isShutdown()) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          if (timestamp === LATEST_TIMESTAMP) return answer(ErrorCode.NONE, partition.highWatermark);
          if (timestamp === EARLIEST_TIMESTAMP) return answer(ErrorCode.NONE, partition.logStartOffset);
          if (!Number.isSafeInteger(timestamp) || timestamp < 0) return answer(ErrorCode.INVALID_REQUEST);
          const found = partition.log.offsetForTimestamp(timestamp);
          // Only what a consumer may read: a record at or above the HW is not there yet for it.
          if (found === null || found.offset >= partition.highWatermark) return answer(ErrorCode.NONE);
          return answer(ErrorCode.NONE, found.offset, found.timestampMs);
        }),
      })),
    });
  }

  // --- OffsetForLeaderEpoch ---

  /**
   * For each partition, the end offset on this leader of the largest epoch at or below the one asked for
   * (Kafka's OffsetsForLeaderEpoch, KIP-101/279): where a new follower's log must be cut so that it is a
   * prefix of this one. Only the leader answers (NOT_LEADER_OR_FOLLOWER), after the same epoch check as
   * Fetch. From a follower (`replicaId` >= 0) it is replication traffic: the caller must have
   * authenticated as that node (else CLUSTER_AUTHORIZATION_FAILED) and be one of the partition's replicas
   * (else NOT_LEADER_OR_FOLLOWER).
   */
  offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    context: BrokerRequestContext = {},
  ): Promise<OffsetForLeaderEpochResponse> {
    const { replicaId } = request;
    const authorizationError = replicaAuthorizationError(
      replicaId,
      context,
      this.host.requireAuthenticatedReplicas,
    );
    return Promise.resolve({
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((query): EpochEndOffset => {
          const answer = (
            errorCode: ErrorCode,
            leaderEpoch = NO_LEADER_EPOCH,
            endOffset = UNDEFINED_EPOCH_OFFSET,
          ): EpochEndOffset => ({ errorCode, partition: query.partition, leaderEpoch, endOffset });
          if (authorizationError !== ErrorCode.NONE) return answer(authorizationError);
          if (this.host.isShutdown()) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          const partition = this.host.partitions.getPartition(topicPartitionKey(topic.name, query.partition));
          if (partition === undefined)
            return answer(this.host.partitions.unhostedPartitionError(topic.name, query.partition));
          const epochError = partition.checkCurrentLeaderEpoch(query.currentLeaderEpoch);
          if (epochError !== ErrorCode.NONE) return answer(epochError);
          if (!partition.isLeader) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          if (replicaId >= 0 && !partition.isFollowerReplica(replicaId)) {
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          }
          const found = epochEndOffset(partition, query.leaderEpoch);
          return answer(ErrorCode.NONE, found.leaderEpoch, found.endOffset);
        }),
      })),
    });
  }
}

function toSimpleRecord(record: ProduceRecord): SimpleRecord {
  return {
    // proto3 sends 0 for "not set": the append time is used, as for a Kafka record without a timestamp.
    timestampMs: record.timestampMs === 0 ? undefined : record.timestampMs,
    key: record.key.length === 0 ? null : record.key,
    value: record.value,
    headers: record.headers,
  };
}
