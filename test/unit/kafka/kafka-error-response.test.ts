import { CohortError, ErrorCode } from '../../../src/errors';
import { errorResponseFor } from '../../../src/kafka/kafka-error-response';
import {
  DESCRIBE_GROUPS,
  FETCH,
  FIND_COORDINATOR,
  JOIN_GROUP,
  KAFKA_APIS,
  OFFSET_COMMIT,
  PRODUCE,
} from '../../../src/kafka/protocol/kafka-apis';
import { decodeRequest, encodeRequest, encodeResponse } from '../../../src/kafka/protocol/kafka-request';
import type { ApiSchema } from '../../../src/kafka/protocol/message-schema';
import type { Struct } from '../../../src/kafka/protocol/message-codec';

/** `body` as the handler sees it once decoded: every field of `version`, defaults for those not given. */
function decoded(schema: ApiSchema, version: number, body: Struct): Struct {
  const request = decodeRequest(encodeRequest(schema, version, 1, 'test', body).subarray(4));
  if (request.kind !== 'request') throw new Error(`${schema.name} v${version} is not served`);
  return request.body;
}

const failure = new Error('members map of group g-7 is corrupt');

describe('the Kafka door maps a failed handler once', () => {
  test("a CohortError's code rides in the response's top-level error field", () => {
    expect(
      errorResponseFor(JOIN_GROUP, 5, {}, new CohortError(ErrorCode.INVALID_REQUEST, 'internal detail')),
    ).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, generationId: -1, memberId: '', members: [] });
  });

  test('anything else is UNKNOWN_SERVER_ERROR, with none of its text', () => {
    const answer = errorResponseFor(JOIN_GROUP, 0, {}, failure);
    expect(answer).toMatchObject({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR });
    expect(JSON.stringify(answer)).not.toContain('corrupt');
  });

  test.each(
    [...KAFKA_APIS.values()].flatMap((schema) =>
      Array.from({ length: schema.maxVersion - schema.minVersion + 1 }, (_, i) => [
        schema.name,
        schema.minVersion + i,
        schema,
      ]),
    ) as [string, number, ApiSchema][],
  )('%s v%i has a whole error response, which encodes', (_name, version, schema) => {
    const body = decoded(schema, version, schema === PRODUCE ? { acks: 1 } : {});
    const answer = errorResponseFor(schema, version, body, failure);
    expect(answer).toBeDefined();
    expect(() => encodeResponse(schema, version, 1, answer!)).not.toThrow();
  });

  test('FindCoordinator names no node: -1 at "":-1, as Kafka\'s Node.noNode()', () => {
    expect(errorResponseFor(FIND_COORDINATOR, 2, {}, failure)).toMatchObject({
      errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
      nodeId: -1,
      host: '',
      port: -1,
    });
  });

  test('Fetch, which has no top-level code before v7, puts it on every requested partition', () => {
    const body = decoded(FETCH, 6, {
      topics: [
        { topic: 'a', partitions: [{ partition: 0 }, { partition: 3 }] },
        { topic: 'b', partitions: [{ partition: 1 }] },
      ],
    });
    const partition = (partitionIndex: number): object => ({
      partitionIndex,
      errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
      highWatermark: -1,
      lastStableOffset: -1,
      logStartOffset: -1,
    });
    expect(errorResponseFor(FETCH, 6, body, failure)).toMatchObject({
      responses: [
        { topic: 'a', partitions: [partition(0), partition(3)] },
        { topic: 'b', partitions: [partition(1)] },
      ],
    });
  });

  test('OffsetCommit and DescribeGroups answer each requested partition and group', () => {
    const commit = decoded(OFFSET_COMMIT, 2, {
      topics: [{ name: 't', partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }],
    });
    expect(errorResponseFor(OFFSET_COMMIT, 2, commit, failure)).toEqual({
      throttleTimeMs: 0,
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR },
            { partitionIndex: 1, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR },
          ],
        },
      ],
    });
    expect(errorResponseFor(DESCRIBE_GROUPS, 0, { groups: ['g', 'h'] }, failure)).toMatchObject({
      groups: [
        { groupId: 'g', errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, groupState: '', members: [] },
        { groupId: 'h', errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, groupState: '', members: [] },
      ],
    });
  });

  test('a Produce with acks=0 has no response to carry it: the connection is closed', () => {
    expect(errorResponseFor(PRODUCE, 7, decoded(PRODUCE, 7, { acks: 0 }), failure)).toBeUndefined();
  });
});
