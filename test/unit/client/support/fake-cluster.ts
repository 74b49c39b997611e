import type * as b from '../../../../src/client/broker-messages';
import type { NodeTransport } from '../../../../src/client/cluster-transport';
import type { CallOptions, HeartbeatStream } from '../../../../src/client/group-transport';
import type { GroupWatchCall } from '../../../../src/client/group-watch';
import { topicPartitionKey } from '../../../../src/client/topic-partition';
import { CohortError, ErrorCode } from '../../../../src/errors';
import type {
  Coordinator,
  FindCoordinatorRequest,
  FindCoordinatorResponse,
} from '../../../../src/protocol/find-coordinator-messages';
import type * as m from '../../../../src/protocol/group-messages';
import type { Time } from '../../../../src/time';
import { InMemoryBroker } from './in-memory-broker';
import { ScriptedTransport } from './scripted-transport';

/** What a FindCoordinator answers next: a coordinator (partial), a rejection, or "not served" (null). */
export type FindCoordinatorReply = Partial<Coordinator> | CohortError | null;

const unreachable = (address: string): CohortError =>
  new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${address}: connect ECONNREFUSED`);

/**
 * One node of a `FakeCluster`: group calls scripted as `ScriptedTransport`'s (a one-member coordinator by
 * default), FindCoordinator and Metadata from the cluster's view, and the log's calls served by its own
 * in-memory log for the partitions it leads (NOT_LEADER_OR_FOLLOWER for the others, FENCED_LEADER_EPOCH /
 * UNKNOWN_LEADER_EPOCH for a wrong `currentLeaderEpoch`, as a real leader answers). `isDown` makes every
 * call fail as an unreachable node's do.
 */
export class FakeNode extends ScriptedTransport implements NodeTransport {
  readonly log: InMemoryBroker;
  isDown = false;
  /**
   * With `isDown`: still listed by the others' Metadata, as a killed node is until its session expires
   * (by default a node that is down is not listed).
   */
  isListedWhenDown = false;
  /** Every call's ListGroups options, as received. */
  readonly listGroupsCalls: CallOptions[] = [];
  /**
   * False: a node not yet in the cluster (etcd away at its start). Its Metadata lists no brokers and
   * answers each named topic LEADER_NOT_AVAILABLE, as a cohort server then does.
   */
  isMember = true;
  /** Answers every partition of the next Produce, Fetch or ListOffsets with this code (then clears it). */
  nextPartitionCode: ErrorCode | null = null;
  readonly findCoordinatorCalls: FindCoordinatorRequest[] = [];
  readonly metadataCalls: b.MetadataRequest[] = [];
  readonly produceCalls: b.ProduceRequest[] = [];
  readonly fetchCalls: b.FetchRequest[] = [];
  readonly listOffsetsCalls: b.ListOffsetsRequest[] = [];
  /** Every WatchGroups call opened here: the test sends its events and ends it. */
  readonly watchCalls: {
    request: m.WatchGroupsRequest;
    onEvent: (event: m.GroupEvent) => void;
    onEnd: (error: CohortError | null) => void;
    isCancelled: boolean;
  }[] = [];
  readonly streams: { isClosed: boolean; sent: m.HeartbeatRequest[] }[] = [];
  private readonly findReplies: FindCoordinatorReply[] = [];
  closed = false;

  constructor(
    readonly nodeId: number,
    readonly address: string,
    private readonly cluster: FakeCluster,
    time: Time,
  ) {
    super();
    this.log = new InMemoryBroker(time);
  }

  /** Queues answers for the next FindCoordinator calls. */
  scriptFindCoordinator(...replies: FindCoordinatorReply[]): this {
    this.findReplies.push(...replies);
    return this;
  }

  override joinGroup(request: m.JoinGroupRequest, options: CallOptions): Promise<m.JoinGroupResponse> {
    return this.up(() => super.joinGroup(request, options));
  }
  override syncGroup(request: m.SyncGroupRequest, options: CallOptions): Promise<m.SyncGroupResponse> {
    return this.up(() => super.syncGroup(request, options));
  }
  override heartbeat(request: m.HeartbeatRequest, options: CallOptions): Promise<m.HeartbeatResponse> {
    return this.up(() => super.heartbeat(request, options));
  }
  override leaveGroup(request: m.LeaveGroupRequest, options: CallOptions): Promise<m.LeaveGroupResponse> {
    return this.up(() => super.leaveGroup(request, options));
  }
  override offsetCommit(
    request: m.OffsetCommitRequest,
    options: CallOptions,
  ): Promise<m.OffsetCommitResponse> {
    return this.up(() => super.offsetCommit(request, options));
  }
  override offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    return this.up(() => super.offsetFetch(request, options));
  }

  openHeartbeatStream(): HeartbeatStream {
    const record = { isClosed: false, sent: [] as m.HeartbeatRequest[] };
    this.streams.push(record);
    return {
      unsupported: false,
      send: (request) => {
        record.sent.push(request);
        if (record.isClosed) return Promise.reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'closed'));
        return this.heartbeat(request, { timeoutMs: 1_000 }).then((r) => r.errorCode);
      },
      close: () => {
        record.isClosed = true;
      },
    };
  }

  describeGroups(request: m.DescribeGroupsRequest): Promise<m.DescribeGroupsResponse> {
    return this.up(async () => ({
      groups: request.groups.map((groupId) => ({
        errorCode:
          this.cluster.coordinatorOf(groupId) === this.nodeId ? ErrorCode.NONE : ErrorCode.NOT_COORDINATOR,
        errorMessage: '',
        groupId,
        groupState: 'Stable',
        protocolType: 'consumer',
        protocolData: 'range',
        members: [],
        generationId: this.nodeId,
      })),
    }));
  }

  listGroups(_request: m.ListGroupsRequest, options: CallOptions): Promise<m.ListGroupsResponse> {
    this.listGroupsCalls.push(options);
    return this.up(async () => ({
      errorCode: ErrorCode.NONE,
      groups: [...this.cluster.coordinators]
        .filter(([, nodeId]) => nodeId === this.nodeId)
        .map(([groupId]) => ({ groupId, protocolType: 'consumer', groupState: 'Stable' })),
    }));
  }

  deleteGroups(request: m.DeleteGroupsRequest): Promise<m.DeleteGroupsResponse> {
    return this.up(async () => ({
      results: request.groupsNames.map((groupId) => ({ groupId, errorCode: ErrorCode.NONE })),
    }));
  }

  watchGroups(
    request: m.WatchGroupsRequest,
    onEvent: (event: m.GroupEvent) => void,
    onEnd: (error: CohortError | null) => void,
  ): GroupWatchCall {
    const call = { request, onEvent, onEnd, isCancelled: false };
    this.watchCalls.push(call);
    return { cancel: () => void (call.isCancelled = true), pause: () => {}, resume: () => {} };
  }

  findCoordinator(request: FindCoordinatorRequest): Promise<FindCoordinatorResponse | null> {
    return this.up(async () => {
      this.findCoordinatorCalls.push(request);
      if (this.findReplies.length > 0) {
        const reply = this.findReplies.shift() as FindCoordinatorReply;
        if (reply === null) return null;
        if (reply instanceof CohortError) throw reply;
        return { coordinators: [{ ...this.cluster.coordinatorEntry(request.keys[0]), ...reply }] };
      }
      return { coordinators: request.keys.map((key) => this.cluster.coordinatorEntry(key)) };
    });
  }

  createTopics(request: b.CreateTopicsRequest, options: CallOptions): Promise<b.CreateTopicsResponse> {
    return this.up(() => this.log.createTopics(request, options));
  }

  metadata(request: b.MetadataRequest): Promise<b.MetadataResponse> {
    return this.up(async () => {
      this.metadataCalls.push(request);
      if (!this.isMember) {
        return {
          controllerId: -1,
          brokers: [],
          topics: request.topics.map((name) => ({
            name,
            errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
            partitions: [],
            errorMessage: 'this node is not yet a member of the cluster',
          })),
        };
      }
      return this.cluster.metadataView(request.topics);
    });
  }

  produce(request: b.ProduceRequest, options: CallOptions): Promise<b.ProduceResponse> {
    return this.up(async () => {
      this.produceCalls.push(request);
      const { mine, others } = this.split(request.topics, () => true);
      const response =
        mine.length > 0 ? await this.log.produce({ ...request, topics: mine }, options) : { topics: [] };
      for (const { name, partitionIndex, errorCode } of others)
        response.topics.push({
          name,
          partitions: [
            { partitionIndex, errorCode, baseOffset: -1n, logAppendTimeMs: -1, logStartOffset: -1n },
          ],
        });
      return response;
    });
  }

  fetch(request: b.FetchRequest, options: CallOptions): Promise<b.FetchResponse> {
    return this.up(async () => {
      this.fetchCalls.push(request);
      const { mine, others } = this.split(request.topics, (topic, p: b.FetchPartition) =>
        this.epochCheck(topic, p.partitionIndex, p.currentLeaderEpoch),
      );
      const response =
        mine.length > 0
          ? await this.log.fetch({ ...request, topics: mine }, options)
          : { errorCode: ErrorCode.NONE, responses: [] };
      for (const { name, partitionIndex, errorCode } of others)
        response.responses.push({
          name,
          partitions: [{ partitionIndex, errorCode, highWatermark: -1n, logStartOffset: -1n, records: [] }],
        });
      return response;
    });
  }

  listOffsets(request: b.ListOffsetsRequest, options: CallOptions): Promise<b.ListOffsetsResponse> {
    return this.up(async () => {
      this.listOffsetsCalls.push(request);
      const { mine, others } = this.split(request.topics, (topic, p: b.ListOffsetsPartition) =>
        this.epochCheck(topic, p.partitionIndex, p.currentLeaderEpoch),
      );
      const response =
        mine.length > 0 ? await this.log.listOffsets({ topics: mine }, options) : { topics: [] };
      for (const { name, partitionIndex, errorCode } of others)
        response.topics.push({
          name,
          partitions: [{ partitionIndex, errorCode, offset: -1n, timestamp: -1 }],
        });
      return response;
    });
  }

  waitForServer(): Promise<void> {
    return this.isDown ? Promise.reject(unreachable(this.address)) : Promise.resolve();
  }

  close(): void {
    this.closed = true;
  }

  private epochCheck(topic: string, partition: number, epoch: number | undefined): ErrorCode {
    const leader = this.cluster.leaderOf(topic, partition);
    if (epoch === undefined || leader === undefined) return ErrorCode.NONE;
    if (epoch < leader.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH;
    if (epoch > leader.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH;
    return ErrorCode.NONE;
  }

  /** The partitions this node leads (and whose check passes), and the others with their error codes. */
  private split<P extends { partitionIndex: number }>(
    topics: readonly { name: string; partitions: P[] }[],
    check: (topic: string, p: P) => ErrorCode | true,
  ) {
    const forced = this.nextPartitionCode;
    this.nextPartitionCode = null;
    const mine: { name: string; partitions: P[] }[] = [];
    const others: { name: string; partitionIndex: number; errorCode: ErrorCode }[] = [];
    for (const t of topics) {
      const kept: P[] = [];
      for (const p of t.partitions) {
        const leader = this.cluster.leaderOf(t.name, p.partitionIndex);
        const verdict = check(t.name, p);
        if (forced !== null) {
          others.push({ name: t.name, partitionIndex: p.partitionIndex, errorCode: forced });
        } else if (leader !== undefined && leader.leaderId !== this.nodeId) {
          others.push({
            name: t.name,
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER,
          });
        } else if (verdict !== true && verdict !== ErrorCode.NONE) {
          others.push({ name: t.name, partitionIndex: p.partitionIndex, errorCode: verdict });
        } else kept.push(p);
      }
      if (kept.length > 0) mine.push({ name: t.name, partitions: kept });
    }
    return { mine, others };
  }

  private up<R>(call: () => Promise<R>): Promise<R> {
    if (this.isDown) return Promise.reject(unreachable(this.address));
    return call();
  }
}

/**
 * A cluster of `FakeNode`s at `node-<id>:7070`: which node coordinates each group, and which node leads each
 * partition at which epoch. `connect` is what a `ClusterTransport` dials with; every address it dialled is
 * recorded.
 */
export class FakeCluster {
  readonly nodes = new Map<number, FakeNode>();
  readonly coordinators = new Map<string, number>();
  readonly dialled: string[] = [];
  private readonly leaders = new Map<string, { leaderId: number; leaderEpoch: number }>();
  private readonly topics = new Map<string, number>();

  constructor(time: Time, nodeIds: readonly number[] = [1, 2, 3]) {
    for (const id of nodeIds) this.nodes.set(id, new FakeNode(id, `node-${id}:7070`, this, time));
  }

  node(id: number): FakeNode {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`no node ${id}`);
    return node;
  }

  readonly connect = (address: string): NodeTransport => {
    this.dialled.push(address);
    const node = [...this.nodes.values()].find((n) => n.address === address);
    if (node === undefined) throw new Error(`dialled an address no node has: ${address}`);
    return node;
  };

  /** Makes `nodeId` coordinate `groupId`. */
  coordinate(groupId: string, nodeId: number): this {
    this.coordinators.set(groupId, nodeId);
    return this;
  }

  coordinatorOf(groupId: string): number | undefined {
    return this.coordinators.get(groupId);
  }

  coordinatorEntry(groupId: string): Coordinator {
    const nodeId = this.coordinators.get(groupId);
    if (nodeId === undefined) {
      return {
        key: groupId,
        nodeId: -1,
        host: '',
        port: -1,
        errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
        errorMessage: '',
      };
    }
    return {
      key: groupId,
      nodeId,
      host: `node-${nodeId}`,
      port: 7070,
      errorCode: ErrorCode.NONE,
      errorMessage: '',
    };
  }

  /** A topic whose partition `p` is led by `leaderIds[p]` at epoch 0; every node's log gets the topic. */
  addTopic(name: string, leaderIds: readonly number[]): this {
    this.topics.set(name, leaderIds.length);
    leaderIds.forEach((leaderId, partition) =>
      this.leaders.set(topicPartitionKey({ topic: name, partition }), { leaderId, leaderEpoch: 0 }),
    );
    for (const node of this.nodes.values()) node.log.addTopic(name, leaderIds.length);
    return this;
  }

  /** A leader election: `partition` of `topic` is led by `leaderId` (-1: none) at the next epoch. */
  elect(topic: string, partition: number, leaderId: number): this {
    const key = topicPartitionKey({ topic, partition });
    const before = this.leaders.get(key);
    this.leaders.set(key, { leaderId, leaderEpoch: (before?.leaderEpoch ?? -1) + 1 });
    return this;
  }

  leaderOf(topic: string, partition: number): { leaderId: number; leaderEpoch: number } | undefined {
    return this.leaders.get(topicPartitionKey({ topic, partition }));
  }

  metadataView(topics: readonly string[]): b.MetadataResponse {
    const names = topics.length > 0 ? topics : [...this.topics.keys()];
    return {
      controllerId: -1,
      brokers: [...this.nodes.values()]
        .filter((n) => !n.isDown || n.isListedWhenDown)
        .map((n) => ({ nodeId: n.nodeId, host: `node-${n.nodeId}`, port: 7070 })),
      topics: names.map((name) => {
        const count = this.topics.get(name);
        if (count === undefined)
          return { name, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions: [], errorMessage: '' };
        return {
          name,
          errorCode: ErrorCode.NONE,
          partitions: Array.from({ length: count }, (_, partitionIndex) => {
            const leader = this.leaderOf(name, partitionIndex) as { leaderId: number; leaderEpoch: number };
            return {
              partitionIndex,
              leaderId: leader.leaderId,
              replicaNodes: [...this.nodes.keys()],
              isrNodes: [...this.nodes.keys()],
              errorCode: leader.leaderId < 0 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE,
              leaderEpoch: leader.leaderEpoch,
            };
          }),
          errorMessage: '',
        };
      }),
    };
  }
}
