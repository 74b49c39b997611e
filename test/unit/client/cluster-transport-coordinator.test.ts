import { getMaxListeners } from 'node:events';
import { ClusterTransport } from '../../../src/client/cluster-transport';
import { GroupMember } from '../../../src/client/group-member';
import { CohortError, ErrorCode } from '../../../src/errors';
import type { CallOptions } from '../../../src/client/group-transport';
import type { FindCoordinatorRequest } from '../../../src/protocol/find-coordinator-messages';
import { ManualTime } from '../../../src/time';
import { FakeCluster } from './support/fake-cluster';
import { BASE_OPTIONS } from './support/member-harness';
import type { HeartbeatResponse } from '../../../src/protocol/group-messages';
import { flush, Held } from './support/scripted-transport';

/** Member backoffs with random 0.5 are exact: retryBackoffMs (100) doubling, capped at 1,000. */
function setUp(options: { bootstrap?: string[]; heartbeatOverStream?: boolean } = {}) {
  const time = new ManualTime();
  const cluster = new FakeCluster(time).coordinate('g', 2);
  const transport = new ClusterTransport({
    bootstrap: options.bootstrap ?? ['node-1:7070'],
    connect: cluster.connect,
    time,
    random: () => 0.5,
  });
  const member = new GroupMember(
    { ...BASE_OPTIONS, heartbeatOverStream: options.heartbeatOverStream ?? false },
    { transport, time, random: () => 0.5 },
  );
  const lost: unknown[] = [];
  member.on('lost', (event) => lost.push(event));
  member.on('error', () => {});
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  return { time, cluster, transport, member, lost, advance };
}

