import type {
  FetchRequest,
  FetchResponse,
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse,
} from './broker-protocol';

/**
 * A call the leader answered with a refusal (its credentials check, an unknown method) rather than one
 * that could not reach it: the follower reports the two differently, since only one of them is an
 * operator's to mend. An endpoint rejects with this; anything else it rejects with counts as unreachable.
 */
export class LeaderRefusedCall extends Error {
  override readonly name = 'LeaderRefusedCall';
}

/**
 * How a follower reaches its leader: the Broker RPCs replication needs. The log layer knows nothing of
 * the transport; the server layer implements this over grpc-js (and tests with an in-memory leader).
 *
 * The calls reject when the leader cannot be reached or the signal aborts them; protocol outcomes come
 * back as error codes in the response, as from any client.
 */
export interface LeaderEndpoint {
  fetch(request: FetchRequest, signal: AbortSignal): Promise<FetchResponse>;
  /** Where each partition's epoch ends on the leader (KIP-101/279), before a new follower fetches. */
  offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    signal: AbortSignal,
  ): Promise<OffsetForLeaderEpochResponse>;
  /** Releases the connection; calls after it reject. */
  close(): void;
}
