/**
 * The SDK's view of a cohort cluster: a connection per node, each group's calls sent to its coordinator,
 * each partition's calls to its leader.
 *
 * Nodes. The client starts from its bootstrap list and learns the others from Metadata (brokers) and
 * FindCoordinator; connections are opened on first use (`NodeConnections`) and closed with the client.
 * Calls for no node in particular (Metadata, CreateTopics, FindCoordinator) go to the node that answered
 * last, and on to the next known one when it cannot be reached, or, for Metadata, when it lists no brokers
 * (a node not yet a member of its cluster knows no topic).
 *
 * Groups (Kafka's AbstractCoordinator): a group's coordinator is found with FindCoordinator and cached
 * (`CoordinatorCache`). NOT_COORDINATOR (16) or COORDINATOR_NOT_AVAILABLE (15) in an answer, or a connection
 * to it that fails, forgets it (`markCoordinatorUnknown`); the caller's retry, after its jittered exponential
 * backoff, finds it again, and that backoff ends early once the group's one shared poll (every 100 ms
 * while members wait: `onCoordinatorFound`) has found a coordinator other than the one forgotten. COORDINATOR_LOAD_IN_PROGRESS (14) keeps it: the retry goes to the same node
 * (KafkaJS re-discovers on 14, which sends members away from the one node that is about to serve them).
 * Answers are returned unchanged, so the group member decides, as before, whether a code costs it its
 * generation: a coordinator move alone never does.
 *
 * A server without FindCoordinator (gRPC UNIMPLEMENTED: cohort before coordinators were spread over a
 * cluster) is taken as the coordinator of the group asked about: that is what those servers did, each
 * coordinating every group it was sent.
 *
 * Partitions: see leader-routing.ts.
 */
import { getMaxListeners, setMaxListeners } from 'node:events';
import { ErrorCode, CohortError } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import {
  COORDINATOR_KEY_TYPE_GROUP,
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
} from '../protocol/find-coordinator-messages';
import type * as m from '../protocol/group-messages';
import type * as b from './broker-messages';
import type { BrokerTransport } from './broker-transport';
import { CoordinatorCache, isCoordinatorMoved, type CoordinatorNode } from './coordinator-cache';
import { CoordinatorWatch } from './coordinator-watch';
import { errorFromCode } from './error-from-code';
import { ExponentialBackoff } from './exponential-backoff';
import type { GroupAdminTransport, NodeListing } from './group-admin-transport';
import type { CallOptions, GroupTransport, HeartbeatStream } from './group-transport';
import type { GroupWatchCall, GroupWatchTransport } from './group-watch';
import {
  fetchFromLeaders,
  listOffsetsAtLeaders,
  produceToLeaders,
  type LeaderRoutingContext,
} from './leader-routing';
import { NodeConnections } from './node-connections';
import { nodeAddress } from './node-address';
import { PartitionLeaders } from './partition-leaders';
import { asCohortError } from './retrying-caller';
import { TimeScheduler } from './time-scheduler';

/** One node's connection: every call of the SDK, on one channel (`GrpcTransport`). */
export interface NodeTransport extends GroupTransport, GroupAdminTransport, BrokerTransport {
  /** FindCoordinator; null when the server does not serve it (gRPC UNIMPLEMENTED). */
  findCoordinator(
    request: FindCoordinatorRequest,
    options: CallOptions,
  ): Promise<FindCoordinatorResponse | null>;
  watchGroups: GroupWatchTransport['watchGroups'];
  waitForServer?(timeoutMs: number): Promise<void>;
  close(): void;
}

/** What a `ClusterTransport` is built from. */
export interface ClusterTransportOptions {
  /** Where to start: one or more nodes' `host:port` (or one `unix:/path`). */
  readonly bootstrap: readonly string[];
  /** Opens the connection to one node. */
  readonly connect: (address: string) => NodeTransport;
  /** The clock of the Metadata refresh backoff and of a watch's re-opens. Default: the system clock. */
  readonly time?: Time;
  /** Jitter source for those backoffs, numbers in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
  /** How often a group is looked up while its members wait for its coordinator; default 100 ms. */
  readonly coordinatorPollMs?: number;
}

