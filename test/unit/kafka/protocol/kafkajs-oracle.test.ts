/**
 * The Kafka door's codec against an independent one: KafkaJS's own request encoders write the bytes cohort
 * decodes, and its response decoders read the bytes cohort encodes, version by version, for every
 * (API, version) both implement.
 */
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
} from '../../../../src/kafka/protocol/kafka-apis';
import { decodeRequest, encodeResponse } from '../../../../src/kafka/protocol/kafka-request';
import type { ApiSchema } from '../../../../src/kafka/protocol/message-schema';
import type { Struct } from '../../../../src/kafka/protocol/message-codec';

/* eslint-disable @typescript-eslint/no-require-imports */
const encodeKafkajsRequest = require('kafkajs/src/protocol/request') as (args: {
  correlationId: number;
  clientId: string;
  request: unknown;
}) => Promise<{ buffer: Buffer }>;

const kafkajs = (
  path: string,
): { request: (...args: unknown[]) => unknown; decode: (b: Buffer) => Promise<Struct> } => ({
  request: require(`kafkajs/src/protocol/requests/${path}/request`),
  decode: (
    require(`kafkajs/src/protocol/requests/${path}/response`) as { decode: (b: Buffer) => Promise<Struct> }
  ).decode,
});
/* eslint-enable @typescript-eslint/no-require-imports */

const CORRELATION_ID = 4242;

async function decodedByCohort(path: string, ...args: unknown[]): Promise<{ version: number; body: Struct }> {
  const { buffer } = await encodeKafkajsRequest({
    correlationId: CORRELATION_ID,
    clientId: 'oracle',
    request: kafkajs(path).request(...args),
  });
  expect(buffer.readInt32BE(0)).toBe(buffer.length - 4);
  const decoded = decodeRequest(buffer.subarray(4));
  if (decoded.kind !== 'request') throw new Error(`not decoded: ${decoded.kind}`);
  expect(decoded.header.correlationId).toBe(CORRELATION_ID);
  expect(decoded.header.clientId).toBe('oracle');
  return { version: decoded.header.apiVersion, body: decoded.body };
}

async function readByKafkajs(
  path: string,
  schema: ApiSchema,
  version: number,
  body: Struct,
): Promise<Struct> {
  const frame = encodeResponse(schema, version, CORRELATION_ID, body);
  expect(frame.readInt32BE(0)).toBe(frame.length - 4);
  expect(frame.readInt32BE(4)).toBe(CORRELATION_ID);
  return kafkajs(path).decode(frame.subarray(8));
}

const range = (schema: ApiSchema, kafkajsMax: number): number[] => {
  const versions: number[] = [];
  for (let v = schema.minVersion; v <= Math.min(schema.maxVersion, kafkajsMax); v++) versions.push(v);
  return versions;
};

