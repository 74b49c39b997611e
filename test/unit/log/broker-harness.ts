import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BrokerConfig, FetchResponse, ProduceResponse, ReplicaManagerOptions } from '../../../src/log';
import { ReplicaManager } from '../../../src/log';
import type { LogConfig, LogRecord } from '../../../src/log/storage';
import { ManualTime } from '../../../src/time';
import { FakeCluster } from './fake-cluster';

/** Settings of node 0 with a 10 s lag and fsync on every append. */
export function leaderConfig(dataDir: string, overrides: Partial<BrokerConfig> = {}): BrokerConfig {
  return {
    nodeId: 0,
    minInsyncReplicas: 1,
    replicaLagTimeMaxMs: 10_000,
    dataDir,
    logConfig: {},
    ...overrides,
  };
}

/**
 * Replica managers on one ManualTime, each in its own directory under one temp dir, closed and removed by
 * `cleanup()`. Nothing sleeps: time moves only through `time.advance`.
 */
export class BrokerHarness {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-log-'));
  readonly time = new ManualTime();
  readonly isrChanges: { topic: string; partitionIndex: number; isr: readonly number[] }[] = [];
  readonly errors: unknown[] = [];
  /** The in-memory metadata store `clusterNode` and `replicatedLeader` take their roles from. */
  readonly cluster = new FakeCluster();
  private readonly managers: ReplicaManager[] = [];

  dir(name: string): string {
    return path.join(this.root, name);
  }

  /** A started replica manager. */
  start(config: BrokerConfig, options: Partial<ReplicaManagerOptions> = {}): ReplicaManager {
    const manager = new ReplicaManager(config, {
      time: this.time,
      listener: {
        onIsrChange: (topic, partitionIndex, isr) => this.isrChanges.push({ topic, partitionIndex, isr }),
        onError: (error) => this.errors.push(error),
      },
      ...options,
    });
    manager.startup();
    this.managers.push(manager);
    return manager;
  }

  /** A single node (node 0): it leads every partition it creates, each with itself as the one replica. */
  leader(overrides: Partial<BrokerConfig> = {}, logConfig: Partial<LogConfig> = {}): ReplicaManager {
    return this.start(leaderConfig(this.dir('leader'), { ...overrides, logConfig }));
  }

  /**
   * Node `nodeId` in cluster mode on `this.cluster`, live there: its roles come from applyClusterMetadata
   * and its ISR changes are committed through the fake store. In `node-<id>` unless `overrides.dataDir`.
   */
  clusterNode(
    nodeId: number,
    overrides: Partial<BrokerConfig> = {},
    options: Partial<ReplicaManagerOptions> = {},
  ): ReplicaManager {
    const config = leaderConfig(this.dir(`node-${nodeId}`), { nodeId, ...overrides });
    const manager = this.start(config, { isrChangeProposer: this.cluster.proposerFor(nodeId), ...options });
    this.cluster.managers.set(nodeId, manager);
    this.liveNode(nodeId);
    return manager;
  }

  /** Lists `nodeId` as live in the cluster (a node without a manager: a test fetches as it). */
  liveNode(nodeId: number): void {
    if (!this.cluster.liveNodes.some((node) => node.nodeId === nodeId)) {
      this.cluster.liveNodes.push({ nodeId, host: `node-${nodeId}`, port: 9000 + nodeId });
    }
  }

  /**
   * A leader with followers as the controller makes one: node 0 in cluster mode, without replica
   * authentication (a test fetches as followers 1 and 2 itself; the authentication tests require it).
   * `leadTopic` gives it partitions.
   */
  replicatedLeader(
    overrides: Partial<BrokerConfig> = {},
    logConfig: Partial<LogConfig> = {},
  ): ReplicaManager {
    return this.clusterNode(0, {
      dataDir: this.dir('leader'),
      requireAuthenticatedReplicas: false,
      ...overrides,
      logConfig,
    });
  }

  /**
   * `numPartitions` partitions of `topic`, each on replicas 0 .. replicationFactor - 1, led by node 0 at
   * epoch 0 with every replica in sync: what the controller writes for a new topic (published at once).
   */
  leadTopic(topic: string, replicationFactor: number, numPartitions = 1): void {
    const replicas = Array.from({ length: replicationFactor }, (_, id) => id);
    for (const id of replicas) this.liveNode(id);
    for (let partitionIndex = 0; partitionIndex < numPartitions; partitionIndex++) {
      this.cluster.set(topic, partitionIndex, { leader: 0, leaderEpoch: 0, isr: replicas, replicas }, false);
    }
    this.cluster.publish();
  }

  async cleanup(): Promise<void> {
    for (const manager of this.managers) await manager.close();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

export function text(value: string): Buffer {
  return Buffer.from(value, 'utf8');
}

/** A produce record with value `value`, no key, the append time as timestamp. */
export function record(
  value: string,
  key = '',
): {
  timestampMs: number;
  key: Buffer;
  value: Buffer;
  headers: never[];
} {
  return { timestampMs: 0, key: text(key), value: text(value), headers: [] };
}

/** The values of fetched records, as strings. */
export function values(records: readonly LogRecord[]): string[] {
  return records.map((r) => (r.value === null ? '<null>' : r.value.toString('utf8')));
}

/** The single partition of a one-topic, one-partition response. */
export function onlyPartition<T>(
  response: { topics: { partitions: T[] }[] } | { responses: { partitions: T[] }[] },
): T {
  const topics = 'topics' in response ? response.topics : response.responses;
  expect(topics).toHaveLength(1);
  expect(topics[0]!.partitions).toHaveLength(1);
  return topics[0]!.partitions[0]!;
}

export function produced(response: ProduceResponse): ProduceResponse['topics'][number]['partitions'][number] {
  return onlyPartition(response);
}

export function fetched(response: FetchResponse): FetchResponse['responses'][number]['partitions'][number] {
  return onlyPartition(response);
}

/** Lets promise callbacks and fsyncs on the thread pool run; bounded, never a timed sleep. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Waits for `condition`, yielding to the event loop between checks (fsync completes on the thread pool). */
export async function until(
  condition: () => boolean,
  what = 'the condition',
  maxRounds = 2_000,
): Promise<void> {
  for (let i = 0; i < maxRounds; i++) {
    if (condition()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`${what} did not hold after ${maxRounds} turns of the event loop`);
}

/** Tracks whether a promise has settled, without awaiting it. */
export function track<T>(promise: Promise<T>): { readonly isSettled: boolean; readonly value: Promise<T> } {
  const state = { isSettled: false, value: promise };
  promise.then(
    () => (state.isSettled = true),
    () => (state.isSettled = true),
  );
  return state;
}