/** How long a heartbeat stream may look for its coordinator before the member's own bound cuts it off. */
const STREAM_LOOKUP_TIMEOUT_MS = 30_000;
/** A watched group that moved is watched again after this, doubling per failed try up to the max (Kafka's retry.backoff.ms). */
const WATCH_RETRY_BACKOFF_MS = 100;
const WATCH_RETRY_BACKOFF_MAX_MS = 1_000;

/** A connection that failed or a server that went away: the node may be down, try another. */
function isUnreachable(error: unknown): boolean {
  return error instanceof CohortError && error.code === ErrorCode.COORDINATOR_NOT_AVAILABLE;
}

/**
 * Lets `groups` per-group calls listen on one caller's signal at once. Each group's lookup waits on it
 * (CoordinatorCache) while its FindCoordinator, a gRPC call, listens on it too: two listeners a group, on
 * the caller's one signal. Past Node's default of 10, every describe of more than five groups printed a
 * "possible memory leak" warning. The listeners go as the calls end.
 */
function allowFanOut(signal: AbortSignal | undefined, groups: number): void {
  if (signal === undefined) return;
  const needed = 2 * groups + 10;
  const limit = getMaxListeners(signal);
  if (limit !== 0 && limit < needed) setMaxListeners(needed, signal);
}

/**
 * A coordinator that failed to answer at all: unreachable, or no answer before the deadline. Either way it
 * is forgotten and the next call looks the group up again, as Kafka's consumer marks its coordinator
 * unknown when a request to it times out. A coordinator stopped (SIGSTOP, a long pause) keeps its
 * connections open and refuses nothing: only the deadline says it is gone, and a cache that kept it would
 * send every later call of the group to it while another node serves the group.
 */
function isNoAnswer(error: unknown): boolean {
  return isUnreachable(error) || isTimedOut(error);
}

/** A call grpc-js ended at its deadline. */
function isTimedOut(error: unknown): boolean {
  return error instanceof CohortError && error.code === ErrorCode.REQUEST_TIMED_OUT;
}

/**
 * Every transport of the SDK over a cluster of nodes: `GroupTransport`, `GroupAdminTransport`,
 * `GroupWatchTransport` and `BrokerTransport`, routed as the file's header says.
 */