describe('ClusterTransport: group calls go to the group coordinator', () => {
  it('finds the coordinator on the bootstrap node, then sends every group call to it', async () => {
    const { cluster, member, advance } = setUp();
    await flush();
    expect(member.state).toBe('stable');
    expect(cluster.node(1).findCoordinatorCalls).toEqual([{ keyType: 0, keys: ['g'] }]);
    expect(cluster.node(1).callsOf('joinGroup')).toHaveLength(0);
    expect(cluster.node(2).callsOf('joinGroup')).toHaveLength(1);
    expect(cluster.node(2).callsOf('syncGroup')).toHaveLength(1);
    await advance(3_000);
    await advance(3_000);
    expect(cluster.node(2).callsOf('heartbeat')).toHaveLength(2);
    // Cached: one lookup for all of it.
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(1);
    await member.close();
  });

  it('dials the coordinator at the address Metadata lists for its node id, one connection per node', async () => {
    const { cluster, member } = setUp();
    await flush();
    expect(cluster.node(1).metadataCalls).toHaveLength(1); // node 2 was not known yet
    expect(cluster.dialled).toEqual(['node-1:7070', 'node-2:7070']);
    await member.close();
  });

  it('keeps member id and generation when NOT_COORDINATOR moves the group, and rejoins only when told', async () => {
    const { cluster, member, lost, advance } = setUp();
    await flush();
    const { memberId, generationId } = member;
    cluster.coordinate('g', 3);
    cluster.node(2).script('heartbeat', { errorCode: ErrorCode.NOT_COORDINATOR });
    await advance(3_000); // heartbeat → NOT_COORDINATOR
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(1); // not before the backoff
    await advance(99);
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(1);
    await advance(1); // the member's backoff (100 ms): the retry looks the coordinator up again
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(2);
    const moved = cluster.node(3).callsOf('heartbeat');
    expect(moved).toHaveLength(1);
    expect(moved[0].request).toMatchObject({ memberId, generationId });
    expect(member.state).toBe('stable');
    expect(cluster.node(3).callsOf('joinGroup')).toHaveLength(0);
    expect(lost).toEqual([]);
    // The new coordinator decides: it does not know the generation, so the member rejoins, keeping its id.
    cluster.node(3).script('heartbeat', { errorCode: ErrorCode.ILLEGAL_GENERATION });
    await advance(3_000);
    expect(cluster.node(3).callsOf('joinGroup')).toHaveLength(1);
    expect(cluster.node(3).callsOf('joinGroup')[0].request.memberId).toBe(memberId);
    await member.close();
  });

  it('retries the same coordinator after COORDINATOR_LOAD_IN_PROGRESS, without looking it up again', async () => {
    const { cluster, member, advance } = setUp();
    await flush();
    cluster.node(2).script('heartbeat', { errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS });
    cluster.node(2).script('heartbeat', { errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS });
    await advance(3_000);
    await advance(100);
    await advance(200);
    expect(cluster.node(2).callsOf('heartbeat')).toHaveLength(3);
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(1);
    expect(member.state).toBe('stable');
    await member.close();
  });

  it('looks the group up every 100 ms, not after its own backoff, while FindCoordinator answers COORDINATOR_NOT_AVAILABLE', async () => {
    const { time, cluster, member, advance } = setUp();
    const node1 = cluster.node(1);
    const unavailable = { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, nodeId: -1 };
    node1.scriptFindCoordinator(unavailable, unavailable, unavailable);
    const at: number[] = [];
    const find = node1.findCoordinator.bind(node1);
    node1.findCoordinator = (request) => {
      at.push(time.monotonicMs());
      return find(request);
    };
    await flush();
    for (let i = 0; i < 20; i++) await advance(50);
    // The member's own retry (backoff 100, then 200, 400) and the group's poll (every 100 ms); the poll's
    // answer at 200 ends the member's wait, where its backoff alone would have joined at 700.
    expect(at.map((ms) => ms - at[0])).toEqual([0, 100, 100, 200]);
    expect(member.state).toBe('stable');
    expect(cluster.node(2).callsOf('joinGroup')).toHaveLength(1);
    await member.close();
  });

  it('forgets a coordinator it cannot reach and finds the new one, keeping the generation', async () => {
    const { cluster, member, lost, advance } = setUp();
    await flush();
    const generationId = member.generationId;
    cluster.node(2).isDown = true;
    cluster.coordinate('g', 3);
    await advance(3_000);
    await advance(100);
    expect(cluster.node(3).callsOf('heartbeat')).toHaveLength(1);
    expect(cluster.node(3).callsOf('heartbeat')[0].request.generationId).toBe(generationId);
    expect(lost).toEqual([]);
    await member.close();
  });

  it('reaches the new coordinator within a poll of its being found, not after its grown backoff', async () => {
    const { time, cluster, member, lost, advance } = setUp();
    await flush();
    const generationId = member.generationId;
    cluster.node(2).isDown = true; // killed; FindCoordinator names it until its session expires
    await advance(3_000); // the heartbeat fails: backoffs 100, 200, 400, 800, then 1,000 each
    for (let i = 0; i < 40; i++) await advance(100);
    expect(cluster.node(3).callsOf('heartbeat')).toHaveLength(0);
    const heartbeatsToDeadNode = cluster.node(2).callsOf('heartbeat').length;
    expect(heartbeatsToDeadNode).toBeLessThan(10); // its own retries stayed exponential
    const movedAt = time.monotonicMs();
    cluster.coordinate('g', 3);
    await advance(100); // the group's next poll finds node 3 and wakes the member
    const moved = cluster.node(3).callsOf('heartbeat');
    expect(moved).toHaveLength(1);
    expect(moved[0].request.generationId).toBe(generationId);
    expect(time.monotonicMs() - movedAt).toBeLessThanOrEqual(100);
    expect(lost).toEqual([]);
    await member.close();
  });

  it('goes on to the next bootstrap node when the first cannot be reached', async () => {
    const { cluster, member } = setUp({ bootstrap: ['node-1:7070', 'node-3:7070'] });
    cluster.node(1).isDown = true;
    await flush();
    expect(cluster.node(3).findCoordinatorCalls).toHaveLength(1);
    expect(member.state).toBe('stable');
    await member.close();
  });

  it('asks another bootstrap node next time after one did not answer in time', async () => {
    const { cluster, transport, member } = setUp({ bootstrap: ['node-1:7070', 'node-3:7070'] });
    await member.close(); // only the transport here
    cluster.coordinate('h', 2);
    const node1 = cluster.node(1);
    node1.findCoordinator = () => Promise.reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'no answer'));
    const options = { timeoutMs: 1_000 };
    await expect(transport.coordinatorFor('h', options)).rejects.toMatchObject({
      code: ErrorCode.REQUEST_TIMED_OUT,
    });
    expect((await transport.coordinatorFor('h', options)).nodeId).toBe(2);
    expect(cluster.node(3).findCoordinatorCalls).toHaveLength(1);
  });

  it('takes a node without FindCoordinator (an older cohort) as the coordinator of the group', async () => {
    const { cluster, member } = setUp();
    cluster.node(1).scriptFindCoordinator(null);
    await flush();
    expect(member.state).toBe('stable');
    expect(cluster.node(1).callsOf('joinGroup')).toHaveLength(1);
    expect(cluster.node(2).callsOf('joinGroup')).toHaveLength(0);
    await member.close();
  });

  it('a late NOT_COORDINATOR from the old coordinator does not undo a newer discovery', async () => {
    const { cluster, transport } = setUp();
    const options = { timeoutMs: 1_000 };
    const heartbeat = { groupId: 'h', generationId: 1, memberId: 'm', groupInstanceId: '' };
    cluster.coordinate('h', 2);
    const late = new Held<HeartbeatResponse>();
    cluster.node(2).script('heartbeat', late, { errorCode: ErrorCode.NOT_COORDINATOR });
    const slow = transport.heartbeat(heartbeat, options); // parked at node 2
    await flush();
    await transport.heartbeat(heartbeat, options); // NOT_COORDINATOR: forgotten
    expect(transport.cachedCoordinator('h')).toBeUndefined();
    cluster.coordinate('h', 3);
    expect((await transport.coordinatorFor('h', options)).nodeId).toBe(3);
    late.resolve({ errorCode: ErrorCode.NOT_COORDINATOR }); // node 2's answer, arriving now
    await slow;
    expect(transport.cachedCoordinator('h')?.nodeId).toBe(3);
  });
});

