import { loadSync } from '@grpc/proto-loader';
import { join } from 'node:path';
import type * as b from '../../../src/client/broker-messages';
import {
  fetchFromWire,
  fetchToWire,
  listOffsetsFromWire,
  produceFromWire,
  produceToWire,
} from '../../../src/client/broker-wire';

/**
 * One complete example of every Broker message the client copies, typed with the client's interfaces so the
 * compiler rejects a missing or extra field; the test then compares the field names with the proto.
 */
const examples: Record<string, object> = {
  CreatableTopic: { name: '', numPartitions: 0, replicationFactor: 0 } satisfies b.CreatableTopic,
  CreateTopicsRequest: { topics: [] } satisfies b.CreateTopicsRequest,
  CreatableTopicResult: { name: '', errorCode: 0, errorMessage: '' } satisfies b.CreatableTopicResult,
  CreateTopicsResponse: { topics: [] } satisfies b.CreateTopicsResponse,
  MetadataRequest: { topics: [] } satisfies b.MetadataRequest,
  PartitionMetadata: {
    partitionIndex: 0,
    leaderId: 0,
    replicaNodes: [],
    isrNodes: [],
    errorCode: 0,
    leaderEpoch: 0,
  } satisfies b.PartitionMetadata,
  TopicMetadata: { name: '', errorCode: 0, partitions: [], errorMessage: '' } satisfies b.TopicMetadata,
  BrokerNode: { nodeId: 0, host: '', port: 0 } satisfies b.BrokerNode,
  MetadataResponse: { brokers: [], topics: [], controllerId: 0 } satisfies b.MetadataResponse,
  RecordHeader: { key: '', value: Buffer.alloc(0) } satisfies b.RecordHeader,
  Record: {
    offset: 0n,
    timestampMs: 0,
    key: Buffer.alloc(0),
    value: Buffer.alloc(0),
    headers: [],
    leaderEpoch: 0,
    valueNull: false,
  } satisfies b.WireRecord,
  ProducePartitionData: { partitionIndex: 0, records: [] } satisfies b.ProducePartitionData,
  ProduceTopicData: { name: '', partitions: [] } satisfies b.ProduceTopicData,
  ProduceRequest: { acks: 0, timeoutMs: 0, topics: [] } satisfies b.ProduceRequest,
  ProducePartitionResponse: {
    partitionIndex: 0,
    errorCode: 0,
    baseOffset: 0n,
    logAppendTimeMs: 0,
    logStartOffset: 0n,
  } satisfies b.ProducePartitionResponse,
  ProduceTopicResponse: { name: '', partitions: [] } satisfies b.ProduceTopicResponse,
  ProduceResponse: { topics: [] } satisfies b.ProduceResponse,
  FetchPartition: {
    partitionIndex: 0,
    fetchOffset: 0n,
    partitionMaxBytes: 0,
    currentLeaderEpoch: 0,
  } satisfies b.FetchPartition,
  FetchTopic: { name: '', partitions: [] } satisfies b.FetchTopic,
  FetchRequest: { replicaId: 0, maxWaitMs: 0, minBytes: 0, maxBytes: 0, topics: [] } satisfies b.FetchRequest,
  FetchPartitionData: {
    partitionIndex: 0,
    errorCode: 0,
    highWatermark: 0n,
    logStartOffset: 0n,
    records: [],
  } satisfies b.FetchPartitionData,
  FetchableTopicResponse: { name: '', partitions: [] } satisfies b.FetchableTopicResponse,
  FetchResponse: { errorCode: 0, responses: [] } satisfies b.FetchResponse,
  ListOffsetsPartition: {
    partitionIndex: 0,
    timestamp: 0,
    currentLeaderEpoch: 0,
  } satisfies b.ListOffsetsPartition,
  ListOffsetsTopic: { name: '', partitions: [] } satisfies b.ListOffsetsTopic,
  ListOffsetsRequest: { topics: [] } satisfies b.ListOffsetsRequest,
  ListOffsetsPartitionResponse: {
    partitionIndex: 0,
    errorCode: 0,
    offset: 0n,
    timestamp: 0,
  } satisfies b.ListOffsetsPartitionResponse,
  ListOffsetsTopicResponse: { name: '', partitions: [] } satisfies b.ListOffsetsTopicResponse,
  ListOffsetsResponse: { topics: [] } satisfies b.ListOffsetsResponse,
  OffsetForLeaderPartition: {
    partition: 0,
    currentLeaderEpoch: 0,
    leaderEpoch: 0,
  } satisfies b.OffsetForLeaderPartition,
  OffsetForLeaderTopic: { name: '', partitions: [] } satisfies b.OffsetForLeaderTopic,
  OffsetForLeaderEpochRequest: { replicaId: -1, topics: [] } satisfies b.OffsetForLeaderEpochRequest,
  EpochEndOffset: { errorCode: 0, partition: 0, leaderEpoch: 0, endOffset: 0n } satisfies b.EpochEndOffset,
  OffsetForLeaderTopicResult: { name: '', partitions: [] } satisfies b.OffsetForLeaderTopicResult,
  OffsetForLeaderEpochResponse: { topics: [] } satisfies b.OffsetForLeaderEpochResponse,
};

