import * as net from 'node:net';
import { ErrorCode } from '../../src/errors';
import type { CohortProcess } from '../support/spawn-cohort';
import { spawnCohort } from '../support/spawn-cohort';
import type { BrokerClient } from './log-cluster';
import { brokerClient, eventually, fetchRequest, LogCluster, produceRequest } from './log-cluster';

/** A port that was free a moment ago, so the restarted node comes back at the address its clients know. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Every record of a partition, read from offset 0 up to the HW. */
async function readAll(client: BrokerClient, topic: string): Promise<Map<number, string>> {
  const records = new Map<number, string>();
  for (;;) {
    const response = await client.fetch(fetchRequest(topic, records.size));
    const partition = response.responses[0]!.partitions[0]!;
    expect(partition.errorCode).toBe(ErrorCode.NONE);
    if (partition.records.length === 0) return records;
    for (const record of partition.records) records.set(record.offset, record.value.toString());
  }
}

/**
 * A single node killed with SIGKILL loses no acknowledged record: acks 1 and -1 are answered only once the
 * leader's fsync covers the records (--log-flush-messages 1, the default), and a single-replica partition
 * restarts with its HW at its log end, the whole ISR being this node. A cluster's kill -9 of a leader
 * under acks=-1 producers, with the restarted node rejoining, is cluster-log-faults.test.ts.
 */
/** The node starts twice as a process (each start transpiles cohort) on a 2-core machine. */
const TEST_TIMEOUT_MS = 90_000;

describe('durability across kill -9 of a single node', () => {
  let cluster: LogCluster;
  let node: CohortProcess | undefined;
  const clients: BrokerClient[] = [];

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await node?.kill();
    node = undefined;
    await cluster.cleanup();
  });

  async function spawnNode(port: number): Promise<BrokerClient> {
    node = spawnCohort(['--listen', `127.0.0.1:${port}`, '--data-dir', cluster.dataDir('node')]);
    await node.waitForLog('cohort listening');
    const client = brokerClient(`127.0.0.1:${port}`);
    clients.push(client);
    return client;
  }

  it(
    'keeps every acknowledged record, acks=1 and acks=-1, and serves them all after the restart',
    async () => {
      const port = await freePort();
      let client = await spawnNode(port);
      const created = await client.createTopics({
        topics: [
          { name: 'all', numPartitions: 1, replicationFactor: 1 },
          { name: 'one', numPartitions: 1, replicationFactor: 1 },
        ],
      });
      expect(created.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);

      // Producers that keep writing until the node dies, remembering what was acknowledged.
      const acknowledged = { all: new Map<number, string>(), one: new Map<number, string>() };
      let isKilled = false;
      const producer = async (topic: 'all' | 'one', acks: number, id: number): Promise<void> => {
        for (let n = 0; !isKilled; n++) {
          const values = [0, 1, 2].map((i) => `${topic}-${id}-${n}-${i}`);
          let response;
          try {
            response = await client.produce(produceRequest(topic, values, acks));
          } catch {
            return; // the node is gone
          }
          const partition = response.topics[0]!.partitions[0]!;
          if (partition.errorCode !== ErrorCode.NONE) continue;
          values.forEach((value, i) => acknowledged[topic].set(partition.baseOffset + i, value));
        }
      };
      const producers = [0, 1, 2, 3].flatMap((id) => [producer('all', -1, id), producer('one', 1, id)]);
      await eventually(
        () => (acknowledged.all.size >= 150 && acknowledged.one.size >= 150 ? true : undefined),
        'enough acknowledged records',
      );
      node!.child.kill('SIGKILL');
      isKilled = true;
      await node!.exited;
      await Promise.all(producers);

      client.close();
      client = await spawnNode(port);
      const missing = (topic: 'all' | 'one', stored: Map<number, string>): [number, string][] =>
        [...acknowledged[topic]].filter(([offset, value]) => stored.get(offset) !== value);
      // The restarted node is the whole ISR: its HW is its log end, and consumers read every acknowledged
      // record at once.
      expect(missing('all', await readAll(client, 'all'))).toEqual([]);
      expect(missing('one', await readAll(client, 'one'))).toEqual([]);
      const after = await client.produce(produceRequest('all', ['after restart'], -1));
      expect(after.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    },
    TEST_TIMEOUT_MS,
  );
});
