import { CohortError, ErrorCode } from '../errors';
import {
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
import type { ApiSchema } from './protocol/message-schema';
import { isInVersions } from './protocol/message-schema';
import type { Struct } from './protocol/message-codec';

/** One API's whole answer to a request that failed with `code`, built from the request: Kafka's getErrorResponse. */
type ErrorResponseBuilder = (body: Struct, version: number, code: ErrorCode) => Struct | undefined;

interface NamedPartitions {
  name: string;
  partitions: { partitionIndex: number }[];
}

/**
 * Each requested topic as `answer(name, partitions)`, each of its requested partitions as
 * `partition(index)`, in request order.
 */
function perPartition<T>(
  topics: readonly T[],
  requested: (topic: T) => [name: string, partitionIndexes: number[]],
  answer: (name: string, partitions: Struct[]) => Struct,
  partition: (index: number) => Struct,
): Struct[] {
  return topics.map((topic) => {
    const [name, indexes] = requested(topic);
    return answer(name, indexes.map(partition));
  });
}

const namedPartitions = (t: NamedPartitions): [string, number[]] => [
  t.name,
  t.partitions.map((p) => p.partitionIndex),
];

const ERROR_RESPONSES: ReadonlyMap<number, ErrorResponseBuilder> = new Map<number, ErrorResponseBuilder>([
  [API_VERSIONS.apiKey, (_body, _version, code) => ({ errorCode: code, apiKeys: [], throttleTimeMs: 0 })],
  [
    METADATA.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      brokers: [],
      clusterId: null,
      controllerId: -1,
      topics: ((body.topics as { name: string }[] | null) ?? []).map((topic) => ({
        errorCode: code,
        name: topic.name,
        isInternal: false,
        partitions: [],
      })),
    }),
  ],
  [
    PRODUCE.apiKey,
    // acks=0: no answer at all, so the connection is closed (Kafka's getErrorResponse returns null).
    (body, _version, code) =>
      body.acks === 0
        ? undefined
        : {
            throttleTimeMs: 0,
            responses: perPartition(
              body.topicData as { name: string; partitionData: { index: number }[] }[],
              (t) => [t.name, t.partitionData.map((p) => p.index)],
              (name, partitionResponses) => ({ name, partitionResponses }),
              (index) => ({
                index,
                errorCode: code,
                baseOffset: -1,
                logAppendTimeMs: -1,
                logStartOffset: -1,
              }),
            ),
          },
  ],
  [
    FETCH.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      responses: perPartition(
        body.topics as { topic: string; partitions: { partition: number }[] }[],
        (t) => [t.topic, t.partitions.map((p) => p.partition)],
        (topic, partitions) => ({ topic, partitions }),
        (partitionIndex) => ({
          partitionIndex,
          errorCode: code,
          highWatermark: -1,
          lastStableOffset: -1,
          logStartOffset: -1,
          abortedTransactions: null,
          records: Buffer.alloc(0),
        }),
      ),
    }),
  ],
  [
    LIST_OFFSETS.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      topics: perPartition(
        body.topics as NamedPartitions[],
        namedPartitions,
        (name, partitions) => ({ name, partitions }),
        (partitionIndex) => ({ partitionIndex, errorCode: code, timestamp: -1, offset: -1 }),
      ),
    }),
  ],
  [
    FIND_COORDINATOR.apiKey,
    // Node.noNode(): -1, "", -1. A client that read node 0 at port 0 would try to connect there.
    (_body, _version, code) => ({
      throttleTimeMs: 0,
      errorCode: code,
      errorMessage: null,
      nodeId: -1,
      host: '',
      port: -1,
    }),
  ],
  [
    JOIN_GROUP.apiKey,
    (_body, _version, code) => ({
      throttleTimeMs: 0,
      errorCode: code,
      generationId: -1,
      protocolName: '',
      leader: '',
      memberId: '',
      members: [],
    }),
  ],
  [
    SYNC_GROUP.apiKey,
    (_body, _version, code) => ({ throttleTimeMs: 0, errorCode: code, assignment: Buffer.alloc(0) }),
  ],
  [HEARTBEAT.apiKey, (_body, _version, code) => ({ throttleTimeMs: 0, errorCode: code })],
  [LEAVE_GROUP.apiKey, (_body, _version, code) => ({ throttleTimeMs: 0, errorCode: code })],
  [
    OFFSET_COMMIT.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      topics: perPartition(
        body.topics as NamedPartitions[],
        namedPartitions,
        (name, partitions) => ({ name, partitions }),
        (partitionIndex) => ({ partitionIndex, errorCode: code }),
      ),
    }),
  ],
  [OFFSET_FETCH.apiKey, (body, version, code) => offsetFetchErrorResponse(body, version, code)],
  [
    CREATE_TOPICS.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      topics: (body.topics as { name: string }[]).map((topic) => ({
        name: topic.name,
        errorCode: code,
        errorMessage: null,
      })),
    }),
  ],
  [
    DESCRIBE_GROUPS.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      groups: (body.groups as string[]).map((groupId) => ({
        errorCode: code,
        groupId,
        groupState: '',
        protocolType: '',
        protocolData: '',
        members: [],
      })),
    }),
  ],
  [LIST_GROUPS.apiKey, (_body, _version, code) => ({ throttleTimeMs: 0, errorCode: code, groups: [] })],
  [
    DELETE_GROUPS.apiKey,
    (body, _version, code) => ({
      throttleTimeMs: 0,
      results: (body.groupsNames as string[]).map((groupId) => ({ groupId, errorCode: code })),
    }),
  ],
]);

/**
 * The Kafka door's one mapping of failures. A handler that throws gets its API's whole error response, as
 * Kafka's `getErrorResponse` builds it from the request: the code (a CohortError's own,
 * UNKNOWN_SERVER_ERROR for anything else: internal text never reaches the client) on the top-level error
 * field where the version has one, else on every requested topic, partition or group, with Kafka's
 * "unknown" values beside it (offsets -1, FindCoordinator's node -1 at "":-1). Undefined when no response
 * can carry it (a Produce with acks=0, an API without a builder and without a top-level error code): the
 * connection is then closed, as Kafka closes it. Per-partition and per-group outcomes are not thrown: the
 * core returns them as codes, which the handlers copy field for field.
 */
export function errorResponseFor(
  schema: ApiSchema,
  version: number,
  body: Struct,
  error: unknown,
): Struct | undefined {
  const code = error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR;
  const builder = ERROR_RESPONSES.get(schema.apiKey);
  if (builder !== undefined) return builder(body, version, code);
  const topLevel = schema.response.find((field) => field.name === 'errorCode');
  if (topLevel === undefined || !isInVersions(topLevel.versions, version)) return undefined;
  return { errorCode: code };
}

/**
 * OffsetFetch answered with one error for the whole group, as Kafka's `OffsetFetchRequest.getErrorResponse`
 * builds it: from v2 the top-level code with no partitions; before v2, which has no top-level code, the code
 * on every requested partition, with offset -1 and empty metadata (KAFKA-19246).
 */
export function offsetFetchErrorResponse(body: Struct, version: number, code: ErrorCode): Struct {
  const requested = (body.topics as { name: string; partitionIndexes: number[] }[] | null) ?? [];
  return {
    throttleTimeMs: 0,
    errorCode: code,
    topics:
      version < 2
        ? requested.map((topic) => ({
            name: topic.name,
            partitions: topic.partitionIndexes.map((partitionIndex) => ({
              partitionIndex,
              committedOffset: -1,
              committedLeaderEpoch: -1,
              metadata: '',
              errorCode: code,
            })),
          }))
        : [],
  };
}
