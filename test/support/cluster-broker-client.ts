import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import type { Client, GrpcObject, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';
import type { SeenRecord } from './log-history';

/**
 * A cohort.v1.Broker client for cluster tests: one channel per node, int64 decoded as numbers, every call
 * with a deadline (a SIGSTOPped node answers nothing, and a test must not hang on it), and reconnects
 * retried quickly, so a client of a node killed and restarted on the same port finds it again within
 * a fraction of a second instead of grpc-js's default backoff of up to two minutes.
 *
 * Only the fields the cluster tests read are typed. `leaderEpoch` and `currentLeaderEpoch` are optional:
 * they are absent from answers of a server whose protos do not have them.
 */
export interface PartitionMetadataWire {
  partitionIndex: number;
  leaderId: number;
  leaderEpoch?: number;
  replicaNodes: number[];
  isrNodes: number[];
  errorCode: number;
}

export interface MetadataResponseWire {
  brokers: { nodeId: number; host: string; port: number }[];
  topics: { name: string; errorCode: number; partitions: PartitionMetadataWire[] }[];
}

export interface ProduceResponseWire {
  topics: { name: string; partitions: { partitionIndex: number; errorCode: number; baseOffset: number }[] }[];
}

export interface FetchResponseWire {
  errorCode: number;
  responses: {
    name: string;
    partitions: {
      partitionIndex: number;
      errorCode: number;
      highWatermark: number;
      records: { offset: number; value: Buffer; leaderEpoch?: number }[];
    }[];
  }[];
}

export interface CreateTopicsResponseWire {
  topics: { name: string; errorCode: number; errorMessage: string }[];
}

type Call<Res> = (request: unknown, deadlineMs: number) => Promise<Res>;

export interface ClusterBrokerClient {
  readonly target: string;
  readonly metadata: Call<MetadataResponseWire>;
  readonly produce: Call<ProduceResponseWire>;
  readonly fetch: Call<FetchResponseWire>;
  readonly createTopics: Call<CreateTopicsResponseWire>;
  close(): void;
}

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => unknown;

let brokerConstructor: ServiceClientConstructor | undefined;

export function clusterBrokerClient(target: string): ClusterBrokerClient {
  brokerConstructor ??= (
    (
      loadPackageDefinition(loadSync([...PROTO_FILES], { ...PROTO_LOADER_OPTIONS, longs: Number }))
        .cohort as GrpcObject
    ).v1 as GrpcObject
  ).Broker as ServiceClientConstructor;
  const client: Client = new brokerConstructor(target, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.use_local_subchannel_pool': 1,
    'grpc.initial_reconnect_backoff_ms': 50,
    'grpc.min_reconnect_backoff_ms': 50,
    'grpc.max_reconnect_backoff_ms': 250,
  });
  const unary = <Res>(method: string): Call<Res> => {
    const fn = (client as unknown as Record<string, RawUnary>)[method]!.bind(client);
    return (request, deadlineMs) =>
      new Promise<Res>((resolve, reject) => {
        fn(request, new Metadata(), { deadline: Date.now() + deadlineMs }, (error, response) =>
          error !== null ? reject(error) : resolve(response as Res),
        );
      });
  };
  return {
    target,
    metadata: unary('Metadata'),
    produce: unary('Produce'),
    fetch: unary('Fetch'),
    createTopics: unary('CreateTopics'),
    close: () => client.close(),
  };
}

/** A produce request of one record to one partition. */
export function produceOne(
  topic: string,
  partition: number,
  value: Buffer | string,
  acks: number,
  timeoutMs: number,
): unknown {
  return {
    acks,
    timeoutMs,
    topics: [
      {
        name: topic,
        partitions: [
          {
            partitionIndex: partition,
            records: [{ timestampMs: 0, key: Buffer.alloc(0), value: Buffer.from(value), headers: [] }],
          },
        ],
      },
    ],
  };
}

/** Kafka's "no epoch known": the leader checks none. */
export const NO_LEADER_EPOCH = -1;

/**
 * A consumer fetch of one partition. `currentLeaderEpoch` (Kafka's KIP-320 field; -1 when unknown) lets a
 * leader that moved on answer FENCED_LEADER_EPOCH instead of serving a consumer of a deposed epoch. A
 * server whose protos lack the field never sees it.
 */
export function fetchOne(
  topic: string,
  partition: number,
  fetchOffset: number,
  options: { maxWaitMs: number; currentLeaderEpoch?: number },
): unknown {
  return {
    replicaId: -1,
    maxWaitMs: options.maxWaitMs,
    minBytes: 1,
    maxBytes: 16 * 1024 * 1024,
    topics: [
      {
        name: topic,
        partitions: [
          {
            partitionIndex: partition,
            fetchOffset,
            partitionMaxBytes: 16 * 1024 * 1024,
            currentLeaderEpoch: options.currentLeaderEpoch ?? NO_LEADER_EPOCH,
          },
        ],
      },
    ],
  };
}

/** A Fetch answer's records as a history keeps them (with the epoch each was written in, where told). */
export function seenRecords(
  records: readonly { offset: number; value: Buffer; leaderEpoch?: number }[],
): SeenRecord[] {
  return records.map((r) => ({
    offset: r.offset,
    value: r.value.toString(),
    ...(r.leaderEpoch === undefined ? {} : { leaderEpoch: r.leaderEpoch }),
  }));
}

/** What a failed call says, for a history's `info`: the gRPC status name and message. */
export function describeCallError(error: unknown): string {
  const status = (error as Partial<ServiceError>).code;
  const message = error instanceof Error ? error.message : String(error);
  return status === undefined ? message : `gRPC ${status}: ${message}`;
}
