import { performance } from 'node:perf_hooks';
import type { ErrorCode } from '../../src/errors';
import type {
  DeleteGroupsRequest,
  DeleteGroupsResponse,
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  GenerationWatcher,
  GroupCoordinatorService,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  RequestContext,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../../src/group/group-protocol';

/** Heartbeat outcomes seen by the server, so the bench can prove its load was real successes. */
export interface HeartbeatCounts {
  ok: number;
  /** errorCode → count, for every answer that was not NONE, and 'rejected' for thrown errors. */
  other: Record<string, number>;
}

/**
 * The real coordinator with its Heartbeat answers counted. The count costs one comparison per call: the
 * coordinator answers a successful heartbeat with a shared, already-resolved promise (`okReply`), so only
 * other answers take the slow path that reads the code. The Noop baseline pays the same increment.
 */
export class CountingCoordinator implements GroupCoordinatorService {
  heartbeatsOk = 0;
  /** performance.now() of the last JoinGroup received and of the last JoinGroup / SyncGroup answered. */
  readonly marks = { lastJoinReceivedMs: 0, lastJoinAnsweredMs: 0, lastSyncAnsweredMs: 0 };
  private readonly other = new Map<string, number>();

  constructor(
    private readonly inner: GroupCoordinatorService,
    private readonly okReply: Promise<HeartbeatResponse>,
  ) {}

  heartbeat(request: HeartbeatRequest, context: RequestContext): Promise<HeartbeatResponse> {
    const reply = this.inner.heartbeat(request, context);
    if (reply === this.okReply) this.heartbeatsOk++;
    else
      reply.then(
        (response) => (response.errorCode === 0 ? this.heartbeatsOk++ : this.countOther(response.errorCode)),
        () => this.countOther('rejected'),
      );
    return reply;
  }

  counts(): HeartbeatCounts {
    return { ok: this.heartbeatsOk, other: Object.fromEntries(this.other) };
  }

  private countOther(code: ErrorCode | 'rejected'): void {
    const key = String(code);
    this.other.set(key, (this.other.get(key) ?? 0) + 1);
  }

  joinGroup(request: JoinGroupRequest, context: RequestContext): Promise<JoinGroupResponse> {
    this.marks.lastJoinReceivedMs = performance.now();
    const reply = this.inner.joinGroup(request, context);
    void reply.then(() => (this.marks.lastJoinAnsweredMs = performance.now()), noop);
    return reply;
  }
  syncGroup(request: SyncGroupRequest, context: RequestContext): Promise<SyncGroupResponse> {
    const reply = this.inner.syncGroup(request, context);
    void reply.then(() => (this.marks.lastSyncAnsweredMs = performance.now()), noop);
    return reply;
  }
  leaveGroup(request: LeaveGroupRequest, context: RequestContext): Promise<LeaveGroupResponse> {
    return this.inner.leaveGroup(request, context);
  }
  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse> {
    return this.inner.offsetCommit(request, context);
  }
  offsetFetch(request: OffsetFetchRequest, context: RequestContext): Promise<OffsetFetchResponse> {
    return this.inner.offsetFetch(request, context);
  }
  describeGroups(request: DescribeGroupsRequest, context: RequestContext): Promise<DescribeGroupsResponse> {
    return this.inner.describeGroups(request, context);
  }
  listGroups(request: ListGroupsRequest, context: RequestContext): Promise<ListGroupsResponse> {
    return this.inner.listGroups(request, context);
  }
  deleteGroups(request: DeleteGroupsRequest, context: RequestContext): Promise<DeleteGroupsResponse> {
    return this.inner.deleteGroups(request, context);
  }
  unwatchMember(groupId: string, memberId: string, watcher: GenerationWatcher): void {
    this.inner.unwatchMember?.(groupId, memberId, watcher);
  }
  shutdown(): void {
    this.inner.shutdown();
  }
}

function noop(): void {}