describe('ClusterTransport: the heartbeat stream follows the coordinator', () => {
  it('re-opens the stream to the new coordinator after NOT_COORDINATOR', async () => {
    const { cluster, member, lost, advance } = setUp({ heartbeatOverStream: true });
    await flush();
    await advance(3_000);
    expect(cluster.node(2).streams).toHaveLength(1);
    cluster.coordinate('g', 3);
    cluster.node(2).script('heartbeat', { errorCode: ErrorCode.NOT_COORDINATOR });
    await advance(3_000);
    expect(cluster.node(2).streams[0].isClosed).toBe(true);
    await advance(100);
    expect(cluster.node(3).streams).toHaveLength(1);
    expect(cluster.node(3).streams[0].sent).toHaveLength(1);
    expect(cluster.node(3).streams[0].sent[0].generationId).toBe(member.generationId);
    expect(lost).toEqual([]);
    await member.close();
  });
});

describe('ClusterTransport: a stream ended by a node that no longer coordinates', () => {
  it('forgets that coordinator, so the next heartbeat finds the new one', async () => {
    const { cluster, member, lost, advance } = setUp({ heartbeatOverStream: true });
    await flush();
    await advance(3_000);
    cluster.coordinate('g', 3);
    // The stream ends with status FAILED_PRECONDITION, trailer NOT_COORDINATOR (read as NOT_COORDINATOR).
    cluster.node(2).script('heartbeat', new CohortError(ErrorCode.NOT_COORDINATOR, 'stream ended'));
    await advance(3_000); // that heartbeat goes unary, to the coordinator found again (node 3)
    await advance(3_000);
    expect(cluster.node(3).streams).toHaveLength(1);
    expect(cluster.node(3).streams[0].sent[0].generationId).toBe(member.generationId);
    expect(lost).toEqual([]);
    await member.close();
  });
});

