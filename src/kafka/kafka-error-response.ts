import { CohortError, ErrorCode } from '../errors';
import type { ApiSchema } from './protocol/message-schema';
import { isInVersions } from './protocol/message-schema';
import type { Struct } from './protocol/message-codec';

/**
 * The Kafka door's one mapping of failures: a handler that throws gets, when its response has a top-level
 * error code in that version, a response carrying the code (a CohortError's own, UNKNOWN_SERVER_ERROR for
 * anything else: internal text never reaches the client); otherwise the connection is closed, as Kafka
 * closes it when it cannot build an error response. Per-partition and per-group outcomes are not thrown:
 * the core returns them as codes, which the handlers copy field for field.
 */
export function errorResponseFor(schema: ApiSchema, version: number, error: unknown): Struct | undefined {
  const code = error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR;
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
