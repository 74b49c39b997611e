import { CohortError, ErrorCode } from '../../../src/errors';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  CLIENT_HOST,
  CLIENT_ID,
  CONTEXT,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  LEADER_INSTANCE_ID,
  PROTOCOL_SUPERSET,
  PROTOCOL_TYPE,
  protocol,
  Tracked,
} from '../../support/group-harness';

let ctx: CoordinatorTestContext;
beforeEach(async () => {
  ctx = await CoordinatorTestContext.create();
});
afterEach(() => ctx.shutdown());

describe('LeaveGroup', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect(await ctx.leave([{ memberId: 'm' }], '')).toEqual({
      errorCode: ErrorCode.INVALID_GROUP_ID,
      members: [],
    });
  });

  test('leaving an unknown group answers UNKNOWN_MEMBER_ID per member', async () => {
    const response = await ctx.leave([{ memberId: 'memberId' }]);
    expect(response).toEqual({
      errorCode: ErrorCode.NONE,
      members: [{ memberId: 'memberId', groupInstanceId: '', errorCode: ErrorCode.UNKNOWN_MEMBER_ID }],
    });
  });

  test('an unknown member leaving an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await ctx.dynamicJoin();
    expect((await ctx.leave([{ memberId: 'consumerId' }])).members[0].errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });

  test('a member leaves; the last one leaving makes the group Empty', async () => {
    const join = await ctx.dynamicJoin();
    const response = await ctx.leaveAndCommit([{ memberId: join.memberId }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('Empty');
  });

  test("the leave that empties the group is answered once the group's record is committed", async () => {
    const join = await ctx.dynamicJoin();
    const left = new Tracked(ctx.leave([{ memberId: join.memberId }]));
    // The member is gone at once; the answer waits for the Empty record, as Kafka's write operation does.
    expect(await ctx.state()).toBe('Empty');
    expect(ctx.pendingAppends).toBe(1);
    await ctx.commitAppends(0);
    expect(left.isSettled).toBe(false);
    await ctx.commitAppends();
    expect(left.result).toEqual({
      errorCode: ErrorCode.NONE,
      members: [{ memberId: join.memberId, groupInstanceId: '', errorCode: ErrorCode.NONE }],
    });
    expect(ctx.committedGroup(GROUP_ID)).toMatchObject({ generationId: 2, members: [] });
  });

  test('a leave that empties nothing is answered at once', async () => {
    const { leaderId, followerId } = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.answerGiven(ctx.leave([{ memberId: followerId }]), 'LeaveGroup');
    expect(response.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(ctx.pendingAppends).toBe(0);
    expect(await ctx.memberIds()).toEqual([leaderId]);
  });

  test.each([
    ['REQUEST_TIMED_OUT', 'COORDINATOR_NOT_AVAILABLE'],
    ['NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'COORDINATOR_NOT_AVAILABLE'],
    ['NOT_LEADER_OR_FOLLOWER', 'NOT_COORDINATOR'],
    ['MESSAGE_TOO_LARGE', 'UNKNOWN_SERVER_ERROR'],
    ['KAFKA_STORAGE_ERROR', 'UNKNOWN_SERVER_ERROR'],
  ] as const)(
    "the leave's answer fails with its emptied group's record: an append failing with %s answers %s",
    async (appendError, answered) => {
      const join = await ctx.dynamicJoin();
      const left = new Tracked(ctx.leave([{ memberId: join.memberId }]));
      ctx.failAppend(new CohortError(ErrorCode[appendError], 'the append failed'));
      await ctx.commitAppends(0);
      expect(left.result).toEqual({ errorCode: ErrorCode[answered], members: [] });
    },
  );

  test("an append failing with an error that is not the log's answers the leave UNKNOWN_SERVER_ERROR", async () => {
    const join = await ctx.dynamicJoin();
    const left = new Tracked(ctx.leave([{ memberId: join.memberId }]));
    ctx.failAppend(new Error('a bug below'));
    await ctx.commitAppends(0);
    expect(left.result).toEqual({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, members: [] });
  });

  test('a batch leave that empties the group on its first member waits, and answers every member', async () => {
    const join = await ctx.dynamicJoin();
    const left = new Tracked(ctx.leave([{ memberId: join.memberId }, { memberId: 'not-a-member' }]));
    await ctx.commitAppends(0);
    expect(left.isSettled).toBe(false);
    await ctx.commitAppends();
    expect(left.result.members.map((m) => [m.memberId, m.errorCode])).toEqual([
      [join.memberId, ErrorCode.NONE],
      ['not-a-member', ErrorCode.UNKNOWN_MEMBER_ID],
    ]);
  });

  test("a leave whose group's record is still pending at shutdown is answered with the shutdown's code", async () => {
    const join = await ctx.dynamicJoin();
    const left = new Tracked(ctx.leave([{ memberId: join.memberId }]));
    ctx.shutdown();
    await ctx.commitAppends(0);
    expect(left.result).toEqual({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] });
  });

  test('a static instance leaving with a member id that is not its own is fenced', async () => {
    await ctx.staticJoin(LEADER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET });
    const response = await ctx.leave([{ memberId: 'some_member', groupInstanceId: LEADER_INSTANCE_ID }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
  });

  test('a static instance may leave by instance id alone', async () => {
    await ctx.staticJoin(LEADER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET });
    const response = await ctx.leaveAndCommit([{ groupInstanceId: LEADER_INSTANCE_ID }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.memberIds()).toEqual([]);
  });

  test('a batch of static members leaves together', async () => {
    await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.leaveAndCommit([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    expect(await ctx.state()).toBe('Empty');
  });

  test('a batch leave to an unknown group answers UNKNOWN_MEMBER_ID for each', async () => {
    const response = await ctx.leave([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([
      ErrorCode.UNKNOWN_MEMBER_ID,
      ErrorCode.UNKNOWN_MEMBER_ID,
    ]);
  });

  test('a batch leave answers each member on its own: fenced and accepted', async () => {
    await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.leave([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID, memberId: 'invalid-member' },
    ]);
    expect(response.members).toEqual([
      { memberId: '', groupInstanceId: LEADER_INSTANCE_ID, errorCode: ErrorCode.NONE },
      {
        memberId: 'invalid-member',
        groupInstanceId: FOLLOWER_INSTANCE_ID,
        errorCode: ErrorCode.FENCED_INSTANCE_ID,
      },
    ]);
  });

  test('a batch leave answers each member on its own: unknown instance and accepted', async () => {
    await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.leave([
      { groupInstanceId: 'unknown-instance' },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]);
  });

  test('a member leaving a Stable group makes the others rejoin', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    await ctx.leave([{ memberId: result.followerId }]);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(await ctx.heartbeat(result.leaderId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leaving member parked in JoinGroup is answered UNKNOWN_MEMBER_ID', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const join = ctx.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(join.isSettled).toBe(false);
    await ctx.leave([{ groupInstanceId: LEADER_INSTANCE_ID }]);
    expect(await join.promise).toMatchObject({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, memberId: '' });
  });
});

describe('ListGroups', () => {
  test('a Stable group is listed with its protocol type and state', async () => {
    await ctx.stableSingleMemberGroup();
    const response = await ctx.router.listGroups({ statesFilter: [] }, CONTEXT);
    expect(response).toEqual({
      errorCode: ErrorCode.NONE,
      groups: [{ groupId: GROUP_ID, protocolType: PROTOCOL_TYPE, groupState: 'Stable' }],
    });
  });

  test('a rebalancing group is listed in its state', async () => {
    await ctx.dynamicJoin();
    const response = await ctx.router.listGroups({ statesFilter: [] }, CONTEXT);
    expect(response.groups).toEqual([
      { groupId: GROUP_ID, protocolType: PROTOCOL_TYPE, groupState: 'CompletingRebalance' },
    ]);
  });

  test('the states filter selects groups by state, case-insensitively', async () => {
    const all = ['PreparingRebalance', 'CompletingRebalance', 'Stable', 'Dead', 'Empty'];
    const listed = async (states: string[]) =>
      (await ctx.router.listGroups({ statesFilter: states }, CONTEXT)).groups.length;
    const join = await ctx.dynamicJoin();
    expect(await listed(['completingrebalance'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'CompletingRebalance'))).toBe(0);
    await ctx.sync({ generationId: join.generationId, memberId: join.memberId, assignments: [] });
    expect(await listed(['STABLE'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'Stable'))).toBe(0);
    await ctx.leaveAndCommit([{ memberId: join.memberId }]);
    expect(await listed(['Empty'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'Empty'))).toBe(0);
    expect(await listed(['NoSuchState'])).toBe(0);
  });
});

describe('DescribeGroups', () => {
  test('an unknown group is GROUP_ID_NOT_FOUND in state Dead', async () => {
    expect(await ctx.describe('unknown')).toEqual({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      errorMessage: 'Group unknown not found.',
      groupId: 'unknown',
      groupState: 'Dead',
      protocolType: '',
      protocolData: '',
      members: [],
      generationId: -1,
    });
  });

  test('a Stable group shows its protocol and each member with metadata and assignment', async () => {
    const metadata = Buffer.from('subscription');
    const join = await ctx.dynamicJoin({ protocols: [protocol('range', metadata)] });
    await ctx.sync({
      generationId: 1,
      memberId: join.memberId,
      assignments: [[join.memberId, Buffer.from('assigned')]],
    });
    expect(await ctx.describe()).toEqual({
      errorCode: ErrorCode.NONE,
      errorMessage: '',
      groupId: GROUP_ID,
      groupState: 'Stable',
      protocolType: PROTOCOL_TYPE,
      protocolData: 'range',
      members: [
        {
          memberId: join.memberId,
          groupInstanceId: '',
          clientId: CLIENT_ID,
          clientHost: CLIENT_HOST,
          memberMetadata: metadata,
          memberAssignment: Buffer.from('assigned'),
          // The SyncGroup that made the group Stable restarted the member's session.
          lastHeartbeatMs: ctx.time.nowMs(),
        },
      ],
      generationId: 1,
    });
  });

  test('a static member is described with its group instance id', async () => {
    const join = await ctx.staticJoin(LEADER_INSTANCE_ID);
    await ctx.sync({ generationId: 1, memberId: join.memberId, assignments: [] });
    const described = await ctx.describe();
    expect(described.members.map((m) => [m.memberId, m.groupInstanceId])).toEqual([
      [join.memberId, LEADER_INSTANCE_ID],
    ]);
  });

  test('a rebalancing group shows no protocol and no member metadata', async () => {
    const join = await ctx.dynamicJoin({ protocols: [protocol('range', Buffer.from('x'))] });
    const described = await ctx.describe();
    expect(described).toMatchObject({
      errorCode: ErrorCode.NONE,
      groupState: 'CompletingRebalance',
      protocolData: '',
      generationId: 1,
    });
    expect(described.members.map((m) => m.memberId)).toEqual([join.memberId]);
    expect(
      described.members.every((m) => m.memberMetadata.length === 0 && m.memberAssignment.length === 0),
    ).toBe(true);
  });

  test('several groups are described in the order asked', async () => {
    await ctx.dynamicJoin({ groupId: 'a' });
    const response = await ctx.router.describeGroups({ groups: ['b', 'a'] }, CONTEXT);
    expect(response.groups.map((g) => [g.groupId, g.errorCode])).toEqual([
      ['b', ErrorCode.GROUP_ID_NOT_FOUND],
      ['a', ErrorCode.NONE],
    ]);
  });
});

describe('DeleteGroups', () => {
  /** DeleteGroups, its tombstones committed: the results, one per group. */
  const deleteGroups = (...names: string[]) => ctx.deleteGroups(names);

  test('a group with members cannot be deleted: NON_EMPTY_GROUP', async () => {
    await ctx.dynamicJoin();
    expect(await deleteGroups(GROUP_ID)).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.NON_EMPTY_GROUP },
    ]);
  });

  test('an unknown group gets GROUP_ID_NOT_FOUND', async () => {
    expect(await deleteGroups('unknown')).toEqual([
      { groupId: 'unknown', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
    ]);
  });

  test('an Empty group is deleted', async () => {
    const join = await ctx.dynamicJoin();
    await ctx.leaveAndCommit([{ memberId: join.memberId }]);
    expect(await deleteGroups(GROUP_ID)).toEqual([{ groupId: GROUP_ID, errorCode: ErrorCode.NONE }]);
    expect(ctx.transitions.at(-1)).toMatchObject({ from: 'Empty', to: 'Dead' });
  });

  test('an Empty group with committed offsets is deleted with its offsets', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    expect(
      (
        await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [
          { topic: 'topic', partition: 0, offset: 0 },
        ])
      ).get('topic-0'),
    ).toBe(ErrorCode.NONE);
    expect(await ctx.describe()).toMatchObject({ groupState: 'Stable', members: [{ memberId }] });
    await ctx.leaveAndCommit([{ memberId }]);
    expect((await deleteGroups(GROUP_ID))[0].errorCode).toBe(ErrorCode.NONE);
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect((await ctx.fetch(GROUP_ID, [['topic', [0]]])).topics[0].partitions[0].committedOffset).toBe(-1);
  });

  test('each group name is answered once, in the order given', async () => {
    await ctx.commitOffsetsAndAnswer({ groupId: 'a', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 1 },
    ]);
    await ctx.dynamicJoin({ groupId: 'b' });
    expect(await deleteGroups('c', 'a', 'b', 'a')).toEqual([
      { groupId: 'c', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
      { groupId: 'a', errorCode: ErrorCode.NONE },
      { groupId: 'b', errorCode: ErrorCode.NON_EMPTY_GROUP },
    ]);
  });

  test('a pending member id of a deleted group expiring later touches nothing, not even a new group of that name', async () => {
    const pending = await ctx.join();
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect((await deleteGroups(GROUP_ID))[0].errorCode).toBe(ErrorCode.NONE);
    const fresh = await ctx.sendDynamicJoin();
    ctx.time.advance(500);
    const joined = await fresh.promise;
    expect(joined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 });
    expect(await ctx.memberIds()).toEqual([joined.memberId]);
  });
});
