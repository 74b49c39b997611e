import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../../src/errors';
import type { CreateTopicsResponse, ReplicaManager } from '../../../src/log';
import { openFilesHeadroom } from '../../../src/log/open-files';
import { BrokerHarness, leaderConfig } from './broker-harness';

/** One event-loop turn: a sliced create yields with setImmediate between slices. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The partition directories under a data directory (everything but the topic registry). */
function partitionDirs(dataDir: string): string[] {
  if (!fs.existsSync(dataDir)) return [];
  return fs
    .readdirSync(dataDir)
    .filter((name) => name !== 'topics' && !name.startsWith('.'))
    .sort();
}

function registryFiles(dataDir: string): string[] {
  const dir = path.join(dataDir, 'topics');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

/** A promise's outcome so far, without awaiting it. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

describe('ReplicaManager: CreateTopics in slices, within the file-descriptor budget', () => {
  let h: BrokerHarness;

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  /** A leader that creates `perTurn` partitions per turn and believes `open` descriptors are in use. */
  function leader(
    perTurn: number,
    budget: { maxOpenFiles?: number; open?: number } = {},
  ): { broker: ReplicaManager; dataDir: string } {
    const dataDir = h.dir('leader');
    const broker = h.start(
      leaderConfig(dataDir, {
        ...(budget.maxOpenFiles === undefined ? {} : { maxOpenFiles: budget.maxOpenFiles }),
      }),
      {
        createPartitionsPerTurn: perTurn,
        ...(budget.open === undefined ? {} : { countOpenFiles: () => budget.open }),
      },
    );
    return { broker, dataDir };
  }

  it('creates a topic a slice per event-loop turn, visible only once every partition exists', async () => {
    const { broker, dataDir } = leader(4);
    const request = broker.createTopics({ topics: [{ name: 't', numPartitions: 10, replicationFactor: 1 }] });
    const creating = track(request);

    // Slices of 4: after one turn the first slice exists, and the call is not answered yet.
    await nextTurn();
    expect(creating.settled).toBe(false);
    expect(partitionDirs(dataDir).length).toBeGreaterThanOrEqual(4);
    expect(partitionDirs(dataDir).length).toBeLessThan(10);
    // Meanwhile the topic does not exist for anyone, and its name is taken.
    expect((await broker.metadata({ topics: ['t'] })).topics[0]!.errorCode).toBe(
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    );
    const again = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(again.topics[0]).toMatchObject({ errorCode: ErrorCode.TOPIC_ALREADY_EXISTS });
    expect(again.topics[0]!.errorMessage).toContain('being created');

    // Three slices, then the data directory's fsync (on the thread pool) and the registry.
    expect((await request).topics).toEqual([{ name: 't', errorCode: ErrorCode.NONE, errorMessage: '' }]);
    const metadata = await broker.metadata({ topics: ['t'] });
    expect(metadata.topics[0]!.partitions).toHaveLength(10);
    expect(registryFiles(dataDir)).toEqual(['t.json']);
    const later = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(later.topics[0]!.errorMessage).toContain('already exists');
  });

  it('answers a request of several topics once every one of them is done', async () => {
    const { broker } = leader(3);
    const response = await broker.createTopics({
      topics: [
        { name: 'a', numPartitions: 7, replicationFactor: 1 },
        { name: 'bad/name', numPartitions: 1, replicationFactor: 1 },
        { name: 'b', numPartitions: 2, replicationFactor: 1 },
      ],
    });
    expect(response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ['a', ErrorCode.NONE],
      ['bad/name', ErrorCode.INVALID_TOPIC_EXCEPTION],
      ['b', ErrorCode.NONE],
    ]);
    expect(broker.topicNames().sort()).toEqual(['a', 'b']);
  });

  it('refuses partitions past the descriptor budget with POLICY_VIOLATION before touching the disk', async () => {
    // 300 descriptors, 100 open, the headroom kept: 72 left for partitions.
    const free = 300 - 100 - openFilesHeadroom(300);
    expect(free).toBe(72);
    const { broker, dataDir } = leader(8, { maxOpenFiles: 300, open: 100 });
    const refused = await broker.createTopics({
      topics: [{ name: 'big', numPartitions: free + 1, replicationFactor: 1 }],
    });
    expect(refused.topics[0]!.errorCode).toBe(ErrorCode.POLICY_VIOLATION);
    expect(refused.topics[0]!.errorMessage).toContain(
      `${free + 1} partitions need ${free + 1} file descriptors`,
    );
    expect(refused.topics[0]!.errorMessage).toContain('ulimit -n');
    expect(fs.existsSync(dataDir)).toBe(false);

    // Creates in flight count against it too: 40 + 40 do not fit in 72.
    const first = broker.createTopics({ topics: [{ name: 'one', numPartitions: 40, replicationFactor: 1 }] });
    const second = await broker.createTopics({
      topics: [{ name: 'two', numPartitions: 40, replicationFactor: 1 }],
    });
    expect(second.topics[0]!.errorCode).toBe(ErrorCode.POLICY_VIOLATION);
    expect(second.topics[0]!.errorMessage).toContain('40 are reserved by creates in flight');
    expect((await first).topics[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(partitionDirs(dataDir)).not.toContain('two-0');
  });

  it('closes and deletes what it made when a partition cannot be created', async () => {
    const { broker, dataDir } = leader(4);
    // A file where partition 6's directory would go: its log cannot be opened.
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(path.join(dataDir, 't-6'), 'not a directory');
    const response = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 10, replicationFactor: 1 }],
    });
    expect(response.topics[0]!.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(response.topics[0]!.errorMessage).toBe(
      'the partitions could not be created; the server log has why',
    );
    expect(h.errors).toHaveLength(1);
    // Only what was there before is left; the topic does not exist and its name is free again.
    expect(partitionDirs(dataDir)).toEqual(['t-6']);
    expect(registryFiles(dataDir)).toEqual([]);
    expect(broker.topicNames()).toEqual([]);
    fs.rmSync(path.join(dataDir, 't-6'));
    const retried = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 10, replicationFactor: 1 }],
    });
    expect(retried.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  });

  it('removes the partitions it made when the registry file cannot be written', async () => {
    const { broker, dataDir } = leader(4);
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'topics'), 'not a directory');
    const response = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 6, replicationFactor: 1 }],
    });
    expect(response.topics[0]!.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(partitionDirs(dataDir)).toEqual([]);
    expect(broker.topicNames()).toEqual([]);
  });

  it('leaves nothing half-made when the server closes during a create', async () => {
    const { broker, dataDir } = leader(4);
    const creating = broker.createTopics({
      topics: [{ name: 't', numPartitions: 40, replicationFactor: 1 }],
    });
    await nextTurn();
    expect(partitionDirs(dataDir).length).toBeGreaterThan(0);
    await broker.close();
    const response: CreateTopicsResponse = await creating;
    expect(response.topics[0]).toEqual({
      name: 't',
      errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER,
      errorMessage: 'the server is shutting down',
    });
    expect(partitionDirs(dataDir)).toEqual([]);
    expect(registryFiles(dataDir)).toEqual([]);

    // A restart finds no topic.
    const restarted = h.start(leaderConfig(dataDir));
    expect(restarted.topicNames()).toEqual([]);
  });
});
