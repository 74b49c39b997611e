import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import type { Client, GrpcObject, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { CohortConfig } from '../../src/config';
import { createConfig } from '../../src/config';
import { ErrorCode } from '../../src/errors';
import type * as broker from '../../src/log/broker-protocol';
import type { CohortServer } from '../../src/server';
import { createServer } from '../../src/server';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';
import type { LogLine } from '../support/capture-logger';
import { captureLogger } from '../support/capture-logger';
import { TEST_CLUSTER_SECRET } from '../support/cluster-secret';

/** Records as a client reads them back: int64 as numbers, bytes as Buffers (a null key is empty). */
export interface WireRecord {
  offset: number;
  timestampMs: number;
  key: Buffer;
  value: Buffer;
  headers: { key: string; value: Buffer }[];
  leaderEpoch: number;
}
type Wire<T> = T extends readonly (infer U)[]
  ? Wire<U>[]
  : T extends object
    ? { -readonly [K in keyof T]: Wire<T[K]> }
    : T;
export type FetchResponseWire = Omit<Wire<broker.FetchResponse>, 'responses'> & {
  responses: {
    name: string;
    partitions: (Omit<Wire<broker.FetchPartitionData>, 'records'> & { records: WireRecord[] })[];
  }[];
};

export interface CallOptions {
  readonly deadlineMs?: number;
  readonly signal?: AbortSignal;
}
type UnaryCall<Req, Res> = (request: Req, options?: CallOptions) => Promise<Res>;

/** A cohort.v1.Broker client on its own channel. Requests may carry int64 as numbers or decimal strings. */
export interface BrokerClient {
  readonly createTopics: UnaryCall<Wire<broker.CreateTopicsRequest>, Wire<broker.CreateTopicsResponse>>;
  readonly metadata: UnaryCall<Wire<broker.MetadataRequest>, Wire<broker.MetadataResponse>>;
  readonly produce: UnaryCall<Wire<broker.ProduceRequest>, Wire<broker.ProduceResponse>>;
  readonly fetch: UnaryCall<Wire<broker.FetchRequest>, FetchResponseWire>;
  readonly listOffsets: UnaryCall<unknown, Wire<broker.ListOffsetsResponse>>;
  readonly offsetForLeaderEpoch: UnaryCall<
    Wire<broker.OffsetForLeaderEpochRequest>,
    Wire<broker.OffsetForLeaderEpochResponse>
  >;
  close(): void;
}

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };

let clientPackage: GrpcObject | undefined;

export function brokerClient(target: string): BrokerClient {
  clientPackage ??= loadPackageDefinition(
    loadSync([...PROTO_FILES], { ...PROTO_LOADER_OPTIONS, longs: Number }),
  );
  const Ctor = ((clientPackage.cohort as GrpcObject).v1 as GrpcObject).Broker as ServiceClientConstructor;
  const client: Client = new Ctor(target, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // Its own connection: a client made after a server restart must not inherit a shared one in backoff.
    'grpc.use_local_subchannel_pool': 1,
  });
  const unary = <Req, Res>(method: string): UnaryCall<Req, Res> => {
    const fn = (client as unknown as Record<string, RawUnary>)[method]!.bind(client);
    return (request, options = {}) =>
      new Promise<Res>((resolve, reject) => {
        const call = fn(
          request,
          new Metadata(),
          options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
          (error, response) => (error !== null ? reject(error) : resolve(response as Res)),
        );
        options.signal?.addEventListener('abort', () => call.cancel(), { once: true });
      });
  };
  return {
    createTopics: unary('CreateTopics'),
    metadata: unary('Metadata'),
    produce: unary('Produce'),
    fetch: unary('Fetch'),
    listOffsets: unary('ListOffsets'),
    offsetForLeaderEpoch: unary('OffsetForLeaderEpoch'),
    close: () => client.close(),
  };
}

/** A produce request for one partition; values become records without key or timestamp. */
export function produceRequest(
  topic: string,
  values: readonly string[],
  acks: number,
  options: { partitionIndex?: number; timeoutMs?: number } = {},
): Wire<broker.ProduceRequest> {
  return {
    acks,
    timeoutMs: options.timeoutMs ?? 10_000,
    topics: [
      {
        name: topic,
        partitions: [
          {
            partitionIndex: options.partitionIndex ?? 0,
            records: values.map((value) => ({
              timestampMs: 0,
              key: Buffer.alloc(0),
              value: Buffer.from(value),
              headers: [],
            })),
          },
        ],
      },
    ],
  };
}