describe('the Kafka codec read by KafkaJS and reading KafkaJS', () => {
  test.each(range(API_VERSIONS, 2))('ApiVersions v%i', async (v) => {
    const { body } = await decodedByCohort(`apiVersions/v${v}`);
    expect(body).toEqual({ clientSoftwareName: '', clientSoftwareVersion: '' });
    const read = await readByKafkajs(`apiVersions/v${v}`, API_VERSIONS, v, {
      errorCode: 0,
      apiKeys: ADVERTISED_API_VERSIONS,
    });
    expect(read.apiVersions).toEqual(ADVERTISED_API_VERSIONS);
  });

  test.each(range(METADATA, 4))('Metadata v%i', async (v) => {
    const { body } = await decodedByCohort(`metadata/v${v}`, {
      topics: ['a', 'b'],
      allowAutoTopicCreation: false,
    });
    expect(body.topics).toEqual([{ name: 'a' }, { name: 'b' }]);
    expect(body.allowAutoTopicCreation).toBe(v >= 4 ? false : true);
    if (v >= 1) expect((await decodedByCohort(`metadata/v${v}`, { topics: [] })).body.topics).toBeNull();
    const read = await readByKafkajs(`metadata/v${v}`, METADATA, v, {
      brokers: [{ nodeId: 1, host: '127.0.0.1', port: 9092 }],
      clusterId: 'c',
      controllerId: 1,
      topics: [
        {
          errorCode: 0,
          name: 'a',
          partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 1, replicaNodes: [1], isrNodes: [1] }],
        },
      ],
    });
    expect(read.brokers).toEqual([expect.objectContaining({ nodeId: 1, host: '127.0.0.1', port: 9092 })]);
    expect(read.topicMetadata).toEqual([
      expect.objectContaining({
        topic: 'a',
        partitionMetadata: [expect.objectContaining({ partitionId: 0, leader: 1, replicas: [1], isr: [1] })],
      }),
    ]);
    if (v >= 1) expect(read.controllerId).toBe(1);
  });

  test.each(range(PRODUCE, 7))('Produce v%i', async (v) => {
    const { body } = await decodedByCohort(`produce/v${v}`, {
      acks: -1,
      timeout: 30000,
      topicData: [{ topic: 't', partitions: [{ partition: 2, messages: [{ key: 'k', value: 'v' }] }] }],
    });
    expect(body).toMatchObject({ transactionalId: null, acks: -1, timeoutMs: 30000 });
    const [topic] = body.topicData as Struct[];
    const [partition] = topic.partitionData as Struct[];
    expect(topic.name).toBe('t');
    expect(partition.index).toBe(2);
    // A RecordBatch v2: the magic byte is at offset 16.
    expect((partition.records as Buffer).readInt8(16)).toBe(2);
    const read = await readByKafkajs(`produce/v${v}`, PRODUCE, v, {
      responses: [
        { name: 't', partitionResponses: [{ index: 2, errorCode: 0, baseOffset: 41, logStartOffset: 0 }] },
      ],
      throttleTimeMs: 0,
    });
    expect(read.topics).toEqual([
      {
        topicName: 't',
        partitions: [expect.objectContaining({ partition: 2, errorCode: 0, baseOffset: '41' })],
      },
    ]);
  });

  test.each(range(FETCH, 6))('Fetch v%i', async (v) => {
    const { body } = await decodedByCohort(`fetch/v${v}`, {
      replicaId: -1,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 1000,
      topics: [{ topic: 't', partitions: [{ partition: 1, fetchOffset: '12', maxBytes: 100 }] }],
    });
    expect(body).toMatchObject({ replicaId: -1, maxWaitMs: 500, minBytes: 1, maxBytes: 1000 });
    expect(body.topics).toEqual([
      {
        topic: 't',
        partitions: [expect.objectContaining({ partition: 1, fetchOffset: 12, partitionMaxBytes: 100 })],
      },
    ]);
    const read = await readByKafkajs(`fetch/v${v}`, FETCH, v, {
      responses: [
        {
          topic: 't',
          partitions: [
            {
              partitionIndex: 1,
              errorCode: 1,
              highWatermark: 20,
              lastStableOffset: 20,
              logStartOffset: 0,
              abortedTransactions: [],
              records: null,
            },
          ],
        },
      ],
    });
    expect(read.responses).toEqual([
      {
        topicName: 't',
        partitions: [
          expect.objectContaining({ partition: 1, errorCode: 1, highWatermark: '20', messages: [] }),
        ],
      },
    ]);
  });

  test.each(range(LIST_OFFSETS, 3))('ListOffsets v%i', async (v) => {
    const { body } = await decodedByCohort(`listOffsets/v${v}`, {
      replicaId: -1,
      isolationLevel: 1,
      topics: [{ topic: 't', partitions: [{ partition: 0, timestamp: -2 }] }],
    });
    expect(body.topics).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -2 }] }]);
    const read = await readByKafkajs(`listOffsets/v${v}`, LIST_OFFSETS, v, {
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0, timestamp: -1, offset: 7 }] }],
    });
    expect(read.responses).toEqual([
      { topic: 't', partitions: [expect.objectContaining({ partition: 0, errorCode: 0, offset: '7' })] },
    ]);
  });

  test.each(range(FIND_COORDINATOR, 2))('FindCoordinator v%i', async (v) => {
    const { body } = await decodedByCohort(`findCoordinator/v${v}`, {
      groupId: 'g',
      coordinatorKey: 'g',
      coordinatorType: 0,
    });
    expect(body).toEqual({ key: 'g', keyType: 0 });
    const read = await readByKafkajs(`findCoordinator/v${v}`, FIND_COORDINATOR, v, {
      errorCode: 0,
      nodeId: 3,
      host: '127.0.0.1',
      port: 9092,
    });
    expect(read).toMatchObject({ errorCode: 0, coordinator: { nodeId: 3, host: '127.0.0.1', port: 9092 } });
  });

  test.each(range(JOIN_GROUP, 5))('JoinGroup v%i', async (v) => {
    const { body } = await decodedByCohort(`joinGroup/v${v}`, {
      groupId: 'g',
      sessionTimeout: 6000,
      rebalanceTimeout: 9000,
      memberId: '',
      protocolType: 'consumer',
      groupProtocols: [{ name: 'RoundRobinAssigner', metadata: Buffer.from([1, 2]) }],
    });
    expect(body).toMatchObject({
      groupId: 'g',
      sessionTimeoutMs: 6000,
      rebalanceTimeoutMs: v >= 1 ? 9000 : -1,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'RoundRobinAssigner', metadata: Buffer.from([1, 2]) }],
    });
    const read = await readByKafkajs(`joinGroup/v${v}`, JOIN_GROUP, v, {
      errorCode: 0,
      generationId: 4,
      protocolName: 'RoundRobinAssigner',
      leader: 'm1',
      memberId: 'm2',
      members: [{ memberId: 'm1', metadata: Buffer.from([9]) }],
    });
    expect(read).toMatchObject({
      errorCode: 0,
      generationId: 4,
      groupProtocol: 'RoundRobinAssigner',
      leaderId: 'm1',
      memberId: 'm2',
    });
    expect(read.members).toEqual([
      expect.objectContaining({ memberId: 'm1', memberMetadata: Buffer.from([9]) }),
    ]);
  });

  test.each(range(SYNC_GROUP, 3))('SyncGroup v%i', async (v) => {
    const { body } = await decodedByCohort(`syncGroup/v${v}`, {
      groupId: 'g',
      generationId: 4,
      memberId: 'm1',
      groupAssignment: [{ memberId: 'm1', memberAssignment: Buffer.from([5]) }],
    });
    expect(body).toMatchObject({
      groupId: 'g',
      generationId: 4,
      memberId: 'm1',
      assignments: [{ memberId: 'm1', assignment: Buffer.from([5]) }],
    });
    const read = await readByKafkajs(`syncGroup/v${v}`, SYNC_GROUP, v, {
      errorCode: 0,
      assignment: Buffer.from([7]),
    });
    expect(read).toMatchObject({ errorCode: 0, memberAssignment: Buffer.from([7]) });
  });

  test.each(range(HEARTBEAT, 3))('Heartbeat v%i', async (v) => {
    const { body } = await decodedByCohort(`heartbeat/v${v}`, {
      groupId: 'g',
      groupGenerationId: 4,
      memberId: 'm1',
    });
    expect(body).toMatchObject({ groupId: 'g', generationId: 4, memberId: 'm1' });
    const read = await readByKafkajs(`heartbeat/v${v}`, HEARTBEAT, v, { errorCode: 0 });
    expect(read.errorCode).toBe(0);
  });

  test.each(range(LEAVE_GROUP, 1))('LeaveGroup v%i', async (v) => {
    const { body } = await decodedByCohort(`leaveGroup/v${v}`, { groupId: 'g', memberId: 'm1' });
    expect(body).toEqual({ groupId: 'g', memberId: 'm1' });
    const read = await readByKafkajs(`leaveGroup/v${v}`, LEAVE_GROUP, v, { errorCode: 0 });
    expect(read.errorCode).toBe(0);
  });

  test.each(range(OFFSET_COMMIT, 5))('OffsetCommit v%i', async (v) => {
    const { body } = await decodedByCohort(`offsetCommit/v${v}`, {
      groupId: 'g',
      groupGenerationId: 4,
      memberId: 'm1',
      retentionTime: -1,
      topics: [{ topic: 't', partitions: [{ partition: 0, offset: '15' }] }],
    });
    expect(body).toMatchObject({ groupId: 'g', generationId: 4, memberId: 'm1' });
    expect(body.topics).toEqual([
      { name: 't', partitions: [{ partitionIndex: 0, committedOffset: 15, committedMetadata: null }] },
    ]);
    const read = await readByKafkajs(`offsetCommit/v${v}`, OFFSET_COMMIT, v, {
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }] }],
    });
    expect(read.responses).toEqual([{ topic: 't', partitions: [{ partition: 0, errorCode: 0 }] }]);
  });

  test.each(range(OFFSET_FETCH, 4))('OffsetFetch v%i', async (v) => {
    const { body } = await decodedByCohort(`offsetFetch/v${v}`, {
      groupId: 'g',
      topics: [{ topic: 't', partitions: [{ partition: 0 }, { partition: 1 }] }],
    });
    expect(body).toEqual({ groupId: 'g', topics: [{ name: 't', partitionIndexes: [0, 1] }] });
    const read = await readByKafkajs(`offsetFetch/v${v}`, OFFSET_FETCH, v, {
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, committedOffset: 15, metadata: '', errorCode: 0 }] },
      ],
      errorCode: 0,
    });
    expect(read.responses).toEqual([
      { topic: 't', partitions: [expect.objectContaining({ partition: 0, offset: '15', errorCode: 0 })] },
    ]);
  });

  test.each(range(CREATE_TOPICS, 3))('CreateTopics v%i', async (v) => {
    const { body } = await decodedByCohort(`createTopics/v${v}`, {
      topics: [{ topic: 't', numPartitions: 3, replicationFactor: 1 }],
      timeout: 5000,
    });
    expect(body).toMatchObject({
      topics: [{ name: 't', numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000,
    });
    const read = await readByKafkajs(`createTopics/v${v}`, CREATE_TOPICS, v, {
      topics: [{ name: 't', errorCode: 36, errorMessage: 'exists' }],
    });
    expect(read.topicErrors).toEqual([expect.objectContaining({ topic: 't', errorCode: 36 })]);
  });

  test.each(range(DESCRIBE_GROUPS, 2))('DescribeGroups v%i', async (v) => {
    const { body } = await decodedByCohort(`describeGroups/v${v}`, { groupIds: ['g', 'h'] });
    expect(body).toEqual({ groups: ['g', 'h'] });
    const read = await readByKafkajs(`describeGroups/v${v}`, DESCRIBE_GROUPS, v, {
      groups: [
        {
          errorCode: 0,
          groupId: 'g',
          groupState: 'Stable',
          protocolType: 'consumer',
          protocolData: 'range',
          members: [
            {
              memberId: 'm',
              clientId: 'c',
              clientHost: '/127.0.0.1',
              memberMetadata: Buffer.from([1]),
              memberAssignment: Buffer.from([2]),
            },
          ],
        },
      ],
    });
    expect(read.groups).toEqual([
      expect.objectContaining({
        groupId: 'g',
        state: 'Stable',
        members: [expect.objectContaining({ memberId: 'm', clientId: 'c', clientHost: '/127.0.0.1' })],
      }),
    ]);
  });

  test.each(range(LIST_GROUPS, 2))('ListGroups v%i', async (v) => {
    const { body } = await decodedByCohort(`listGroups/v${v}`);
    expect(body).toEqual({});
    const read = await readByKafkajs(`listGroups/v${v}`, LIST_GROUPS, v, {
      errorCode: 0,
      groups: [{ groupId: 'g', protocolType: 'consumer' }],
    });
    expect(read.groups).toEqual([{ groupId: 'g', protocolType: 'consumer' }]);
  });

  test.each(range(DELETE_GROUPS, 1))('DeleteGroups v%i', async (v) => {
    const { body } = await decodedByCohort(`deleteGroups/v${v}`, ['g']);
    expect(body).toEqual({ groupsNames: ['g'] });
    const read = await readByKafkajs(`deleteGroups/v${v}`, DELETE_GROUPS, v, {
      results: [{ groupId: 'g', errorCode: 69 }],
    });
    expect(read.results).toEqual([expect.objectContaining({ groupId: 'g', errorCode: 69 })]);
  });
});
