import { ErrorCode } from '../../src/errors';
import { OFFSET_FETCH } from '../../src/kafka/protocol/kafka-apis';
import { FakeGroupCoordinator } from '../support/fake-group-coordinator';
import { RawKafka } from '../support/raw-kafka';
import { startTestServer, type TestServer } from '../support/start-test-server';

/**
 * Where the Kafka door must answer as Apache Kafka's broker answers, over a raw connection: the error
 * answers clients act on (group-level errors of old versions, refused batches), and what keeps a
 * connection open or closes it.
 */

jest.setTimeout(30_000);

let t: TestServer | undefined;
const clients: RawKafka[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  await t?.close();
  t = undefined;
});

function connect(server: TestServer): RawKafka {
  const client = new RawKafka(server.kafkaAddress!);
  clients.push(client);
  return client;
}

describe('OffsetFetch with a group-level error', () => {
  test.each([
    ['COORDINATOR_LOAD_IN_PROGRESS', ErrorCode.COORDINATOR_LOAD_IN_PROGRESS],
    ['NOT_COORDINATOR', ErrorCode.NOT_COORDINATOR],
    ['COORDINATOR_NOT_AVAILABLE', ErrorCode.COORDINATOR_NOT_AVAILABLE],
  ])('v1 puts %s on every requested partition, with offset -1', async (_name, code) => {
    // As the coordinator answers for a group whose shard is loading, moved or gone: no partitions.
    t = await startTestServer(
      {},
      {
        coordinatorFactory: () =>
          new FakeGroupCoordinator({ offsetFetch: async () => ({ errorCode: code, topics: [] }) }),
      },
    );
    const client = connect(t);
    const topics = [
      { name: 'orders', partitionIndexes: [0, 2] },
      { name: 'payments', partitionIndexes: [1] },
    ];
    client.send(OFFSET_FETCH, 1, 1, { groupId: 'restarted', topics });
    const partition = (partitionIndex: number): object => ({
      partitionIndex,
      committedOffset: -1,
      committedLeaderEpoch: -1, // not in v1: the decoder's default
      metadata: '',
      errorCode: code,
    });
    expect((await client.response(OFFSET_FETCH, 1)).body.topics).toEqual([
      { name: 'orders', partitions: [partition(0), partition(2)] },
      { name: 'payments', partitions: [partition(1)] },
    ]);
    // From v2 the code has a field of its own, and no partition is answered.
    client.send(OFFSET_FETCH, 2, 2, { groupId: 'restarted', topics });
    expect((await client.response(OFFSET_FETCH, 2)).body).toMatchObject({ errorCode: code, topics: [] });
  });
});