/** A consumer fetch of one partition. */
export function fetchRequest(
  topic: string,
  fetchOffset: number,
  options: { maxWaitMs?: number; minBytes?: number; partitionIndex?: number; replicaId?: number } = {},
): Wire<broker.FetchRequest> {
  return {
    replicaId: options.replicaId ?? -1,
    maxWaitMs: options.maxWaitMs ?? 0,
    minBytes: options.minBytes ?? 1,
    maxBytes: 64 * 1024 * 1024,
    topics: [
      {
        name: topic,
        partitions: [
          { partitionIndex: options.partitionIndex ?? 0, fetchOffset, partitionMaxBytes: 64 * 1024 * 1024 },
        ],
      },
    ],
  };
}

/**
 * Polls `check` until it returns a value other than undefined, at most `attempts` times, `intervalMs`
 * apart: events are awaited by observing them (Metadata, offsets), with a bound instead of a fixed sleep.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  what: string,
  { attempts = 500, intervalMs = 20 } = {},
): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `${what} did not happen within ${attempts} checks${last === undefined ? '' : `: ${String(last)}`}`,
  );
}

export interface ClusterNode {
  readonly name: string;
  readonly server: CohortServer;
  readonly target: string;
  readonly client: BrokerClient;
  readonly logs: LogLine[];
  readonly dataDir: string;
}

/**
 * The followers' replica.lag.time.max.ms in the replication tests: small, so an ISR shrink happens within
 * a test; the followers wait at most half of it per fetch.
 */
export const TEST_REPLICA_LAG_MS = 2_000;

/**
 * In-process cohort servers on 127.0.0.1:0, each with its own data directory under one temp dir; every
 * server and client is closed and the directory removed by `cleanup()` (call it in afterEach).
 */
export class LogCluster {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-cluster-'));
  private readonly nodes = new Map<string, ClusterNode>();

  dataDir(name: string): string {
    return path.join(this.root, name);
  }

  node(name: string): ClusterNode {
    const node = this.nodes.get(name);
    if (node === undefined) throw new Error(`no running node ${name}`);
    return node;
  }

  /** Starts a node on a free port, or on `listen` (a restart where the followers look for it). */
  async start(
    name: string,
    overrides: Partial<CohortConfig> = {},
    listen = '127.0.0.1:0',
  ): Promise<ClusterNode> {
    if (this.nodes.has(name)) throw new Error(`${name} is already running`);
    const dataDir = this.dataDir(name);
    // Every node of the cluster shares the secret replication needs, unless a test says otherwise.
    const config = createConfig({
      logLevel: 'info',
      dataDir,
      clusterSecret: TEST_CLUSTER_SECRET,
      ...overrides,
      listen,
    });
    const { logger, lines } = captureLogger(config.logLevel);
    const server = createServer(config, { logger, shutdownGraceMs: 2_000 });
    const { port } = await server.start();
    const target = `127.0.0.1:${port}`;
    const node: ClusterNode = { name, server, target, client: brokerClient(target), logs: lines, dataDir };
    this.nodes.set(name, node);
    return node;
  }

  /** Closes a node's client and server; its data directory stays for a restart. */
  async stop(name: string): Promise<void> {
    const node = this.node(name);
    this.nodes.delete(name);
    node.client.close();
    await node.server.close();
  }

  async cleanup(): Promise<void> {
    for (const name of [...this.nodes.keys()]) await this.stop(name);
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** The ISR of a partition as the node reports it through Metadata. */
export async function isrOf(client: BrokerClient, topic: string, partitionIndex = 0): Promise<number[]> {
  const metadata = await client.metadata({ topics: [topic] });
  return [
    ...(metadata.topics[0]?.partitions.find((p) => p.partitionIndex === partitionIndex)?.isrNodes ?? []),
  ];
}

/** Waits until the partition's ISR, read through Metadata, is exactly `isr`. */
export function awaitIsr(
  client: BrokerClient,
  topic: string,
  isr: number[],
  partitionIndex = 0,
): Promise<true> {
  return eventually(
    async () => ((await isrOf(client, topic, partitionIndex)).join() === isr.join() ? true : undefined),
    `ISR of ${topic}-${partitionIndex} to become [${isr.join(', ')}]`,
  );
}

/**
 * What --min-insync-replicas 3 does once follower 2 of [0, 1, 2] has gone: an acks=-1 Produce in flight
 * when the ISR shrinks (after about `lagMs`) is appended but confirmed by too few replicas
 * (NOT_ENOUGH_REPLICAS_AFTER_APPEND); one sent after it is refused before anything is written.
 */
export async function expectMinIsrRefusals(
  leader: BrokerClient,
  topic: string,
  lagMs: number,
): Promise<void> {
  const pending = await leader.produce(produceRequest(topic, ['b'], -1, { timeoutMs: 4 * lagMs }));
  expect(pending.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
  const refused = await leader.produce(produceRequest(topic, ['c'], -1));
  expect(refused.topics[0]!.partitions[0]).toMatchObject({
    errorCode: ErrorCode.NOT_ENOUGH_REPLICAS,
    baseOffset: -1,
  });
}
