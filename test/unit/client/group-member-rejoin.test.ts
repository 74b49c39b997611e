import { RANGE_ASSIGNOR } from '../../../src/client/assignors';
import {
  decodeAssignment,
  encodeAssignment,
  encodeSubscription,
} from '../../../src/client/consumer-protocol';
import type { LostEvent, RevokedEvent } from '../../../src/client/group-member-events';
import { CohortError, ErrorCode } from '../../../src/errors';
import { harness, joined } from './support/member-harness';
import { flush, ScriptedTransport, subscriptionOf } from './support/scripted-transport';

const tps = (...partitions: number[]) => partitions.map((partition) => ({ topic: 't', partition }));

describe('GroupMember joining', () => {
  it('rejoins at once with the member id that MEMBER_ID_REQUIRED hands out', async () => {
    const transport = new ScriptedTransport().script('joinGroup', {
      errorCode: ErrorCode.MEMBER_ID_REQUIRED,
      memberId: 'given-id',
    });
    const { member } = harness({}, transport);
    await flush();
    const joins = transport.callsOf('joinGroup');
    expect(joins.map((c) => c.request.memberId)).toEqual(['', 'given-id']);
    expect(member.memberId).toBe('given-id');
    expect(member.state).toBe('stable');
  });

  it('forgets its member id and rejoins at once on UNKNOWN_MEMBER_ID from JoinGroup', async () => {
    const transport = new ScriptedTransport().script(
      'joinGroup',
      { errorCode: ErrorCode.MEMBER_ID_REQUIRED, memberId: 'stale' },
      { errorCode: ErrorCode.UNKNOWN_MEMBER_ID },
    );
    harness({}, transport);
    await flush();
    expect(transport.callsOf('joinGroup').map((c) => c.request.memberId)).toEqual(['', 'stale', '']);
  });

  it('as leader, runs the voted assignor over every member and sends each its assignment', async () => {
    const other = encodeSubscription({ topics: ['t'] });
    const transport = new ScriptedTransport().script('joinGroup', (request) => ({
      protocolName: 'range',
      leaderId: 'member-1',
      memberId: 'member-1',
      members: [
        { memberId: 'member-1', groupInstanceId: '', metadata: request.protocols[0].metadata },
        { memberId: 'member-2', groupInstanceId: '', metadata: other },
      ],
    }));
    const { member, events } = harness({ protocols: [RANGE_ASSIGNOR] }, transport);
    await flush();
    const sync = transport.callsOf('syncGroup')[0].request;
    expect(sync.assignments.map((a) => [a.memberId, decodeAssignment(a.assignment).partitions])).toEqual([
      ['member-1', tps(0, 1)],
      ['member-2', tps(2, 3)],
    ]);
    expect(member.isLeader).toBe(true);
    expect(events[0]).toEqual([
      'assigned',
      expect.objectContaining({ partitions: tps(0, 1), isLeader: true }),
    ]);
  });

  it('as follower, sends an empty SyncGroup and takes the assignment it is given', async () => {
    const transport = new ScriptedTransport()
      .script('joinGroup', { leaderId: 'someone-else', members: [] })
      .script('syncGroup', { assignment: encodeAssignment({ partitions: tps(3) }) });
    const { member } = harness({}, transport);
    await flush();
    expect(transport.callsOf('syncGroup')[0].request.assignments).toEqual([]);
    expect(member.assignment).toEqual(tps(3));
    expect(member.isLeader).toBe(false);
  });

  it('as a rejoining static leader told to skip assignment, assigns nothing (KIP-814)', async () => {
    const transport = new ScriptedTransport()
      .script('joinGroup', { skipAssignment: true })
      .script('syncGroup', { assignment: encodeAssignment({ partitions: tps(1) }) });
    const { member } = harness({ groupInstanceId: 'i-1' }, transport);
    await flush();
    expect(transport.callsOf('syncGroup')[0].request.assignments).toEqual([]);
    expect(member.assignment).toEqual(tps(1));
  });

  it('joins again at once, keeping its generation details, when SyncGroup says REBALANCE_IN_PROGRESS', async () => {
    const transport = new ScriptedTransport().script('syncGroup', {
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    const { member } = harness({}, transport);
    await flush();
    expect(transport.callsOf('joinGroup').map((c) => c.request.memberId)).toEqual(['', 'member-1']);
    expect(member.state).toBe('stable');
  });

  it.each([
    ['ILLEGAL_GENERATION', ErrorCode.ILLEGAL_GENERATION, 'member-1'],
    ['UNKNOWN_MEMBER_ID', ErrorCode.UNKNOWN_MEMBER_ID, ''],
  ])('after SyncGroup answers %s (%d), rejoins with member id "%s"', async (_name, code, memberId) => {
    const transport = new ScriptedTransport().script('syncGroup', { errorCode: code });
    harness({}, transport);
    await flush();
    expect(transport.callsOf('joinGroup').map((c) => c.request.memberId)).toEqual(['', memberId]);
  });
});

describe('GroupMember rebalancing after a heartbeat', () => {
  it('eager: revokes everything before sending JoinGroup, and waits for waitUntil with heartbeats going', async () => {
    const transport = new ScriptedTransport().script('heartbeat', {
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    const { member, events, advance } = await joined({ protocols: [RANGE_ASSIGNOR] }, transport);
    let release = (): void => {};
    member.on('revoked', (event: RevokedEvent) => event.waitUntil(new Promise<void>((r) => (release = r))));
    await advance(3_000);
    expect(events.map((e) => e[0])).toEqual(['assigned', 'revoked']);
    expect(events[1][1]).toMatchObject({ reason: 'rebalance', partitions: tps(0, 1, 2, 3), generationId: 1 });
    expect(transport.callsOf('joinGroup')).toHaveLength(1);
    await advance(3_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(2); // still heartbeating while the user commits
    release();
    await flush();
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(subscriptionOf(transport.callsOf('joinGroup')[1].request).ownedPartitions).toEqual([]);
    expect(events.map((e) => e[0])).toEqual(['assigned', 'revoked', 'assigned']);
  });

  it('eager: stops waiting for waitUntil after rebalanceTimeoutMs', async () => {
    const transport = new ScriptedTransport().script('heartbeat', {
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    const { member, advance } = await joined({ protocols: [RANGE_ASSIGNOR] }, transport);
    member.on('revoked', (event: RevokedEvent) => event.waitUntil(new Promise<void>(() => {})));
    await advance(3_000);
    for (let i = 0; i < 6; i++) await advance(3_000);
    expect(transport.callsOf('joinGroup')).toHaveLength(1);
    await advance(2_000); // 20,000 ms after the revoke began
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
  });

  it('cooperative: rejoins keeping its partitions, revokes only what moves, then rejoins for the follow-up', async () => {
    const transport = new ScriptedTransport().script('heartbeat', {
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    const { member, events, advance } = await joined({}, transport);
    transport
      .script('joinGroup', { generationId: 2, leaderId: 'other', members: [] })
      .script('syncGroup', { assignment: encodeAssignment({ partitions: tps(0, 1) }) })
      .script('joinGroup', { generationId: 3, leaderId: 'other', members: [] })
      .script('syncGroup', { assignment: encodeAssignment({ partitions: tps(0, 1) }) });
    await advance(3_000);
    const joins = transport.callsOf('joinGroup');
    expect(subscriptionOf(joins[1].request)).toMatchObject({
      ownedPartitions: tps(0, 1, 2, 3),
      generationId: 1,
    });
    expect(events.map((e) => e[0])).toEqual(['assigned', 'revoked', 'assigned', 'assigned']);
    expect(events[1][1]).toMatchObject({ reason: 'reassigned', partitions: tps(2, 3) });
    expect(events[2][1]).toMatchObject({ generationId: 2, partitions: tps(0, 1), added: [] });
    // The follow-up: joins again at once, now owning only what it kept.
    expect(joins).toHaveLength(3);
    expect(subscriptionOf(joins[2].request)).toMatchObject({ ownedPartitions: tps(0, 1), generationId: 2 });
    expect(events[3][1]).toMatchObject({ generationId: 3, partitions: tps(0, 1), added: [] });
    expect(member.generationId).toBe(3);
  });

  it.each([
    ['ILLEGAL_GENERATION', ErrorCode.ILLEGAL_GENERATION, 'illegal-generation', 'member-1'],
    ['UNKNOWN_MEMBER_ID', ErrorCode.UNKNOWN_MEMBER_ID, 'unknown-member', ''],
  ])(
    'on %s (%d) from a heartbeat: the assignment is lost (not revoked) and the member rejoins',
    async (_name, code, reason, memberId) => {
      const transport = new ScriptedTransport().script('heartbeat', { errorCode: code });
      const { member, events, advance } = await joined({ protocols: [RANGE_ASSIGNOR] }, transport);
      transport.script('joinGroup', 'hang');
      await advance(3_000);
      expect(events.map((e) => e[0])).toEqual(['assigned', 'lost']);
      expect(events[1][1]).toMatchObject({ reason, partitions: tps(0, 1, 2, 3) });
      expect((events[1][1] as LostEvent).error).toMatchObject({ code });
      expect(transport.callsOf('joinGroup')[1].request.memberId).toBe(memberId);
      expect(member.generationId).toBe(-1);
    },
  );

  it('aborts the work of lost partitions', async () => {
    const transport = new ScriptedTransport().script('heartbeat', { errorCode: ErrorCode.UNKNOWN_MEMBER_ID });
    const { member, advance } = await joined({}, transport);
    let seen: AbortSignal | undefined;
    const work = member.process((signal) => {
      seen = signal;
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    });
    await advance(3_000);
    await work;
    expect(seen?.aborted).toBe(true);
  });

  it('on FENCED_INSTANCE_ID: loses the assignment, fails with the rebuilt error and sends no LeaveGroup', async () => {
    const transport = new ScriptedTransport().script('heartbeat', {
      errorCode: ErrorCode.FENCED_INSTANCE_ID,
    });
    const { member, events, advance } = await joined({ groupInstanceId: 'i-1' }, transport);
    await advance(3_000);
    expect(events.map((e) => e[0])).toEqual(['assigned', 'lost', 'error']);
    expect(events[1][1]).toMatchObject({ reason: 'fenced' });
    const error = events[2][1] as CohortError;
    expect(error).toBeInstanceOf(CohortError);
    expect(error).toMatchObject({ code: ErrorCode.FENCED_INSTANCE_ID, retriable: false });
    expect(member.state).toBe('failed');
    expect(member.failure).toBe(error);
    await advance(30_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    expect(transport.callsOf('leaveGroup')).toHaveLength(0);
  });

  it('ignores REBALANCE_IN_PROGRESS from a heartbeat sent while SyncGroup is parked', async () => {
    const transport = new ScriptedTransport()
      .script('syncGroup', 'hang')
      .script('heartbeat', { errorCode: ErrorCode.REBALANCE_IN_PROGRESS });
    const { member, advance } = harness({}, transport);
    await flush();
    await advance(3_000);
    expect(member.state).toBe('completing-rebalance');
    expect(transport.callsOf('joinGroup')).toHaveLength(1);
  });
});

describe('GroupMember commits', () => {
  it('commits in its generation, offsets as numbers on the wire', async () => {
    const { member, transport } = await joined();
    await member.commitOffsets([{ topic: 't', partition: 2, offset: 42n, metadata: 'm' }]);
    expect(transport.callsOf('offsetCommit')[0].request).toEqual({
      groupId: 'g',
      generationId: 1,
      memberId: 'member-1',
      groupInstanceId: '',
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 2, committedOffset: 42, committedLeaderEpoch: -1, committedMetadata: 'm' },
          ],
        },
      ],
    });
  });

  it('on ILLEGAL_GENERATION, rejects the commit, loses the assignment and rejoins', async () => {
    const transport = new ScriptedTransport().script('offsetCommit', (request) => ({
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: request.topics[0].partitions[0].partitionIndex,
              errorCode: ErrorCode.ILLEGAL_GENERATION,
            },
          ],
        },
      ],
    }));
    const { member, names } = await joined({}, transport);
    await expect(member.commitOffsets([{ topic: 't', partition: 0, offset: 1n }])).rejects.toMatchObject({
      code: ErrorCode.ILLEGAL_GENERATION,
    });
    await flush();
    expect(names()).toEqual(['assigned', 'lost', 'assigned']);
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
  });

  it('refuses to commit while the group rebalances, without sending anything', async () => {
    const transport = new ScriptedTransport().script('syncGroup', 'hang');
    const { member } = harness({}, transport);
    await flush();
    await expect(member.commitOffsets([{ topic: 't', partition: 0, offset: 1n }])).rejects.toMatchObject({
      code: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    expect(transport.callsOf('offsetCommit')).toHaveLength(0);
  });

  it('reads committed offsets as bigint, and -1 as nothing committed', async () => {
    const transport = new ScriptedTransport().script('offsetFetch', {
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: 1,
              committedOffset: -1,
              committedLeaderEpoch: -1,
              metadata: '',
              errorCode: ErrorCode.NONE,
            },
            {
              partitionIndex: 0,
              committedOffset: 7,
              committedLeaderEpoch: -1,
              metadata: 'x',
              errorCode: ErrorCode.NONE,
            },
          ],
        },
      ],
    });
    const { member } = await joined({}, transport);
    expect(await member.fetchOffsets(tps(0, 1))).toEqual([
      { topic: 't', partition: 0, offset: 7n, metadata: 'x' },
      { topic: 't', partition: 1, offset: null, metadata: '' },
    ]);
    expect(transport.callsOf('offsetFetch')[0].request).toEqual({
      groupId: 'g',
      topics: [{ name: 't', partitionIndexes: [0, 1] }],
      requireStable: true,
    });
  });
});
