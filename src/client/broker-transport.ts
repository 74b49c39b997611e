import type {
  CreateTopicsRequest,
  CreateTopicsResponse,
  FetchRequest,
  FetchResponse,
  ListOffsetsRequest,
  ListOffsetsResponse,
  MetadataRequest,
  MetadataResponse,
  ProduceRequest,
  ProduceResponse,
} from './broker-messages';
import type { CallOptions } from './group-transport';

/**
 * How consumers, producers and `CohortAdmin` reach cohort's log (the `cohort.v1.Broker` service). Each
 * method resolves with the broker's response, whose `errorCode`s carry the outcomes, and rejects only when
 * no response arrived (connection refused, deadline, cancelled, an undecodable request) with a `CohortError`
 * rebuilt from the gRPC status. A Fetch may park on the server for its `maxWaitMs`: aborting
 * `options.signal` cancels it and the server releases it.
 *
 * `GrpcTransport` is the real one; unit tests use an in-memory log.
 */
export interface BrokerTransport {
  createTopics(request: CreateTopicsRequest, options: CallOptions): Promise<CreateTopicsResponse>;
  metadata(request: MetadataRequest, options: CallOptions): Promise<MetadataResponse>;
  produce(request: ProduceRequest, options: CallOptions): Promise<ProduceResponse>;
  fetch(request: FetchRequest, options: CallOptions): Promise<FetchResponse>;
  listOffsets(request: ListOffsetsRequest, options: CallOptions): Promise<ListOffsetsResponse>;
}