export class ClusterTransport
  implements GroupTransport, GroupAdminTransport, GroupWatchTransport, BrokerTransport
{
  /** The bootstrap list, deduplicated. */
  readonly bootstrap: readonly string[];
  /** The client's Metadata view (nodes, partition leaders and epochs). */
  readonly leaders: PartitionLeaders;
  private readonly connections: NodeConnections<NodeTransport>;
  private readonly coordinators: CoordinatorCache;
  private readonly routing: LeaderRoutingContext;
  /** The node that answered the last call sent to any node; tried first next time. */
  private preferred: string;
  /** The timers of the coordinator cache's polls and of watches' re-opens. */
  private readonly scheduler: TimeScheduler;
  private readonly watchBackoff: ExponentialBackoff;
  /** Named watches not yet ended, so that close() ends them. */
  private readonly watches = new Set<CoordinatorWatch>();

  constructor(options: ClusterTransportOptions) {
    if (options.bootstrap.length === 0) throw new RangeError('bootstrap must list at least one node');
    this.bootstrap = [...new Set(options.bootstrap)];
    this.preferred = this.bootstrap[0];
    this.connections = new NodeConnections(options.connect);
    this.leaders = new PartitionLeaders(options.time ?? SYSTEM_TIME, options.random);
    this.scheduler = new TimeScheduler(options.time ?? SYSTEM_TIME);
    this.watchBackoff = new ExponentialBackoff({
      initialMs: WATCH_RETRY_BACKOFF_MS,
      maxMs: WATCH_RETRY_BACKOFF_MAX_MS,
      ...(options.random !== undefined ? { random: options.random } : {}),
    });
    this.coordinators = new CoordinatorCache(
      (groupId, o) => this.lookUpCoordinator(groupId, o),
      this.scheduler,
      options.coordinatorPollMs,
    );
    this.routing = {
      leaders: this.leaders,
      node: (address) => this.connections.get(address),
      defaultAddress: () => this.preferred,
      refresh: async (topics, o) => {
        try {
          await this.metadata({ topics: [...topics] }, o);
        } catch {
          // Routed with what is known; the calls' own answers say what is wrong.
        }
      },
    };
  }

  /** The coordinator cached for `groupId`, if any (`cohort groups describe` shows it). */
  cachedCoordinator(groupId: string): CoordinatorNode | undefined {
    return this.coordinators.peek(groupId);
  }

  /** The coordinator of `groupId`: cached, or found now with FindCoordinator. */
  coordinatorFor(groupId: string, options: CallOptions): Promise<CoordinatorNode> {
    return this.coordinators.coordinatorFor(groupId, options);
  }

  /** The connection to the node at `address` (opened now if need be). */
  node(address: string): NodeTransport {
    return this.connections.get(address);
  }

  /**
   * Resolves once any bootstrap node answers; rejects with the first node's failure when none does within
   * `timeoutMs`.
   */
  async waitForServer(timeoutMs: number): Promise<void> {
    const waits = this.bootstrap.map(
      (address) => this.connections.get(address).waitForServer?.(timeoutMs) ?? Promise.resolve(),
    );
    try {
      await Promise.any(waits);
    } catch (error) {
      throw (error as AggregateError).errors[0];
    }
  }

  /** Closes every node's connection; a watch waiting to re-open (its timer cancelled here) ends too. */
  close(): void {
    for (const watch of [...this.watches]) watch.cancel();
    this.coordinators.close();
    this.scheduler.shutdown();
    this.connections.close();
  }

  /** See `GroupTransport.onCoordinatorFound` and `CoordinatorCache.onCoordinatorFound`. */
  onCoordinatorFound(groupId: string, onFound: () => void): () => void {
    return this.coordinators.onCoordinatorFound(groupId, onFound);
  }

  // ---- calls to any node ----

  private anyAddresses(): string[] {
    return [...new Set([this.preferred, ...this.bootstrap, ...this.leaders.knownAddresses()])];
  }

  /**
   * Sends to the preferred node, and on to the next known one while nodes cannot be reached or answer
   * without knowing the cluster (`knowsCluster` false); when none knows it, rejects with the last failure.
   */
  private async callAny<R>(
    what: string,
    options: CallOptions,
    send: (node: NodeTransport) => Promise<R>,
    knowsCluster: (response: R) => boolean = () => true,
  ): Promise<{ response: R; address: string }> {
    let last: unknown = errorFromCode(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${what}: no node to ask`);
    const addresses = this.anyAddresses();
    for (const [i, address] of addresses.entries()) {
      if (options.signal?.aborted) break;
      try {
        const response = await send(this.connections.get(address));
        if (!knowsCluster(response)) {
          last = errorFromCode(
            ErrorCode.LEADER_NOT_AVAILABLE,
            `${what}: ${address} is not yet a member of the cluster`,
          );
          continue;
        }
        this.preferred = address;
        return { response, address };
      } catch (error) {
        last = error;
        // A node that does not answer in time is not asked first next time (the caller's retry goes to
        // another), as Kafka's least-loaded node skips a node that failed. "In time" is either deadline:
        // grpc-js's (REQUEST_TIMED_OUT) or the caller's own, whose abort ends the call as cancelled. A
        // stopped node answers neither way, and a lookup that kept asking it first would never get past it.
        if (options.signal?.aborted === true || isTimedOut(error)) {
          this.preferred = addresses[(i + 1) % addresses.length];
        }
        if (!isUnreachable(error)) throw error;
      }
    }
    throw last;
  }

  private async lookUpCoordinator(groupId: string, options: CallOptions): Promise<CoordinatorNode> {
    const what = `FindCoordinator of group "${groupId}"`;
    const request = { keyType: COORDINATOR_KEY_TYPE_GROUP, keys: [groupId] };
    const { response, address } = await this.callAny(what, options, (node) =>
      node.findCoordinator(request, options),
    );
    if (response === null) return { nodeId: -1, address }; // an older cohort: the node asked coordinates
    const found = response.coordinators.find((c) => c.key === groupId);
    if (found === undefined) {
      throw errorFromCode(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${what}: no answer for the group`);
    }
    if (found.errorCode !== ErrorCode.NONE) throw errorFromCode(found.errorCode, what);
    let target = this.leaders.addressOf(found.nodeId);
    if (target === undefined) {
      // A node Metadata has not shown us yet: ask the same node for the brokers first, so that a one-node
      // cohort is reached where we reached it rather than at whatever address it advertises.
      try {
        this.leaders.update(await this.connections.get(address).metadata({ topics: [] }, options), address);
      } catch {
        // Its advertised address will have to do.
      }
      target = this.leaders.addressOf(found.nodeId) ?? nodeAddress(found.host, found.port, address);
    }
    return { nodeId: found.nodeId, address: target };
  }

  // ---- group calls, to each group's coordinator ----

  private async toCoordinator<R>(
    groupId: string,
    options: CallOptions,
    send: (node: NodeTransport) => Promise<R>,
    codesOf: (response: R) => Iterable<ErrorCode>,
  ): Promise<R> {
    const coordinator = await this.coordinators.coordinatorFor(groupId, options);
    let response: R;
    try {
      response = await send(this.connections.get(coordinator.address));
    } catch (error) {
      if (isNoAnswer(error)) this.coordinators.markUnknown(groupId, coordinator);
      throw error;
    }
    for (const code of codesOf(response)) {
      if (isCoordinatorMoved(code)) {
        this.coordinators.markUnknown(groupId, coordinator);
        break;
      }
    }
    return response;
  }

  joinGroup(request: m.JoinGroupRequest, options: CallOptions): Promise<m.JoinGroupResponse> {
    return this.toCoordinator(request.groupId, options, (n) => n.joinGroup(request, options), topLevel);
  }

  syncGroup(request: m.SyncGroupRequest, options: CallOptions): Promise<m.SyncGroupResponse> {
    return this.toCoordinator(request.groupId, options, (n) => n.syncGroup(request, options), topLevel);
  }

  heartbeat(request: m.HeartbeatRequest, options: CallOptions): Promise<m.HeartbeatResponse> {
    return this.toCoordinator(request.groupId, options, (n) => n.heartbeat(request, options), topLevel);
  }

  leaveGroup(request: m.LeaveGroupRequest, options: CallOptions): Promise<m.LeaveGroupResponse> {
    return this.toCoordinator(request.groupId, options, (n) => n.leaveGroup(request, options), topLevel);
  }

  offsetCommit(request: m.OffsetCommitRequest, options: CallOptions): Promise<m.OffsetCommitResponse> {
    return this.toCoordinator(
      request.groupId,
      options,
      (n) => n.offsetCommit(request, options),
      (r) => r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)),
    );
  }

  offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    return this.toCoordinator(
      request.groupId,
      options,
      (n) => n.offsetFetch(request, options),
      (r) => [r.errorCode, ...r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))],
    );
  }

  /** A stream that follows the group's coordinator: see `CoordinatorHeartbeatStream`. */
  openHeartbeatStream(onPush: (code: ErrorCode) => void): HeartbeatStream {
    return new CoordinatorHeartbeatStream(this.coordinators, this.connections, onPush);
  }

  /** Each group asked of its own coordinator; answers in the order asked. */
  async describeGroups(
    request: m.DescribeGroupsRequest,
    options: CallOptions,
  ): Promise<m.DescribeGroupsResponse> {
    if (request.groups.length === 0) {
      return (await this.callAny('DescribeGroups', options, (n) => n.describeGroups(request, options)))
        .response;
    }
    const answers = await this.perCoordinator(
      request.groups,
      options,
      (node, groups) => node.describeGroups({ groups }, options).then((r) => r.groups),
      (g) => g.errorCode,
      (groupId, error): m.DescribedGroup => ({
        errorCode: error.code,
        errorMessage: '',
        groupId,
        groupState: '',
        protocolType: '',
        protocolData: '',
        members: [],
        generationId: -1,
      }),
    );
    return { groups: answers };
  }

  /** Each group deleted by its own coordinator; results in the order asked. */
  async deleteGroups(request: m.DeleteGroupsRequest, options: CallOptions): Promise<m.DeleteGroupsResponse> {
    const results = await this.perCoordinator(
      request.groupsNames,
      options,
      (node, groupsNames) => node.deleteGroups({ groupsNames }, options).then((r) => r.results),
      (r) => r.errorCode,
      (groupId, error) => ({ groupId, errorCode: error.code }),
    );
    return { results };
  }

  /**
   * Every group of the cluster: ListGroups on every node (each lists the groups it coordinates), merged.
   * A node that fails makes the listing fail (its `errorCode`), rather than be silently incomplete.
   */
  async listGroups(request: m.ListGroupsRequest, options: CallOptions): Promise<m.ListGroupsResponse> {
    const results = await this.onEveryNode(options, (node) => node.listGroups(request, options));
    const groups = new Map<string, m.ListedGroup>();
    let errorCode = ErrorCode.NONE;
    for (const result of results) {
      if ('error' in result) {
        if (errorCode === ErrorCode.NONE) errorCode = result.error.code;
        continue;
      }
      if (result.response.errorCode !== ErrorCode.NONE && errorCode === ErrorCode.NONE)
        errorCode = result.response.errorCode;
      for (const g of result.response.groups) if (!groups.has(g.groupId)) groups.set(g.groupId, g);
    }
    if (errorCode !== ErrorCode.NONE && results.every((r) => 'error' in r))
      throw (results[0] as { error: unknown }).error;
    return { errorCode, groups: [...groups.values()] };
  }

  /**
   * ListGroups on every node Metadata lists, each call bounded by `nodeTimeoutMs`: a node that was killed
   * stays listed until its session expires (10 s by default), and without its own bound a call to it, or
   * to a stopped one, would hold up the whole listing for the caller's timeout.
   */
  async listGroupsOnEachNode(
    request: m.ListGroupsRequest,
    options: CallOptions,
    nodeTimeoutMs: number,
  ): Promise<NodeListing[]> {
    const perNode = { ...options, timeoutMs: Math.max(1, Math.min(options.timeoutMs, nodeTimeoutMs)) };
    const results = await this.onEveryNode(options, (node) => node.listGroups(request, perNode));
    return results.map((r) => ({ ...r, nodeId: this.leaders.nodeIdAt(r.address) ?? null }));
  }

  /**
   * A call on every node separately (`cohort cluster describe` counts each node's groups), with the
   * address each answer came from.
   */
  async onEveryNode<R>(
    options: CallOptions,
    send: (node: NodeTransport, address: string) => Promise<R>,
  ): Promise<({ address: string; response: R } | { address: string; error: CohortError })[]> {
    await this.routing.refresh([], options);
    const addresses = this.leaders.knownAddresses();
    if (addresses.length === 0) addresses.push(this.preferred);
    return Promise.all(
      addresses.map(async (address) => {
        try {
          return { address, response: await send(this.connections.get(address), address) };
        } catch (error) {
          return {
            address,
            error:
              error instanceof CohortError
                ? error
                : errorFromCode(ErrorCode.UNKNOWN_SERVER_ERROR, address, error),
          };
        }
      }),
    );
  }

  /**
   * Watches groups. Named groups at their coordinators, following each group when it moves
   * (`CoordinatorWatch`: re-found and watched again, from a new snapshot, until cancelled). Every group (no
   * ids): a call on every node, the watch ending when any of them ends. Events of all of them on one watch.
   */
  watchGroups(
    request: m.WatchGroupsRequest,
    onEvent: (event: m.GroupEvent) => void,
    onEnd: (error: CohortError | null) => void,
  ): GroupWatchCall {
    if (request.groupIds.length > 0) {
      const watch: CoordinatorWatch = new CoordinatorWatch(
        {
          coordinators: this.coordinators,
          node: (address) => this.connections.get(address),
          scheduler: this.scheduler,
          backoff: this.watchBackoff,
          lookupTimeoutMs: STREAM_LOOKUP_TIMEOUT_MS,
        },
        request.groupIds,
        onEvent,
        (error) => {
          this.watches.delete(watch);
          onEnd(error);
        },
      );
      this.watches.add(watch);
      return watch;
    }
    const calls: GroupWatchCall[] = [];
    let isEnded = false;
    let isPaused = false;
    const lifetime = new AbortController();
    const end = (error: CohortError | null): void => {
      if (isEnded) return;
      isEnded = true;
      lifetime.abort();
      for (const call of calls) call.cancel();
      onEnd(error);
    };
    const options = { timeoutMs: STREAM_LOOKUP_TIMEOUT_MS, signal: lifetime.signal };
    void (async () => {
      await this.routing.refresh([], options);
      const addresses = this.leaders.knownAddresses();
      for (const address of addresses.length > 0 ? addresses : [this.preferred]) {
        if (isEnded) return;
        const call = this.connections.get(address).watchGroups({ groupIds: [] }, onEvent, end);
        calls.push(call);
        if (isPaused) call.pause();
      }
    })().catch((error: unknown) => end(asCohortError(error, 'WatchGroups')));
    return {
      cancel: () => {
        if (isEnded) return;
        isEnded = true;
        lifetime.abort();
        for (const call of calls) call.cancel();
        onEnd(null);
      },
      pause: () => {
        isPaused = true;
        for (const call of calls) call.pause();
      },
      resume: () => {
        isPaused = false;
        for (const call of calls) call.resume();
      },
    };
  }

  private async perCoordinator<A>(
    groupIds: readonly string[],
    options: CallOptions,
    send: (node: NodeTransport, groupIds: string[]) => Promise<A[]>,
    codeOf: (answer: A) => ErrorCode,
    failed: (groupId: string, error: CohortError) => A,
  ): Promise<A[]> {
    allowFanOut(options.signal, groupIds.length);
    const answers = new Map<string, A>();
    const byAddress = new Map<string, { node: CoordinatorNode; groupIds: string[] }>();
    await Promise.all(
      groupIds.map(async (groupId) => {
        try {
          const node = await this.coordinators.coordinatorFor(groupId, options);
          let entry = byAddress.get(node.address);
          if (entry === undefined) byAddress.set(node.address, (entry = { node, groupIds: [] }));
          entry.groupIds.push(groupId);
        } catch (error) {
          if (!(error instanceof CohortError)) throw error;
          answers.set(groupId, failed(groupId, error));
        }
      }),
    );
    await Promise.all(
      [...byAddress].map(async ([address, { node, groupIds: ids }]) => {
        try {
          const list = await send(this.connections.get(address), ids);
          list.forEach((answer, i) => {
            const groupId = ids[i];
            if (isCoordinatorMoved(codeOf(answer))) this.coordinators.markUnknown(groupId, node);
            answers.set(groupId, answer);
          });
        } catch (error) {
          if (!(error instanceof CohortError)) throw error;
          if (isNoAnswer(error)) for (const groupId of ids) this.coordinators.markUnknown(groupId, node);
          if (byAddress.size === 1 && answers.size === 0) throw error; // the call failed as a whole
          for (const groupId of ids) answers.set(groupId, failed(groupId, error));
        }
      }),
    );
    return groupIds.flatMap((groupId) => {
      const answer = answers.get(groupId);
      return answer === undefined ? [] : [answer];
    });
  }

  // ---- broker calls ----

  async createTopics(request: b.CreateTopicsRequest, options: CallOptions): Promise<b.CreateTopicsResponse> {
    return (await this.callAny('CreateTopics', options, (n) => n.createTopics(request, options))).response;
  }

  /**
   * Metadata from any node; its brokers and leaders update the client's view. A node that lists no brokers
   * is not yet a member of its cluster (etcd away at its start, say) and knows no topic: as Kafka's client
   * ignores a Metadata without brokers, the next node is asked, and when none knows the cluster the call
   * fails with LEADER_NOT_AVAILABLE, which is retriable: the caller asks again after its backoff, rather
   * than take the node's ignorance for a topic that does not exist.
   */
  async metadata(request: b.MetadataRequest, options: CallOptions): Promise<b.MetadataResponse> {
    const { response, address } = await this.callAny(
      'Metadata',
      options,
      (n) => n.metadata(request, options),
      (r) => r.brokers.length > 0,
    );
    this.leaders.update(response, address);
    return response;
  }

  produce(request: b.ProduceRequest, options: CallOptions): Promise<b.ProduceResponse> {
    return produceToLeaders(this.routing, request, options);
  }

  fetch(request: b.FetchRequest, options: CallOptions): Promise<b.FetchResponse> {
    return fetchFromLeaders(this.routing, request, options);
  }

  listOffsets(request: b.ListOffsetsRequest, options: CallOptions): Promise<b.ListOffsetsResponse> {
    return listOffsetsAtLeaders(this.routing, request, options);
  }
}