describe('ClusterTransport: admin calls', () => {
  it('describes each group at its own coordinator and lists the groups of every node', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time).coordinate('a', 1).coordinate('b', 2).coordinate('c', 3);
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const options = { timeoutMs: 1_000 };
    const described = await transport.describeGroups({ groups: ['c', 'a', 'b'] }, options);
    expect(described.groups.map((g) => [g.groupId, g.errorCode, g.generationId])).toEqual([
      ['c', ErrorCode.NONE, 3],
      ['a', ErrorCode.NONE, 1],
      ['b', ErrorCode.NONE, 2],
    ]);
    const listed = await transport.listGroups({ statesFilter: [] }, options);
    expect(listed.groups.map((g) => g.groupId).sort()).toEqual(['a', 'b', 'c']);
    cluster.node(3).isDown = true;
    const partial = await transport.listGroups({ statesFilter: [] }, options);
    expect(partial.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it("forgets a coordinator that does not answer in time: the next describe asks the group's new one", async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time).coordinate('g', 2);
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const options = { timeoutMs: 1_000 };
    expect((await transport.describeGroups({ groups: ['g'] }, options)).groups[0].generationId).toBe(2);
    // Node 2 is stopped (SIGSTOP): its connection stays open and the call gets no answer before its deadline.
    const stopped = cluster.node(2);
    stopped.describeGroups = () => Promise.reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'no answer'));
    cluster.coordinate('g', 3);
    await expect(transport.describeGroups({ groups: ['g'] }, options)).rejects.toMatchObject({
      code: ErrorCode.REQUEST_TIMED_OUT,
    });
    expect(transport.cachedCoordinator('g')).toBeUndefined();
    const again = await transport.describeGroups({ groups: ['g'] }, options);
    expect(again.groups.map((g) => [g.errorCode, g.generationId])).toEqual([[ErrorCode.NONE, 3]]);
    expect(transport.cachedCoordinator('g')?.nodeId).toBe(3);
  });

  it('asks another node first after a lookup the caller gave up on (a stopped node answers nothing)', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time).coordinate('g', 2);
    const transport = new ClusterTransport({
      bootstrap: ['node-1:7070', 'node-2:7070'],
      connect: cluster.connect,
      time,
    });
    // Node 1 is stopped: its FindCoordinator ends only when the caller aborts, as a cancelled call.
    const stopped = cluster.node(1);
    stopped.findCoordinator = (_request: FindCoordinatorRequest, options?: CallOptions) =>
      new Promise((_resolve, reject) =>
        options?.signal?.addEventListener('abort', () =>
          reject(new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'cancelled')),
        ),
      );
    const controller = new AbortController();
    const first = transport.describeGroups(
      { groups: ['g'] },
      { timeoutMs: 1_000, signal: controller.signal },
    );
    await flush();
    controller.abort();
    expect((await first).groups[0].errorCode).not.toBe(ErrorCode.NONE);
    const again = await transport.describeGroups({ groups: ['g'] }, { timeoutMs: 1_000 });
    expect(again.groups.map((g) => [g.errorCode, g.generationId])).toEqual([[ErrorCode.NONE, 2]]);
  });

  it('describes more than ten groups on one signal without a listener-leak warning', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time);
    const ids = Array.from({ length: 25 }, (_, i) => `g${i}`);
    for (const id of ids) cluster.coordinate(id, 1);
    // As a gRPC call does: every lookup and call listens on the caller's signal until it ends.
    const node = cluster.node(1);
    const find = node.findCoordinator.bind(node);
    let listening = 0;
    let mostListening = 0;
    node.findCoordinator = (request: FindCoordinatorRequest, options?: CallOptions) => {
      const onAbort = (): void => {};
      options?.signal?.addEventListener('abort', onAbort);
      mostListening = Math.max(mostListening, ++listening);
      return find(request).finally(() => {
        listening--;
        options?.signal?.removeEventListener('abort', onAbort);
      });
    };
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const signal = new AbortController().signal;
    const described = await transport.describeGroups({ groups: ids }, { timeoutMs: 1_000, signal });
    expect(described.groups.map((g) => g.errorCode)).toEqual(ids.map(() => ErrorCode.NONE));
    // Node warns of a possible leak once an EventTarget holds more listeners than its limit: here each
    // lookup's call, and the cache's wait for each lookup (a listener of its own).
    expect(mostListening).toBeGreaterThan(10);
    expect(getMaxListeners(signal)).toBeGreaterThanOrEqual(2 * mostListening);
  });

  it('opens a watch of named groups at their coordinators', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time).coordinate('a', 1).coordinate('b', 2);
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const ended: (CohortError | null)[] = [];
    transport.watchGroups(
      { groupIds: ['a', 'b'] },
      () => {},
      (e) => ended.push(e),
    );
    await flush();
    expect(cluster.node(1).watchCalls.map((c) => c.request.groupIds)).toEqual([['a']]);
    expect(cluster.node(2).watchCalls.map((c) => c.request.groupIds)).toEqual([['b']]);
    // Its coordinator went away: the watch ends, and the next lookup asks again.
    cluster.node(2).watchCalls[0].onEnd(new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'gone'));
    expect(ended.map((e) => e?.code)).toEqual([ErrorCode.COORDINATOR_NOT_AVAILABLE]);
    expect(cluster.node(1).watchCalls[0].isCancelled).toBe(true);
    expect(transport.cachedCoordinator('b')).toBeUndefined();
    expect(transport.cachedCoordinator('a')?.nodeId).toBe(1);
  });
});

