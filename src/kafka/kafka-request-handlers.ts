import { CohortError, ErrorCode } from '../errors';
import type { JoinGroupRequest, RequestContext } from '../group/group-protocol';
import {
  CONSUMER_REPLICA_ID,
  DEFAULT_TOPIC_SETTING,
  type BrokerRequestContext,
  type FetchPartitionData,
  type ProducePartitionData,
  type ProduceRecord,
  type TopicMetadata,
} from '../log/broker-protocol';
import { RecordBatch } from '../log/storage';
import { COORDINATOR_KEY_TYPE_GROUP } from '../protocol/find-coordinator-messages';
import type { KafkaCore, KafkaNode } from './kafka-broker';
import { offsetFetchErrorResponse } from './kafka-error-response';
import {
  ADVERTISED_API_VERSIONS,
  API_VERSIONS,
  CREATE_TOPICS,
  DELETE_GROUPS,
  DESCRIBE_GROUPS,
  FETCH,
  FIND_COORDINATOR,
  HEARTBEAT,
  JOIN_GROUP,
  LEAVE_GROUP,
  LIST_GROUPS,
  LIST_OFFSETS,
  METADATA,
  OFFSET_COMMIT,
  OFFSET_FETCH,
  PRODUCE,
  SYNC_GROUP,
} from './protocol/kafka-apis';
import type { Struct } from './protocol/message-codec';
import type { RequestHeader } from './protocol/kafka-request';
import { CompressionCodec } from './records/compression';
import { decodeKafkaRecordBatches, type KafkaRecordBatch } from './records/kafka-record-batch';
import { KafkaRecordsError } from './records/kafka-records-error';
import { fromFetchedBatches, toProduceRecords } from './records/record-conversion';

/** A Produce with acks=0: Kafka sends no response, and neither does cohort. */
export const NO_RESPONSE = Symbol('no response');

/**
 * A Produce with acks=0 refused for some partition: no response can carry the code, so, as Kafka's
 * handleProduceRequest does, the connection is closed; the producer reconnects and refreshes its metadata
 * (a moved leader, a deleted topic) instead of sending into the void.
 */
export class UnansweredError {
  constructor(
    readonly errorCode: ErrorCode,
    readonly detail: string,
  ) {}
}

export type KafkaContext = RequestContext & BrokerRequestContext;

/** One API's handler: the decoded body of one version in, the response body out. */
export type KafkaHandler = (
  body: Struct,
  header: RequestHeader,
  context: KafkaContext,
) => Promise<Struct | typeof NO_RESPONSE | UnansweredError>;

/* The decoded shapes of the message tables (apis/*.ts), as the handlers read them. */
interface NamedPartitions<P> {
  name: string;
  partitions: P[];
}

/**
 * The topics Kafka's Metadata flags internal (Topic.INTERNAL_TOPICS): a fixed set, not every `__` name. A
 * user's `__audit` topic is an ordinary one, which a consumer subscribing by pattern must still see.
 */
const INTERNAL_TOPICS: ReadonlySet<string> = new Set(['__consumer_offsets', '__transaction_state']);

const bytesOrEmpty = (value: Buffer | null): Buffer => value ?? Buffer.alloc(0);
const NO_PRODUCE_RECORDS: readonly ProduceRecord[] = Object.freeze([]);
const NO_BATCHES: readonly RecordBatch[] = Object.freeze([]);
const NO_BYTES = Buffer.alloc(0);
const nullIfEmpty = (value: string): string | null => (value === '' ? null : value);

/**
 * Kafka's request versions over cohort's core: each handler decodes nothing (the codec did), calls the same
 * log or coordinator method the gRPC door calls, and renames fields between Kafka's message tables and the
 * core's shapes, version differences included (null vs empty topic lists, v0–v3 joins without
 * MEMBER_ID_REQUIRED, the Kafka door's own addresses for every node).
 */