function topLevel(response: { errorCode: ErrorCode }): ErrorCode[] {
  return [response.errorCode];
}

/**
 * A member's heartbeat stream that follows its group's coordinator. Each send finds the coordinator (from
 * the cache) and goes on the stream to that node, opened on first use; when the coordinator changed since,
 * the old stream is closed and one to the new coordinator is opened, so a move costs no heartbeat. An
 * answer or push of NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE forgets the coordinator and the stream to
 * it. A stream that breaks rejects its sends (the member sends that heartbeat unary, as with one node).
 */
class CoordinatorHeartbeatStream implements HeartbeatStream {
  private current: { node: CoordinatorNode; groupId: string; stream: HeartbeatStream } | null = null;
  private readonly lifetime = new AbortController();
  private isUnsupported = false;

  constructor(
    private readonly coordinators: CoordinatorCache,
    private readonly connections: NodeConnections<NodeTransport>,
    private readonly onPush: (code: ErrorCode) => void,
  ) {}

  get unsupported(): boolean {
    return this.isUnsupported;
  }

  async send(request: m.HeartbeatRequest): Promise<ErrorCode> {
    if (this.lifetime.signal.aborted) {
      throw errorFromCode(ErrorCode.REQUEST_TIMED_OUT, 'HeartbeatStream was cancelled');
    }
    const node = await this.coordinators.coordinatorFor(request.groupId, {
      timeoutMs: STREAM_LOOKUP_TIMEOUT_MS,
      signal: this.lifetime.signal,
    });
    const current = this.streamTo(node, request.groupId);
    try {
      const code = await current.stream.send(request);
      if (isCoordinatorMoved(code)) this.forget(current, true);
      return code;
    } catch (error) {
      if (current.stream.unsupported) this.isUnsupported = true;
      // Gone away (COORDINATOR_NOT_AVAILABLE) or ended by a node that no longer coordinates the group.
      this.forget(current, error instanceof CohortError && isCoordinatorMoved(error.code));
      throw error;
    }
  }

