import { ErrorCode } from '../errors';
import type { BrokerRequestContext } from './broker-protocol';

/**
 * Whether a request that names a replica (Fetch with `replica_id` >= 0, OffsetForLeaderEpoch) may act as
 * that replica. Replication is node-to-node traffic: counting a fetch as follower `r` moves `r`'s log end
 * offset, which acknowledges acks=-1 writes and keeps `r` in the ISR, so only the node that proved to be
 * `r` (`context.authenticatedNodeId`, set by the server from the cluster secret) may send it.
 *
 * - A consumer (`replicaId` = CONSUMER_REPLICA_ID, -1, or any other negative id) is never refused here.
 * - With `requireAuthenticatedReplicas` off (a server that replicates nothing, or a transition), every
 *   request passes, as before node authentication existed.
 * - Otherwise the authenticated node id must equal `replicaId`; a client (no node id) or another node
 *   gets CLUSTER_AUTHORIZATION_FAILED (Kafka's answer when a principal lacks ClusterAction).
 *
 * Whether `replicaId` is a replica of the partition at its current epoch is the replica manager's check,
 * not this one's. Pure and allocation-free: it runs on every replica fetch.
 */
export function replicaAuthorizationError(
  replicaId: number,
  context: BrokerRequestContext | undefined,
  requireAuthenticatedReplicas: boolean,
): ErrorCode {
  // Kafka treats every negative id as a non-replica (CONSUMER_REPLICA_ID, the debugging id -2, ...).
  if (replicaId < 0) return ErrorCode.NONE;
  if (!requireAuthenticatedReplicas) return ErrorCode.NONE;
  return context?.authenticatedNodeId === replicaId ? ErrorCode.NONE : ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
}