/** An event of `groupId` as a coordinator sends it: described with `errorCode` (state Stable when NONE). */
function groupEvent(groupId: string, reason: string, errorCode = ErrorCode.NONE, isSnapshot = false) {
  return {
    group: {
      errorCode,
      errorMessage: '',
      groupId,
      groupState: errorCode === ErrorCode.NONE ? 'Stable' : '',
      protocolType: '',
      protocolData: '',
      members: [],
      generationId: errorCode === ErrorCode.NONE ? 1 : -1,
    },
    reason,
    timestampMs: 0,
    isSnapshot,
  };
}

/** A named watch on a FakeCluster; backoffs with random 0.5 are exact: 100 ms doubling, capped at 1,000. */
function watching(groupIds: string[]) {
  const time = new ManualTime();
  const cluster = new FakeCluster(time).coordinate('a', 1).coordinate('b', 2);
  const transport = new ClusterTransport({
    bootstrap: ['node-1:7070'],
    connect: cluster.connect,
    time,
    random: () => 0.5,
  });
  const seen: string[] = [];
  const ended: (CohortError | null)[] = [];
  const watch = transport.watchGroups(
    { groupIds },
    (e) =>
      seen.push(
        `${e.group.groupId} ${e.reason} ${ErrorCode[e.group.errorCode]}${e.isSnapshot ? ' snapshot' : ''}`,
      ),
    (e) => ended.push(e),
  );
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  return { cluster, transport, watch, seen, ended, advance };
}

