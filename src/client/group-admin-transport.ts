import type {
  DeleteGroupsRequest,
  DeleteGroupsResponse,
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
} from '../protocol/group-messages';
import type { CohortError } from '../errors';
import type { CallOptions } from './group-transport';
import type { GroupWatchTransport } from './group-watch';

/**
 * How `CohortAdmin` reaches the group coordinator for what operators ask: describe, list and delete groups,
 * and read a group's committed offsets without joining it. Like `GroupTransport`, each method resolves with
 * the coordinator's response (outcomes in `errorCode`) and rejects only when no response arrived, with a
 * `CohortError`. `GrpcTransport` implements it on the same channel as everything else.
 */
export interface GroupAdminTransport {
  describeGroups(request: DescribeGroupsRequest, options: CallOptions): Promise<DescribeGroupsResponse>;
  listGroups(request: ListGroupsRequest, options: CallOptions): Promise<ListGroupsResponse>;
  deleteGroups(request: DeleteGroupsRequest, options: CallOptions): Promise<DeleteGroupsResponse>;
  offsetFetch(request: OffsetFetchRequest, options: CallOptions): Promise<OffsetFetchResponse>;
  /**
   * ListGroups on each node of a cluster separately, each node's call bounded by `nodeTimeoutMs` (within
   * `options.timeoutMs`): one answer or failure per node, so that a node that does not answer (killed, but
   * listed by Metadata until its session expires) costs one short call rather than the whole listing.
   * Optional: a transport without it talks to one server, and `listGroups` is that server's listing.
   */
  listGroupsOnEachNode?(
    request: ListGroupsRequest,
    options: CallOptions,
    nodeTimeoutMs: number,
  ): Promise<NodeListing[]>;
  /** Opens a WatchGroups call. Optional: without it `CohortAdmin.watchGroups` throws. */
  watchGroups?: GroupWatchTransport['watchGroups'];
}

/** One node's part of `listGroupsOnEachNode`: its answer, or why there is none. */
export type NodeListing =
  | { readonly address: string; readonly nodeId: number | null; readonly response: ListGroupsResponse }
  | { readonly address: string; readonly nodeId: number | null; readonly error: CohortError };
