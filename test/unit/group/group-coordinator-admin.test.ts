import { ErrorCode } from '../../../src/errors';
import {
  CLIENT_HOST,
  CLIENT_ID,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  GroupHarness,
  LEADER_INSTANCE_ID,
  PROTOCOL_SUPERSET,
  PROTOCOL_TYPE,
  protocol,
  settle,
} from '../../support/group-harness';

let h: GroupHarness;
beforeEach(() => {
  h = new GroupHarness();
});
afterEach(() => h.shutdown());

const CONTEXT = { clientHost: 'h' };

describe('LeaveGroup', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect(await h.leave([{ memberId: 'm' }], '')).toEqual({
      errorCode: ErrorCode.INVALID_GROUP_ID,
      members: [],
    });
  });

  test('leaving an unknown group answers UNKNOWN_MEMBER_ID per member', async () => {
    const response = await h.leave([{ memberId: 'memberId' }]);
    expect(response).toEqual({
      errorCode: ErrorCode.NONE,
      members: [{ memberId: 'memberId', groupInstanceId: '', errorCode: ErrorCode.UNKNOWN_MEMBER_ID }],
    });
  });

  test('an unknown member leaving an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await h.dynamicJoin();
    expect((await h.leave([{ memberId: 'consumerId' }])).members[0].errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });

  test('a member leaves; the last one leaving makes the group Empty', async () => {
    const join = await h.dynamicJoin();
    const response = await h.leave([{ memberId: join.memberId }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('Empty');
  });

  test('a static instance leaving with a member id that is not its own is fenced', async () => {
    await h.staticJoin(LEADER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET });
    const response = await h.leave([{ memberId: 'some_member', groupInstanceId: LEADER_INSTANCE_ID }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
  });

  test('a static instance may leave by instance id alone', async () => {
    await h.staticJoin(LEADER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET });
    const response = await h.leave([{ groupInstanceId: LEADER_INSTANCE_ID }]);
    expect(response.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await h.memberIds()).toEqual([]);
  });

  test('a batch of static members leaves together', async () => {
    await h.staticMembersJoinAndRebalance();
    const response = await h.leave([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    expect(await h.state()).toBe('Empty');
  });

  test('a batch leave to an unknown group answers UNKNOWN_MEMBER_ID for each', async () => {
    const response = await h.leave([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([
      ErrorCode.UNKNOWN_MEMBER_ID,
      ErrorCode.UNKNOWN_MEMBER_ID,
    ]);
  });

  test('a batch leave answers each member on its own: fenced and accepted', async () => {
    await h.staticMembersJoinAndRebalance();
    const response = await h.leave([
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
    await h.staticMembersJoinAndRebalance();
    const response = await h.leave([
      { groupInstanceId: 'unknown-instance' },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    expect(response.members.map((m) => m.errorCode)).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]);
  });

  test('a member leaving a Stable group makes the others rejoin', async () => {
    const result = await h.staticMembersJoinAndRebalance();
    await h.leave([{ memberId: result.followerId }]);
    expect(await h.state()).toBe('PreparingRebalance');
    expect(await h.heartbeat(result.leaderId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leaving member parked in JoinGroup is answered UNKNOWN_MEMBER_ID', async () => {
    const result = await h.staticMembersJoinAndRebalance();
    const join = h.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    await settle();
    await h.leave([{ groupInstanceId: LEADER_INSTANCE_ID }]);
    await settle();
    expect(join.result).toMatchObject({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, memberId: '' });
  });
});

describe('ListGroups', () => {
  test('a Stable group is listed with its protocol type and state', async () => {
    await h.stableSingleMemberGroup();
    const response = await h.coordinator.listGroups({ statesFilter: [] }, CONTEXT);
    expect(response).toEqual({
      errorCode: ErrorCode.NONE,
      groups: [{ groupId: GROUP_ID, protocolType: PROTOCOL_TYPE, groupState: 'Stable' }],
    });
  });

  test('a rebalancing group is listed in its state', async () => {
    await h.dynamicJoin();
    const response = await h.coordinator.listGroups({ statesFilter: [] }, CONTEXT);
    expect(response.groups).toEqual([
      { groupId: GROUP_ID, protocolType: PROTOCOL_TYPE, groupState: 'CompletingRebalance' },
    ]);
  });

  test('the states filter selects groups by state, case-insensitively', async () => {
    const all = ['PreparingRebalance', 'CompletingRebalance', 'Stable', 'Dead', 'Empty'];
    const listed = async (states: string[]) =>
      (await h.coordinator.listGroups({ statesFilter: states }, CONTEXT)).groups.length;
    const join = await h.dynamicJoin();
    expect(await listed(['completingrebalance'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'CompletingRebalance'))).toBe(0);
    await h.sync({ generationId: join.generationId, memberId: join.memberId, assignments: [] });
    expect(await listed(['STABLE'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'Stable'))).toBe(0);
    await h.leave([{ memberId: join.memberId }]);
    expect(await listed(['Empty'])).toBe(1);
    expect(await listed(all.filter((s) => s !== 'Empty'))).toBe(0);
    expect(await listed(['NoSuchState'])).toBe(0);
  });
});

describe('DescribeGroups', () => {
  test('an unknown group is GROUP_ID_NOT_FOUND in state Dead', async () => {
    expect(await h.describe('unknown')).toEqual({
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
    const join = await h.dynamicJoin({ protocols: [protocol('range', metadata)] });
    await h.sync({
      generationId: 1,
      memberId: join.memberId,
      assignments: [[join.memberId, Buffer.from('assigned')]],
    });
    expect(await h.describe()).toEqual({
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
          lastHeartbeatMs: h.time.nowMs(),
        },
      ],
      generationId: 1,
    });
  });

  test('a static member is described with its group instance id', async () => {
    const join = await h.staticJoin(LEADER_INSTANCE_ID);
    await h.sync({ generationId: 1, memberId: join.memberId, assignments: [] });
    const described = await h.describe();
    expect(described.members.map((m) => [m.memberId, m.groupInstanceId])).toEqual([
      [join.memberId, LEADER_INSTANCE_ID],
    ]);
  });

  test('a rebalancing group shows no protocol and no member metadata', async () => {
    const join = await h.dynamicJoin({ protocols: [protocol('range', Buffer.from('x'))] });
    const described = await h.describe();
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
    await h.dynamicJoin({ groupId: 'a' });
    const response = await h.coordinator.describeGroups({ groups: ['b', 'a'] }, CONTEXT);
    expect(response.groups.map((g) => [g.groupId, g.errorCode])).toEqual([
      ['b', ErrorCode.GROUP_ID_NOT_FOUND],
      ['a', ErrorCode.NONE],
    ]);
  });
});

describe('DeleteGroups', () => {
  const deleteGroups = (...names: string[]) => h.coordinator.deleteGroups({ groupsNames: names }, CONTEXT);

  test('a group with members cannot be deleted: NON_EMPTY_GROUP', async () => {
    await h.dynamicJoin();
    expect((await deleteGroups(GROUP_ID)).results).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.NON_EMPTY_GROUP },
    ]);
  });

  test('an unknown group gets GROUP_ID_NOT_FOUND', async () => {
    expect((await deleteGroups('unknown')).results).toEqual([
      { groupId: 'unknown', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
    ]);
  });

  test('an Empty group is deleted', async () => {
    const join = await h.dynamicJoin();
    await h.leave([{ memberId: join.memberId }]);
    expect((await deleteGroups(GROUP_ID)).results).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.NONE },
    ]);
    expect(h.transitions.at(-1)).toMatchObject({ from: 'Empty', to: 'Dead' });
  });

  test('an Empty group with committed offsets is deleted with its offsets', async () => {
    const memberId = await h.stableSingleMemberGroup();
    expect(
      (await h.commit({ memberId, generationId: 1 }, [{ topic: 'topic', partition: 0, offset: 0 }])).get(
        'topic-0',
      ),
    ).toBe(ErrorCode.NONE);
    expect(await h.describe()).toMatchObject({ groupState: 'Stable', members: [{ memberId }] });
    await h.leave([{ memberId }]);
    expect((await deleteGroups(GROUP_ID)).results[0].errorCode).toBe(ErrorCode.NONE);
    expect((await h.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect((await h.fetch(GROUP_ID, [['topic', [0]]])).topics[0].partitions[0].committedOffset).toBe(-1);
  });

  test('each group name is answered once, in the order given', async () => {
    await h.commit({ groupId: 'a', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 1 },
    ]);
    await h.dynamicJoin({ groupId: 'b' });
    expect((await deleteGroups('c', 'a', 'b', 'a')).results).toEqual([
      { groupId: 'c', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
      { groupId: 'a', errorCode: ErrorCode.NONE },
      { groupId: 'b', errorCode: ErrorCode.NON_EMPTY_GROUP },
    ]);
  });

  test('a pending member id of a deleted group expiring later touches nothing, not even a new group of that name', async () => {
    const pending = await h.join();
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect((await deleteGroups(GROUP_ID)).results[0].errorCode).toBe(ErrorCode.NONE);
    const fresh = await h.sendDynamicJoin();
    h.advance(500);
    await settle();
    expect(fresh.result).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 });
    expect(await h.memberIds()).toEqual([fresh.result.memberId]);
  });
});