describe('ClusterTransport: a named watch follows its groups when they move', () => {
  it('on group-unloaded (NOT_COORDINATOR) finds the new coordinator after a backoff and watches there', async () => {
    const { cluster, transport, seen, ended, advance } = watching(['a', 'b']);
    await flush();
    const [onB] = cluster.node(2).watchCalls;
    onB.onEvent(groupEvent('b', 'snapshot', ErrorCode.NONE, true));
    cluster.coordinate('b', 3);
    onB.onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    expect(transport.cachedCoordinator('b')).toBeUndefined();
    expect(onB.isCancelled).toBe(true); // it watched nothing else for us
    onB.onEvent(groupEvent('b', 'group-loaded')); // the old node's news: stale from now on
    await advance(99);
    expect(cluster.node(3).watchCalls).toHaveLength(0);
    await advance(1);
    expect(cluster.node(3).watchCalls.map((c) => c.request.groupIds)).toEqual([['b']]);
    cluster.node(3).watchCalls[0].onEvent(groupEvent('b', 'snapshot', ErrorCode.NONE, true));
    expect(seen).toEqual([
      'b snapshot NONE snapshot',
      'b group-unloaded NOT_COORDINATOR',
      'b snapshot NONE snapshot',
    ]);
    expect(ended).toEqual([]);
    expect(cluster.node(1).watchCalls[0].isCancelled).toBe(false); // group a is not disturbed
  });

  it('backs off, doubling, while the coordinator found does not lead the group yet; tells of the move once', async () => {
    const { cluster, seen, advance } = watching(['b']);
    await flush();
    cluster.node(2).watchCalls[0].onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    // FindCoordinator still names node 2 (the election is not seen yet): its snapshot says NOT_COORDINATOR.
    for (const waitMs of [100, 200, 400]) {
      await advance(waitMs - 1);
      const calls = cluster.node(2).watchCalls.length;
      await advance(1);
      expect(cluster.node(2).watchCalls).toHaveLength(calls + 1);
      cluster.node(2).watchCalls[calls].onEvent(groupEvent('b', 'snapshot', ErrorCode.NOT_COORDINATOR, true));
    }
    cluster.coordinate('b', 3);
    await advance(800);
    cluster.node(3).watchCalls[0].onEvent(groupEvent('b', 'snapshot', ErrorCode.NONE, true));
    expect(seen).toEqual(['b group-unloaded NOT_COORDINATOR', 'b snapshot NONE snapshot']);
    // A good snapshot starts the backoff over.
    cluster.coordinate('b', 2);
    cluster.node(3).watchCalls[0].onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    await advance(100);
    expect(cluster.node(2).watchCalls).toHaveLength(5);
  });

  it('re-opens after a call ended with NOT_COORDINATOR, and retries a lookup that finds no coordinator', async () => {
    const { cluster, seen, ended, advance } = watching(['b']);
    await flush();
    cluster.node(1).scriptFindCoordinator({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE });
    cluster.node(2).watchCalls[0].onEnd(new CohortError(ErrorCode.NOT_COORDINATOR, 'moved'));
    await advance(100); // lookup: COORDINATOR_NOT_AVAILABLE (no leader elected yet)
    expect(cluster.node(2).watchCalls).toHaveLength(1);
    cluster.coordinate('b', 3);
    await advance(199);
    expect(cluster.node(3).watchCalls).toHaveLength(0);
    await advance(1);
    expect(cluster.node(3).watchCalls).toHaveLength(1);
    expect(seen).toEqual([]);
    expect(ended).toEqual([]);
  });

  it('stops every retry and call when cancelled', async () => {
    const { cluster, watch, ended, advance } = watching(['a', 'b']);
    await flush();
    cluster.node(2).watchCalls[0].onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    const lookups = cluster.node(1).findCoordinatorCalls.length;
    watch.cancel();
    expect(ended).toEqual([null]);
    expect(cluster.node(1).watchCalls[0].isCancelled).toBe(true);
    await advance(10_000);
    expect(cluster.node(1).findCoordinatorCalls).toHaveLength(lookups);
    expect(cluster.node(2).watchCalls).toHaveLength(1);
  });

  it('ends when the client closes while a group waits out its backoff, instead of hanging', async () => {
    const { cluster, transport, ended, advance } = watching(['b']);
    await flush();
    cluster.node(2).watchCalls[0].onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    await advance(50); // the re-open's timer is pending
    transport.close();
    expect(ended).toEqual([null]);
    await advance(10_000);
    expect(ended).toEqual([null]);
  });

  it('ends on a refusal, which no re-open would change', async () => {
    const { cluster, ended, advance } = watching(['b']);
    await flush();
    cluster.node(1).scriptFindCoordinator(new CohortError(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'no'));
    cluster.node(2).watchCalls[0].onEvent(groupEvent('b', 'group-unloaded', ErrorCode.NOT_COORDINATOR));
    await advance(100);
    expect(ended.map((e) => e?.code)).toEqual([ErrorCode.GROUP_AUTHORIZATION_FAILED]);
  });
});
