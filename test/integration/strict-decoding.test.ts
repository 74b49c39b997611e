import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { ErrorCode } from '../../src/errors';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/**
 * Requests that are not well-formed protobuf, sent as raw bytes to a real server: each must end with
 * INVALID_ARGUMENT before the coordinator sees it, never be acted on as whatever protobufjs makes of it.
 */

const coordinator = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS)[
  'cohort.v1.GroupCoordinator'
] as ServiceDefinition;

function encode(method: string, request: object): Buffer {
  return (coordinator[method] as MethodDefinition<object, object>).requestSerialize(request);
}

/** `bytes` with its only occurrence of `marker`'s UTF-8 replaced by `replacement`. */
function replaced(bytes: Buffer, marker: string, replacement: readonly number[]): Buffer {
  const at = bytes.indexOf(marker);
  if (at < 0 || bytes.indexOf(marker, at + 1) >= 0) throw new Error(`${marker} must occur once`);
  const length = Buffer.byteLength(marker);
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(replacement), bytes.subarray(at + length)]);
}

let t: TestServer;
let raw: Client;

/** Sends `bytes` as the request of GroupCoordinator's `method`; resolves with its status code. */
function rawCall(method: string, bytes: Buffer): Promise<status> {
  return new Promise((resolve) =>
    raw.makeUnaryRequest(
      `/cohort.v1.GroupCoordinator/${method}`,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      new Metadata(),
      {},
      (error: ServiceError | null) => resolve(error === null ? status.OK : error.code),
    ),
  );
}

beforeEach(async () => {
  t = await startTestServer();
  raw = new Client(t.target, credentials.createInsecure());
});

afterEach(async () => {
  raw.close();
  await t.close();
});

async function commit(groupId: string, offset: number): Promise<void> {
  const response = await t.groupCoordinator().offsetCommit({
    groupId,
    generationId: -1,
    topics: [
      {
        name: 't',
        partitions: [
          { partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: '' },
        ],
      },
    ],
  });
  expect(response.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
}

async function committedOffset(groupId: string): Promise<number> {
  const response = await t.groupCoordinator().offsetFetch({
    groupId,
    topics: [{ name: 't', partitionIndexes: [0] }],
  });
  return response.topics[0]!.partitions[0]!.committedOffset;
}

test('a truncated DeleteGroups is refused and deletes nothing, not the group its prefix names', async () => {
  await commit('alpha', 42);
  // ["alphabet"] cut after "alpha": protobufjs decodes the prefix as ["alpha"]
  const truncated = encode('DeleteGroups', { groupsNames: ['alphabet'] }).subarray(0, 7);
  expect(await rawCall('DeleteGroups', truncated)).toBe(status.INVALID_ARGUMENT);
  expect(await committedOffset('alpha')).toBe(42);
  expect((await t.groupCoordinator().listGroups({})).groups.map((g) => g.groupId)).toEqual(['alpha']);
});

test('an OffsetCommit whose group id is not UTF-8 is refused, not committed to the U+FFFD group', async () => {
  await commit('g-\uFFFD', 5);
  const invalid = replaced(
    encode('OffsetCommit', {
      groupId: 'g-#',
      generationId: -1,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 9 }] }],
    }),
    '#',
    [0xff],
  );
  expect(await rawCall('OffsetCommit', invalid)).toBe(status.INVALID_ARGUMENT);
  expect(await committedOffset('g-\uFFFD')).toBe(5);
});

test('a JoinGroup whose group id is not UTF-8 is refused and creates no group', async () => {
  const invalid = replaced(
    encode('JoinGroup', {
      groupId: 'g-#',
      sessionTimeoutMs: 10_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    }),
    '#',
    [0xc0, 0x80], // an overlong NUL
  );
  expect(await rawCall('JoinGroup', invalid)).toBe(status.INVALID_ARGUMENT);
  expect((await t.groupCoordinator().listGroups({})).groups).toEqual([]);
});