describe('the client copy of the Broker messages', () => {
  const definition = loadSync('cohort/v1/broker.proto', {
    includeDirs: [join(__dirname, '..', '..', '..', 'proto')],
    keepCase: false,
  });

  it('copies every message of the proto', () => {
    const messages = Object.keys(definition)
      .filter((name) => name.startsWith('cohort.v1.') && 'type' in (definition[name] as object))
      .filter(
        (name) => (definition[name] as { fileDescriptorProtos?: unknown }).fileDescriptorProtos !== undefined,
      )
      .map((name) => name.slice('cohort.v1.'.length))
      .filter((name) => name !== 'ErrorCode');
    expect(messages.sort()).toEqual(Object.keys(examples).sort());
  });

  it.each(Object.keys(examples))('%s has exactly the fields of the proto message', (name) => {
    const type = definition[`cohort.v1.${name}`] as { type: { field: { name: string }[] } };
    const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    expect(Object.keys(examples[name]).sort()).toEqual(type.type.field.map((f) => camel(f.name)).sort());
  });
});

describe('int64 on the wire', () => {
  const beyondNumbers = '9007199254740993'; // 2^53 + 1: a Number would round it

  it('sends offsets as exact decimal strings', () => {
    const wire = fetchToWire({
      replicaId: -1,
      maxWaitMs: 1,
      minBytes: 1,
      maxBytes: 1,
      topics: [
        {
          name: 't',
          partitions: [{ partitionIndex: 0, fetchOffset: BigInt(beyondNumbers), partitionMaxBytes: 1 }],
        },
      ],
    }) as { topics: { partitions: { fetchOffset: string }[] }[] };
    expect(wire.topics[0].partitions[0].fetchOffset).toBe(beyondNumbers);
    const produce = produceToWire({
      acks: -1,
      timeoutMs: 1,
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: 0,
              records: [
                { offset: 0n, timestampMs: 5, key: Buffer.alloc(0), value: Buffer.from('v'), headers: [] },
              ],
            },
          ],
        },
      ],
    }) as { topics: { partitions: { records: { offset: string; timestampMs: number }[] }[] }[] };
    expect(produce.topics[0].partitions[0].records[0]).toMatchObject({ offset: '0', timestampMs: 5 });
  });

  it('reads offsets into exact bigints and timestamps into numbers', () => {
    const fetched = fetchFromWire({
      errorCode: 0,
      responses: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: 0,
              errorCode: 0,
              highWatermark: beyondNumbers,
              logStartOffset: '0',
              records: [
                {
                  offset: beyondNumbers,
                  timestampMs: '1700000000000' as never,
                  key: Buffer.alloc(0),
                  value: Buffer.alloc(0),
                  headers: [],
                },
              ],
            },
          ],
        },
      ],
    });
    const data = fetched.responses[0].partitions[0];
    expect([data.highWatermark, data.records[0].offset, data.records[0].timestampMs]).toEqual([
      BigInt(beyondNumbers),
      BigInt(beyondNumbers),
      1_700_000_000_000,
    ]);
    const produced = produceFromWire({
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: 0,
              errorCode: 0,
              baseOffset: '-1',
              logAppendTimeMs: '-1' as never,
              logStartOffset: '7',
            },
          ],
        },
      ],
    });
    expect(produced.topics[0].partitions[0]).toMatchObject({
      baseOffset: -1n,
      logAppendTimeMs: -1,
      logStartOffset: 7n,
    });
    const listed = listOffsetsFromWire({
      topics: [
        {
          name: 't',
          partitions: [{ partitionIndex: 0, errorCode: 0, offset: '42', timestamp: '-1' as never }],
        },
      ],
    });
    expect(listed.topics[0].partitions[0]).toMatchObject({ offset: 42n, timestamp: -1 });
  });
});