  close(): void {
    this.lifetime.abort();
    this.current?.stream.close();
    this.current = null;
  }

  private streamTo(
    node: CoordinatorNode,
    groupId: string,
  ): NonNullable<CoordinatorHeartbeatStream['current']> {
    const current = this.current;
    if (current !== null && current.node.address === node.address && current.node.nodeId === node.nodeId) {
      return current;
    }
    current?.stream.close();
    const connection = this.connections.get(node.address);
    if (connection.openHeartbeatStream === undefined) {
      this.isUnsupported = true;
      throw errorFromCode(ErrorCode.INVALID_REQUEST, 'the node has no HeartbeatStream');
    }
    const entry = { node, groupId, stream: undefined as unknown as HeartbeatStream };
    entry.stream = connection.openHeartbeatStream((code) => {
      if (this.current !== entry) return; // a push from a coordinator we left
      if (isCoordinatorMoved(code)) this.forget(entry, true);
      this.onPush(code);
    });
    this.current = entry;
    return entry;
  }

  /** Drops the stream of `entry` (the next send opens another), and with `isMoved` its coordinator too. */
  private forget(entry: NonNullable<CoordinatorHeartbeatStream['current']>, isMoved: boolean): void {
    if (isMoved) this.coordinators.markUnknown(entry.groupId, entry.node);
    if (this.current !== entry) return;
    this.current = null;
    entry.stream.close();
  }
}
