import type {
  GenerationWatcher,
  GroupCoordinatorService,
  RequestContext,
} from '../../src/group/group-protocol';

type Method = Exclude<
  keyof GroupCoordinatorService,
  'shutdown' | 'unwatchMember' | 'watchGroups' | 'lastHeartbeats'
>;
type Handlers = {
  [M in Method]?: (
    request: Parameters<GroupCoordinatorService[M]>[0],
    context: RequestContext,
  ) => ReturnType<GroupCoordinatorService[M]>;
};

export interface RecordedCall {
  readonly method: Method;
  readonly request: unknown;
  readonly context: RequestContext;
}

/**
 * A GroupCoordinatorService whose behaviour each test supplies, for testing the server layer on its own:
 * it records every call (with its context, so tests can watch the AbortSignal) and how often it was shut
 * down. A method without a handler rejects with a plain Error, which the server must turn into INTERNAL.
 */
export class FakeGroupCoordinator implements GroupCoordinatorService {
  readonly calls: RecordedCall[] = [];
  shutdownCount = 0;
  private readonly shutdownListeners: (() => void)[] = [];

  constructor(private readonly handlers: Handlers = {}) {}

  /** Runs `listener` when shutdown() is called: how a fake parks a call until the server closes. */
  onShutdown(listener: () => void): void {
    this.shutdownListeners.push(listener);
  }

  private invoke<M extends Method>(
    method: M,
    request: Parameters<GroupCoordinatorService[M]>[0],
    context: RequestContext,
  ): ReturnType<GroupCoordinatorService[M]> {
    this.calls.push({ method, request, context });
    const handler = this.handlers[method];
    if (handler === undefined) {
      return Promise.reject(new Error(`FakeGroupCoordinator has no ${method} handler`)) as ReturnType<
        GroupCoordinatorService[M]
      >;
    }
    return handler(request, context);
  }

  joinGroup: GroupCoordinatorService['joinGroup'] = (rq, ctx) => this.invoke('joinGroup', rq, ctx);
  syncGroup: GroupCoordinatorService['syncGroup'] = (rq, ctx) => this.invoke('syncGroup', rq, ctx);
  heartbeat: GroupCoordinatorService['heartbeat'] = (rq, ctx) => this.invoke('heartbeat', rq, ctx);
  leaveGroup: GroupCoordinatorService['leaveGroup'] = (rq, ctx) => this.invoke('leaveGroup', rq, ctx);
  offsetCommit: GroupCoordinatorService['offsetCommit'] = (rq, ctx) => this.invoke('offsetCommit', rq, ctx);
  offsetFetch: GroupCoordinatorService['offsetFetch'] = (rq, ctx) => this.invoke('offsetFetch', rq, ctx);
  describeGroups: GroupCoordinatorService['describeGroups'] = (rq, ctx) =>
    this.invoke('describeGroups', rq, ctx);
  listGroups: GroupCoordinatorService['listGroups'] = (rq, ctx) => this.invoke('listGroups', rq, ctx);
  deleteGroups: GroupCoordinatorService['deleteGroups'] = (rq, ctx) => this.invoke('deleteGroups', rq, ctx);

  /** Every unwatchMember call: a heartbeat stream that closed. */
  readonly unwatched: [groupId: string, memberId: string, watcher: GenerationWatcher][] = [];

  unwatchMember(groupId: string, memberId: string, watcher: GenerationWatcher): void {
    this.unwatched.push([groupId, memberId, watcher]);
  }

  shutdown(): void {
    this.shutdownCount++;
    for (const listener of this.shutdownListeners.splice(0)) listener();
  }
}
