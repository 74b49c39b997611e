import { credentials, makeClientConstructor, Metadata, status } from '@grpc/grpc-js';
import type { ChannelCredentials } from '@grpc/grpc-js';
import type { Client, ServiceError } from '@grpc/grpc-js';
import type {
  FetchPartitionData,
  FetchRequest,
  FetchResponse,
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse,
} from '../log/broker-protocol';
import { LeaderRefusedCall, type LeaderEndpoint } from '../log/leader-endpoint';
import type { ClusterNodeAddress } from '../log/partition-roles';
import type { LeaderEndpointFactory } from '../log/replica-fetcher-manager';
import type { LogRecord } from '../log/storage';
import { decodeInt64 } from './int64';
import { loadCohortProtos } from './load-protos';
import type { NodeCredentials } from './node-credentials';
import { NODE_AUTH_METADATA_KEY, NODE_ID_METADATA_KEY } from './node-credentials';

/** A fetch response may carry up to 10 MiB of records (the follower's max_bytes), past grpc-js's 4 MiB. */
const MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024;
/** How long beyond the leader's own wait a call may take before the follower gives up on the connection. */
const CALL_DEADLINE_MARGIN_MS = 30_000;
/**
 * Statuses that mean the leader received the call and turned it down (credentials, a method it does not
 * serve, a request it cannot read); every other failure is the transport's (unreachable, deadline, reset).
 */
const REFUSAL_STATUSES: ReadonlySet<number> = new Set([
  status.INVALID_ARGUMENT,
  status.PERMISSION_DENIED,
  status.UNIMPLEMENTED,
  status.UNAUTHENTICATED,
]);
/**
 * grpc-js backs off reconnecting up to 2 minutes by default; a follower must find a restarted leader
 * about as fast as its own fetch backoff (1 s) retries.
 */
const MAX_RECONNECT_BACKOFF_MS = 1_000;

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };

/** FetchResponse as decoded with `longs: String`. */
interface FetchResponseWire {
  errorCode: number;
  responses: {
    name: string;
    partitions: (Omit<FetchPartitionData, 'highWatermark' | 'logStartOffset' | 'records'> & {
      highWatermark: string;
      logStartOffset: string;
      records: {
        offset: string;
        timestampMs: string;
        key: Buffer;
        value: Buffer;
        headers: { key: string; value: Buffer }[];
        leaderEpoch: number;
        valueNull: boolean;
      }[];
    })[];
  }[];
}

/** OffsetForLeaderEpochResponse as decoded with `longs: String`. */
interface OffsetForLeaderEpochResponseWire {
  topics: {
    name: string;
    partitions: {
      errorCode: number;
      partition: number;
      leaderEpoch: number;
      endOffset: string;
    }[];
  }[];
}

function decodeOffsetForLeaderEpochResponse(
  wire: OffsetForLeaderEpochResponseWire,
): OffsetForLeaderEpochResponse {
  return {
    topics: wire.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({
        errorCode: partition.errorCode,
        partition: partition.partition,
        leaderEpoch: partition.leaderEpoch,
        endOffset: decodeInt64(partition.endOffset, 'end_offset'),
      })),
    })),
  };
}

function decodeFetchResponse(wire: FetchResponseWire): FetchResponse {
  return {
    errorCode: wire.errorCode,
    responses: wire.responses.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({
        partitionIndex: partition.partitionIndex,
        errorCode: partition.errorCode,
        highWatermark: decodeInt64(partition.highWatermark, 'high_watermark'),
        logStartOffset: decodeInt64(partition.logStartOffset, 'log_start_offset'),
        records: partition.records.map((record): LogRecord & { readonly leaderEpoch: number } => ({
          offset: decodeInt64(record.offset, 'offset'),
          timestampMs: decodeInt64(record.timestampMs, 'timestamp_ms'),
          // The wire has no null bytes: the leader sends a null key as empty (it stores no empty keys).
          key: record.key.length === 0 ? null : record.key,
          // A null value stays null in the follower's copy, as in the leader's.
          value: record.valueNull ? null : record.value,
          headers: record.headers,
          // The epoch the leader wrote it in: the follower's log keeps it, so it can later tell where
          // its history and a new leader's part.
          leaderEpoch: record.leaderEpoch,
        })),
      })),
    })),
  };
}