export function kafkaRequestHandlers(core: KafkaCore): ReadonlyMap<number, KafkaHandler> {
  const { broker, coordinator } = core;

  const handlers: [number, KafkaHandler][] = [
    [
      API_VERSIONS.apiKey,
      async () => ({ errorCode: ErrorCode.NONE, apiKeys: ADVERTISED_API_VERSIONS, throttleTimeMs: 0 }),
    ],

    [
      METADATA.apiKey,
      async (body, header) => {
        const requested = body.topics as { name: string }[] | null;
        const isAllTopics = requested === null || (header.apiVersion === 0 && requested.length === 0);
        const names = isAllTopics ? [] : requested.map((topic) => topic.name);
        let view = await broker.metadata({ topics: names });
        const isAutoCreateAllowed =
          core.isAutoCreateTopicsEnabled && (header.apiVersion < 4 || body.allowAutoTopicCreation === true);
        const missing = view.topics.filter((t) => t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        if (!isAllTopics && isAutoCreateAllowed && missing.length > 0) {
          // Kafka's default (auto.create.topics.enable): the topic is created with the broker's defaults.
          await broker.createTopics({
            topics: missing.map((t) => ({
              name: t.name,
              numPartitions: DEFAULT_TOPIC_SETTING,
              replicationFactor: DEFAULT_TOPIC_SETTING,
            })),
          });
          view = await broker.metadata({ topics: names });
        }
        const topics = isAllTopics || names.length > 0 ? view.topics : [];
        const brokers = view.brokers
          .map((node) => core.kafkaNode(node.nodeId))
          .filter((node): node is KafkaNode => node !== undefined);
        return {
          throttleTimeMs: 0,
          brokers: brokers.map((node) => ({ ...node, rack: null })),
          clusterId: core.clusterId,
          controllerId: core.controllerId(),
          topics: topics.map((topic: TopicMetadata) => ({
            errorCode: topic.errorCode,
            name: topic.name,
            isInternal: INTERNAL_TOPICS.has(topic.name),
            partitions: topic.partitions.map((p) => ({
              errorCode: p.errorCode,
              partitionIndex: p.partitionIndex,
              leaderId: p.leaderId,
              replicaNodes: p.replicaNodes,
              isrNodes: p.isrNodes,
            })),
          })),
        };
      },
    ],

    [
      PRODUCE.apiKey,
      async (body, header, context) => {
        const acks = body.acks as number;
        const refused = new Map<string, ErrorCode>();
        const topicData = body.topicData as {
          name: string;
          partitionData: { index: number; records: Buffer | null }[];
        }[];
        const topics = topicData.map((topic) => ({
          name: topic.name,
          partitions: topic.partitionData.flatMap((partition): ProducePartitionData[] => {
            try {
              // Kafka's ProduceRequest.validateRecords, then LogValidator's checks of a client's batch. A
              // partition without records is invalid (INVALID_RECORD), not damaged: CORRUPT_MESSAGE is
              // retriable, and a client would resend the same nothing forever.
              if (partition.records === null || partition.records.length === 0)
                throw new KafkaRecordsError('invalid-record', 'a partition must carry one record batch');
              // The usual batch (one, uncompressed, not idempotent, its records in order with their
              // timestamps): the log stores it as it came. Anything else is decoded, and refused or
              // stored as records, below.
              const clientBatch = RecordBatch.fromClientBatch(partition.records);
              if (clientBatch !== null) {
                return [{ partitionIndex: partition.index, records: NO_PRODUCE_RECORDS, clientBatch }];
              }
              const batches = decodeKafkaRecordBatches(partition.records);
              // Produce v3+ carries exactly one batch per partition (Kafka refuses more as INVALID_RECORD).
              if (batches.length !== 1) {
                throw new KafkaRecordsError('invalid-record', `${batches.length} batches in one partition`);
              }
              const [batch] = batches as [KafkaRecordBatch];
              if (header.apiVersion < 7 && batch.compression === CompressionCodec.ZSTD) {
                throw new KafkaRecordsError(
                  'zstd-before-produce-v7',
                  `zstd in Produce v${header.apiVersion}`,
                );
              }
              // The offsets a batch spans must be its records, one each: the log gives them offsets by count.
              if (batch.lastOffsetDelta + 1 !== batch.records.length) {
                throw new KafkaRecordsError(
                  'invalid-record',
                  `lastOffsetDelta ${batch.lastOffsetDelta} with ${batch.records.length} records`,
                );
              }
              return [
                {
                  partitionIndex: partition.index,
                  records: toProduceRecords(batches),
                  // The log's max.message.bytes bounds the batch as sent (compressed), as in Kafka.
                  receivedBatchBytes: partition.records.length,
                },
              ];
            } catch (error) {
              if (!(error instanceof KafkaRecordsError)) throw error;
              refused.set(`${topic.name}\0${partition.index}`, error.code);
              return [];
            }
          }),
        }));
        const produced = await broker.produce({ acks, timeoutMs: body.timeoutMs as number, topics }, context);
        if (acks === 0) {
          const failed = [
            ...[...refused].map(([key, code]) => [key.replace('\0', '-'), code] as const),
            ...produced.topics.flatMap((t) =>
              t.partitions
                .filter((p) => p.errorCode !== ErrorCode.NONE)
                .map((p) => [`${t.name}-${p.partitionIndex}`, p.errorCode] as const),
            ),
          ];
          if (failed.length === 0) return NO_RESPONSE;
          return new UnansweredError(
            failed[0]![1],
            `Produce with acks=0 failed: ${failed.map(([tp, code]) => `${tp} ${ErrorCode[code]}`).join(', ')}`,
          );
        }
        const answered = new Map(
          produced.topics.map((t) => [t.name, new Map(t.partitions.map((p) => [p.partitionIndex, p]))]),
        );
        return {
          responses: topicData.map((topic) => ({
            name: topic.name,
            partitionResponses: topic.partitionData.map((partition) => {
              const code = refused.get(`${topic.name}\0${partition.index}`);
              const result = answered.get(topic.name)?.get(partition.index);
              if (code !== undefined || result === undefined) {
                return {
                  index: partition.index,
                  errorCode: code ?? ErrorCode.UNKNOWN_SERVER_ERROR,
                  baseOffset: -1,
                };
              }
              return {
                index: partition.index,
                errorCode: result.errorCode,
                baseOffset: result.baseOffset,
                logAppendTimeMs: -1,
                logStartOffset: result.logStartOffset,
              };
            }),
          })),
          throttleTimeMs: 0,
        };
      },
    ],

    [
      FETCH.apiKey,
      async (body, _header, context) => {
        const topics = body.topics as {
          topic: string;
          partitions: { partition: number; fetchOffset: number; partitionMaxBytes: number }[];
        }[];
        // Always a consumer's fetch: a replica id from a Kafka client is not a cohort node's proof.
        const fetched = await broker.fetch(
          {
            replicaId: CONSUMER_REPLICA_ID,
            maxWaitMs: body.maxWaitMs as number,
            minBytes: body.minBytes as number,
            maxBytes: body.maxBytes as number,
            // Batches kept in Kafka's layout go back out as they are stored.
            servesBatches: true,
            topics: topics.map((t) => ({
              name: t.topic,
              partitions: t.partitions.map((p) => ({
                partitionIndex: p.partition,
                fetchOffset: p.fetchOffset,
                partitionMaxBytes: p.partitionMaxBytes,
              })),
            })),
          },
          context,
        );
        const maxBytesOf = new Map(
          topics.flatMap((t) =>
            t.partitions.map((p) => [`${t.topic}\0${p.partition}`, p.partitionMaxBytes] as const),
          ),
        );
        const fetchOffsetOf = new Map(
          topics.flatMap((t) =>
            t.partitions.map((p) => [`${t.topic}\0${p.partition}`, p.fetchOffset] as const),
          ),
        );
        return {
          throttleTimeMs: 0,
          responses: fetched.responses.map((topic) => ({
            topic: topic.name,
            partitions: topic.partitions.map((p: FetchPartitionData) => {
              let errorCode = fetched.errorCode !== ErrorCode.NONE ? fetched.errorCode : p.errorCode;
              let records: Buffer = NO_BYTES;
              try {
                records = fromFetchedBatches(
                  p.batches ?? NO_BATCHES,
                  fetchOffsetOf.get(`${topic.name}\0${p.partitionIndex}`) ?? 0,
                  p.highWatermark,
                  { maxBytes: maxBytesOf.get(`${topic.name}\0${p.partitionIndex}`) ?? 0 },
                );
              } catch (error) {
                // A stored batch that fails its decode (damage the read handed on unchecked) fails its
                // own partition, as a read error does, not the whole Fetch.
                if (!(error instanceof CohortError)) throw error;
                errorCode = error.code;
              }
              return {
                partitionIndex: p.partitionIndex,
                errorCode,
                highWatermark: p.highWatermark,
                // No transactions: everything below the high watermark is stable.
                lastStableOffset: p.highWatermark,
                logStartOffset: p.logStartOffset,
                abortedTransactions: null,
                records,
              };
            }),
          })),
        };
      },
    ],

    [
      LIST_OFFSETS.apiKey,
      async (body) => {
        const topics = body.topics as NamedPartitions<{ partitionIndex: number; timestamp: number }>[];
        const listed = await broker.listOffsets({
          topics: topics.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({
              partitionIndex: p.partitionIndex,
              timestamp: p.timestamp,
            })),
          })),
        });
        return {
          throttleTimeMs: 0,
          topics: listed.topics.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({ ...p })),
          })),
        };
      },
    ],

    [
      FIND_COORDINATOR.apiKey,
      async (body) => {
        const keyType = body.keyType as number;
        if (keyType !== COORDINATOR_KEY_TYPE_GROUP) {
          // Transactional ids have no coordinator until transactions are served.
          return {
            throttleTimeMs: 0,
            errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
            errorMessage: null,
            nodeId: -1,
            host: '',
            port: -1,
          };
        }
        const { coordinators } = await core.findCoordinator({ keyType, keys: [body.key as string] });
        const found = coordinators[0];
        const node =
          found === undefined || found.errorCode !== ErrorCode.NONE
            ? undefined
            : core.kafkaNode(found.nodeId);
        if (node === undefined) {
          return {
            throttleTimeMs: 0,
            errorCode:
              found?.errorCode === undefined || found.errorCode === ErrorCode.NONE
                ? ErrorCode.COORDINATOR_NOT_AVAILABLE
                : found.errorCode,
            errorMessage: found === undefined || found.errorMessage === '' ? null : found.errorMessage,
            nodeId: -1,
            host: '',
            port: -1,
          };
        }
        return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, ...node };
      },
    ],

    [
      JOIN_GROUP.apiKey,
      async (body, header, context) => {
        const request: JoinGroupRequest = {
          groupId: body.groupId as string,
          memberId: body.memberId as string,
          groupInstanceId: (body.groupInstanceId as string | null) ?? '',
          sessionTimeoutMs: body.sessionTimeoutMs as number,
          // v0 has none: Kafka takes the session timeout.
          rebalanceTimeoutMs:
            (body.rebalanceTimeoutMs as number) === -1
              ? (body.sessionTimeoutMs as number)
              : (body.rebalanceTimeoutMs as number),
          protocolType: body.protocolType as string,
          protocols: body.protocols as { name: string; metadata: Buffer }[],
          clientId: header.clientId ?? '',
          reason: '',
        };
        let joined = await coordinator.joinGroup(request, context);
        // Before v4 a client cannot be told MEMBER_ID_REQUIRED (KIP-394): Kafka's coordinator then takes the
        // member in at once. The door does the second round itself, with the id the coordinator gave.
        if (header.apiVersion < 4 && joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
          joined = await coordinator.joinGroup({ ...request, memberId: joined.memberId }, context);
        }
        return {
          throttleTimeMs: 0,
          errorCode: joined.errorCode,
          generationId: joined.generationId,
          protocolName: joined.protocolName,
          leader: joined.leaderId,
          memberId: joined.memberId,
          members: joined.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: nullIfEmpty(m.groupInstanceId),
            metadata: m.metadata,
          })),
        };
      },
    ],

    [
      SYNC_GROUP.apiKey,
      async (body, _header, context) => {
        const synced = await coordinator.syncGroup(
          {
            groupId: body.groupId as string,
            generationId: body.generationId as number,
            memberId: body.memberId as string,
            groupInstanceId: (body.groupInstanceId as string | null) ?? '',
            protocolType: '',
            protocolName: '',
            assignments: body.assignments as { memberId: string; assignment: Buffer }[],
          },
          context,
        );
        return { throttleTimeMs: 0, errorCode: synced.errorCode, assignment: synced.assignment };
      },
    ],

    [
      HEARTBEAT.apiKey,
      async (body, _header, context) => {
        const { errorCode } = await coordinator.heartbeat(
          {
            groupId: body.groupId as string,
            generationId: body.generationId as number,
            memberId: body.memberId as string,
            groupInstanceId: (body.groupInstanceId as string | null) ?? '',
          },
          context,
        );
        return { throttleTimeMs: 0, errorCode };
      },
    ],

    [
      LEAVE_GROUP.apiKey,
      async (body, _header, context) => {
        const left = await coordinator.leaveGroup(
          {
            groupId: body.groupId as string,
            members: [{ memberId: body.memberId as string, groupInstanceId: '', reason: '' }],
          },
          context,
        );
        const errorCode =
          left.errorCode !== ErrorCode.NONE ? left.errorCode : (left.members[0]?.errorCode ?? ErrorCode.NONE);
        return { throttleTimeMs: 0, errorCode };
      },
    ],

    [
      OFFSET_COMMIT.apiKey,
      async (body, _header, context) => {
        const topics = body.topics as NamedPartitions<{
          partitionIndex: number;
          committedOffset: number;
          committedMetadata: string | null;
        }>[];
        const committed = await coordinator.offsetCommit(
          {
            groupId: body.groupId as string,
            generationId: body.generationId as number,
            memberId: body.memberId as string,
            groupInstanceId: '',
            topics: topics.map((t) => ({
              name: t.name,
              partitions: t.partitions.map((p) => ({
                partitionIndex: p.partitionIndex,
                committedOffset: p.committedOffset,
                committedLeaderEpoch: -1,
                committedMetadata: p.committedMetadata ?? '',
              })),
            })),
          },
          context,
        );
        return { throttleTimeMs: 0, topics: committed.topics };
      },
    ],

    [
      OFFSET_FETCH.apiKey,
      async (body, header, context) => {
        const topics = body.topics as { name: string; partitionIndexes: number[] }[] | null;
        // Null (v2+) asks for every committed partition; an empty list, as in Kafka, for none. The core reads
        // an empty list as every partition, so none is answered here.
        if (topics !== null && topics.length === 0)
          return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, topics: [] };
        const fetched = await coordinator.offsetFetch(
          { groupId: body.groupId as string, topics: topics ?? [], requireStable: false },
          context,
        );
        // v1 has no top-level error code: a group-level error (the coordinator loading, moved, or gone) comes
        // back without partitions, so Kafka answers every requested partition with it (an offset of -1 and
        // the code). Answered without them, a v1 client (kafka-python) reads "nothing committed" and resets.
        if (header.apiVersion < 2 && fetched.errorCode !== ErrorCode.NONE)
          return offsetFetchErrorResponse(body, header.apiVersion, fetched.errorCode);
        return {
          throttleTimeMs: 0,
          errorCode: fetched.errorCode,
          topics: fetched.topics.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({
              partitionIndex: p.partitionIndex,
              committedOffset: p.committedOffset,
              committedLeaderEpoch: p.committedLeaderEpoch,
              metadata: p.metadata,
              errorCode: p.errorCode,
            })),
          })),
        };
      },
    ],

    [
      CREATE_TOPICS.apiKey,
      async (body) => {
        const requested = body.topics as {
          name: string;
          numPartitions: number;
          replicationFactor: number;
          assignments: unknown[];
          configs: unknown[];
        }[];
        const refusal = (t: (typeof requested)[number]): [ErrorCode, string] | undefined => {
          if (t.assignments.length > 0)
            return [ErrorCode.INVALID_REQUEST, 'manual replica assignments are not supported'];
          if (t.configs.length > 0) return [ErrorCode.INVALID_CONFIG, 'topic configs are not supported'];
          if (body.validateOnly === true)
            return [ErrorCode.INVALID_REQUEST, 'validate_only is not supported'];
          return undefined;
        };
        const accepted = requested.filter((t) => refusal(t) === undefined);
        const created =
          accepted.length === 0
            ? { topics: [] }
            : await broker.createTopics({
                topics: accepted.map((t) => ({
                  name: t.name,
                  numPartitions: t.numPartitions,
                  replicationFactor: t.replicationFactor,
                })),
              });
        const results = new Map(created.topics.map((t) => [t.name, t]));
        return {
          throttleTimeMs: 0,
          topics: requested.map((t) => {
            const refused = refusal(t);
            if (refused !== undefined)
              return { name: t.name, errorCode: refused[0], errorMessage: refused[1] };
            const result = results.get(t.name);
            return {
              name: t.name,
              errorCode: result?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR,
              errorMessage: result === undefined || result.errorMessage === '' ? null : result.errorMessage,
            };
          }),
        };
      },
    ],

    [
      DESCRIBE_GROUPS.apiKey,
      async (body, _header, context) => {
        const described = await coordinator.describeGroups({ groups: body.groups as string[] }, context);
        return {
          throttleTimeMs: 0,
          // Before v6 Kafka describes a group it does not know as Dead, without an error (KafkaJS's
          // setOffsets relies on it); the core answers GROUP_ID_NOT_FOUND, as v6+ does.
          groups: described.groups
            .map((g) =>
              g.errorCode === ErrorCode.GROUP_ID_NOT_FOUND
                ? {
                    errorCode: ErrorCode.NONE,
                    groupId: g.groupId,
                    groupState: 'Dead',
                    protocolType: '',
                    protocolData: '',
                    members: [],
                  }
                : g,
            )
            .map((g) => ({
              errorCode: g.errorCode,
              groupId: g.groupId,
              groupState: g.groupState,
              protocolType: g.protocolType,
              protocolData: g.protocolData,
              members: g.members.map((m) => ({
                memberId: m.memberId,
                clientId: m.clientId,
                clientHost: m.clientHost,
                memberMetadata: bytesOrEmpty(m.memberMetadata),
                memberAssignment: bytesOrEmpty(m.memberAssignment),
              })),
            })),
        };
      },
    ],

    [
      LIST_GROUPS.apiKey,
      async (_body, _header, context) => {
        const listed = await coordinator.listGroups({ statesFilter: [] }, context);
        return {
          throttleTimeMs: 0,
          errorCode: listed.errorCode,
          groups: listed.groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType })),
        };
      },
    ],

    [
      DELETE_GROUPS.apiKey,
      async (body, _header, context) => {
        const deleted = await coordinator.deleteGroups(
          { groupsNames: body.groupsNames as string[] },
          context,
        );
        return { throttleTimeMs: 0, results: deleted.results };
      },
    ],
  ];
  return new Map(handlers);
}
