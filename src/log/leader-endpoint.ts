import type { FetchRequest, FetchResponse, MetadataRequest, MetadataResponse } from './broker-protocol';

/**
 * How a follower reaches its leader: the two Broker RPCs replication needs. The log layer knows nothing
 * of the transport; the server layer implements this over grpc-js (and tests with an in-memory leader).
 *
 * Both calls reject when the leader cannot be reached or the signal aborts them; protocol outcomes come
 * back as error codes in the response, as from any client.
 */
export interface LeaderEndpoint {
  metadata(request: MetadataRequest, signal: AbortSignal): Promise<MetadataResponse>;
  fetch(request: FetchRequest, signal: AbortSignal): Promise<FetchResponse>;
  /** Releases the connection; calls after it reject. */
  close(): void;
}
