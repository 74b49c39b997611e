import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  CONSUMER_REPLICA_ID,
  type BrokerRequestContext,
  type BrokerService,
  type FetchRequest,
  type ListOffsetsRequest,
  type OffsetForLeaderEpochRequest,
  type ProduceRecord,
  type ProduceRequest,
} from '../log/broker-protocol';
import type { ProduceRequestWire } from './broker-wire';
import { decodeInt64 } from './int64';
import { type CallObservers, type NodeAuthentication, unaryHandler, type UnaryMethod } from './unary-handler';

/** A message as decoded: int64 fields arrive as decimal strings (see load-protos.ts). */
type Int64Wire<T, K extends keyof T> = Omit<T, K> & { [P in K]: string };

/** As broker-wire.ts decodes it: int64 fields are numbers when exact, decimal strings when not. */
type ProduceWire = ProduceRequestWire;

type FetchWire = Omit<FetchRequest, 'topics'> & {
  topics: {
    name: string;
    partitions: Int64Wire<FetchRequest['topics'][number]['partitions'][number], 'fetchOffset'>[];
  }[];
};

type ListOffsetsWire = {
  topics: {
    name: string;
    partitions: Int64Wire<ListOffsetsRequest['topics'][number]['partitions'][number], 'timestamp'>[];
  }[];
};

function decodeProduce(wire: ProduceWire): ProduceRequest {
  return {
    acks: wire.acks,
    timeoutMs: wire.timeoutMs,
    topics: wire.topics.map((topic, t) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition, p) => ({
        partitionIndex: partition.partitionIndex,
        records: partition.records.map((record, r): ProduceRecord => ({
          timestampMs: decodeInt64(
            record.timestampMs,
            `topics[${t}].partitions[${p}].records[${r}].timestamp_ms`,
          ),
          key: record.key,
          value: record.valueNull ? null : record.value,
          headers: record.headers,
        })),
      })),
    })),
  };
}

/** A consumer's Fetch that leaves `max_bytes` unset (0) gets Kafka's consumer default (fetch.max.bytes). */
export const DEFAULT_FETCH_MAX_BYTES = 52_428_800;
/** ... and per partition, Kafka's max.partition.fetch.bytes. */
export const DEFAULT_PARTITION_FETCH_MAX_BYTES = 1_048_576;

/**
 * proto3 sends nothing for a field left at 0, so a consumer that fills in only the topics and offsets must
 * still be one: `replica_id` 0 from a caller that did not prove to be node 0 (the cluster secret) is a
 * consumer, not follower 0 (which would be refused CLUSTER_AUTHORIZATION_FAILED); `max_bytes` and
 * `partition_max_bytes` 0 mean Kafka's consumer defaults, not one record per Fetch. Followers always
 * authenticate and always say how much they want.
 */
function decodeFetch(wire: FetchWire, context: BrokerRequestContext | undefined): FetchRequest {
  return {
    ...wire,
    replicaId:
      wire.replicaId === 0 && context?.authenticatedNodeId !== 0 ? CONSUMER_REPLICA_ID : wire.replicaId,
    maxBytes: wire.maxBytes === 0 ? DEFAULT_FETCH_MAX_BYTES : wire.maxBytes,
    topics: wire.topics.map((topic, t) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition, p) => ({
        partitionIndex: partition.partitionIndex,
        fetchOffset: decodeInt64(partition.fetchOffset, `topics[${t}].partitions[${p}].fetch_offset`),
        partitionMaxBytes:
          partition.partitionMaxBytes === 0 ? DEFAULT_PARTITION_FETCH_MAX_BYTES : partition.partitionMaxBytes,
        // `optional` on the wire: absent stays undefined (no check), as a client that never sends it.
        currentLeaderEpoch: partition.currentLeaderEpoch,
      })),
    })),
  };
}

function decodeListOffsets(wire: ListOffsetsWire): ListOffsetsRequest {
  return {
    topics: wire.topics.map((topic, t) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition, p) => ({
        partitionIndex: partition.partitionIndex,
        timestamp: decodeInt64(partition.timestamp, `topics[${t}].partitions[${p}].timestamp`),
        currentLeaderEpoch: partition.currentLeaderEpoch,
      })),
    })),
  };
}

/**
 * Resolves with `value` two turns of the event loop later. An acks=0 producer does not wait for its answer
 * (Kafka sends it none), so it goes last:
 * - not in this turn, where its encoding would delay the responses of the Fetches its append woke (Node
 *   writes a turn's HTTP/2 frames at the end of the turn);
 * - nor in the next one, where it would reach a client that also consumes (a consume-transform-produce
 *   application, or a producer sharing the consumers' connection) together with those responses, and be
 *   read before them. Measured in bench:log's wake section (1 parked Fetch, p50 ratio to the bare long
 *   poll, interleaved runs): with the producer on its own connection 1.45 / 1.26 / 1.28 one turn later,
 *   1.17 / 1.25 / 1.17 two turns later; on the consumers' connection 1.35 (median of 5) one turn later,
 *   1.30 two turns later, 1.41 in the same turn.
 */
function twoTurnsLater<T>(value: T): Promise<T> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve, value)));
}

/**
 * cohort.v1.Broker over grpc-js: decode → replica manager → encode. Decoded messages already have the log
 * layer's shapes (broker-protocol.ts mirrors the proto); only int64 fields need converting, exactly or not
 * at all (INVALID_ARGUMENT). Produce and Fetch may park: the unary adapter's cancel hook releases them when the
 * caller goes away. With `nodes`, every call's node credentials are checked (a replica fetch names the
 * node it proves to be: `authenticatedNodeId`); without, the context of every call is a client's.
 */
export function brokerService(
  broker: BrokerService,
  logger: Logger,
  observers?: CallObservers,
  nodes?: NodeAuthentication,
): UntypedServiceImplementation {
  const service = 'cohort.v1.Broker';
  const handler = <Req, Res>(method: string, handle: UnaryMethod<Req, Res>) =>
    unaryHandler(`/${service}/${method}`, logger, handle, observers?.(service, method), nodes);
  return {
    CreateTopics: handler('CreateTopics', broker.createTopics.bind(broker)),
    Metadata: handler('Metadata', broker.metadata.bind(broker)),
    // Not async functions: the unary adapter already turns a throw into a rejection, and each async
    // wrapper would add promise hops between a woken Fetch and its answer.
    Produce: handler('Produce', (request: ProduceWire, context) => {
      const produced = broker.produce(decodeProduce(request), context);
      return request.acks === 0 ? produced.then(twoTurnsLater) : produced;
    }),
    Fetch: handler('Fetch', (request: FetchWire, context) =>
      broker.fetch(decodeFetch(request, context), context),
    ),
    ListOffsets: handler('ListOffsets', async (request: ListOffsetsWire) =>
      broker.listOffsets(decodeListOffsets(request)),
    ),
    // Decoded as the domain has it (no int64 in the request); the context carries the caller's node id.
    OffsetForLeaderEpoch: handler('OffsetForLeaderEpoch', (request: OffsetForLeaderEpochRequest, context) =>
      broker.offsetForLeaderEpoch(request, context),
    ),
  };
}
