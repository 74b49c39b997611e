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
  /** Opens a WatchGroups call. Optional: without it `CohortAdmin.watchGroups` throws. */
  watchGroups?: GroupWatchTransport['watchGroups'];
}