/** How a follower connects to a leader node. */
export interface LeaderConnectionOptions {
  /** How to reach the leader: plaintext unless the cluster runs TLS. */
  readonly credentials?: ChannelCredentials;
  /**
   * This node's credentials (node-credentials.ts), sent with every call: the leader then counts the fetch
   * as this node's replication, and asks for no token.
   */
  readonly nodeCredentials?: NodeCredentials;
}

/**
 * A follower's connection to one leader node: Fetch and OffsetForLeaderEpoch over grpc-js, on one
 * channel. An aborted signal cancels the call; a leader that stops answering is given up on after its
 * own wait plus a margin, so a dead connection cannot stall replication forever.
 */
export class BrokerLeaderEndpoint implements LeaderEndpoint {
  private readonly client: Client;
  private readonly fetchCall: RawUnary;
  private readonly offsetForLeaderEpochCall: RawUnary;
  private readonly nodeId: string | undefined;
  private readonly nodeAuth: string | undefined;

  constructor(
    readonly target: string,
    options: LeaderConnectionOptions = {},
  ) {
    this.nodeId = options.nodeCredentials === undefined ? undefined : String(options.nodeCredentials.nodeId);
    this.nodeAuth = options.nodeCredentials?.auth;
    const Broker = makeClientConstructor(loadCohortProtos().broker, 'cohort.v1.Broker');
    this.client = new Broker(target, options.credentials ?? credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_BYTES,
      'grpc.initial_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS / 10,
      'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS,
    });
    const methods = this.client as unknown as Record<string, RawUnary>;
    this.fetchCall = methods.Fetch!.bind(this.client);
    this.offsetForLeaderEpochCall = methods.OffsetForLeaderEpoch!.bind(this.client);
  }

  async fetch(request: FetchRequest, signal: AbortSignal): Promise<FetchResponse> {
    const wire = await this.call<FetchResponseWire>(this.fetchCall, request, request.maxWaitMs, signal);
    return decodeFetchResponse(wire);
  }

  async offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    signal: AbortSignal,
  ): Promise<OffsetForLeaderEpochResponse> {
    const wire = await this.call<OffsetForLeaderEpochResponseWire>(
      this.offsetForLeaderEpochCall,
      request,
      0,
      signal,
    );
    return decodeOffsetForLeaderEpochResponse(wire);
  }

  close(): void {
    this.client.close();
  }

  private call<T>(method: RawUnary, request: unknown, waitMs: number, signal: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal.aborted) {
        reject(new Error('cancelled before it was sent'));
        return;
      }
      const metadata = new Metadata();
      if (this.nodeId !== undefined && this.nodeAuth !== undefined) {
        metadata.set(NODE_ID_METADATA_KEY, this.nodeId);
        metadata.set(NODE_AUTH_METADATA_KEY, this.nodeAuth);
      }
      const call = method(
        request,
        metadata,
        { deadline: Date.now() + waitMs + CALL_DEADLINE_MARGIN_MS },
        (error, response) => {
          signal.removeEventListener('abort', onAbort);
          if (error === null) resolve(response as T);
          else if (REFUSAL_STATUSES.has(error.code))
            reject(new LeaderRefusedCall(error.message, { cause: error }));
          else reject(error);
        },
      );
      const onAbort = (): void => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** `host:port` for a gRPC target; an IPv6 literal in brackets. */
function targetOf(node: ClusterNodeAddress): string {
  return node.host.includes(':') ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`;
}

/**
 * Cluster mode: the ReplicaFetcherManager's way to reach a leader node, one BrokerLeaderEndpoint (one
 * channel) per fetcher, all with the same connection options (TLS, node-to-node credentials).
 */
export function brokerLeaderEndpointFactory(options: LeaderConnectionOptions = {}): LeaderEndpointFactory {
  return (node) => new BrokerLeaderEndpoint(targetOf(node), options);
}
