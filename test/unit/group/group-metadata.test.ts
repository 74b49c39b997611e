import { CohortError } from '../../../src/errors';
import { DelayedHeartbeat, type HeartbeatExpirationHandler } from '../../../src/group/delayed-heartbeat';
import { GroupMetadata } from '../../../src/group/group-metadata';
import type { JoinGroupResponse, Protocol } from '../../../src/group/group-protocol';
import { MemberMetadata } from '../../../src/group/member-metadata';
import { ParkedCall } from '../../../src/group/parked-call';
import { ReplyDispatcher } from '../../../src/group/reply-dispatcher';

const handler: HeartbeatExpirationHandler = { onExpireHeartbeat: () => undefined };
const dispatcher = new ReplyDispatcher(100);
const p = (name: string, metadata = ''): Protocol => ({ name, metadata: Buffer.from(metadata) });

function member(group: GroupMetadata, id: string, protocols: Protocol[], instanceId = ''): MemberMetadata {
  const m = new MemberMetadata(id, instanceId, 'client', 'host', 500, 500, 'consumer', protocols);
  m.heartbeat = new DelayedHeartbeat(handler, group, id, false);
  return m;
}

function parked(): ParkedCall<JoinGroupResponse> {
  return new ParkedCall<JoinGroupResponse>(dispatcher, undefined, undefined);
}

describe('GroupMetadata', () => {
  test('the protocol chosen is the one most members prefer among those all support', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('roundrobin'), p('range')]), undefined);
    group.transitionTo('PreparingRebalance');
    group.add(member(group, 'b', [p('range'), p('roundrobin'), p('sticky')]), undefined);
    group.add(member(group, 'c', [p('roundrobin'), p('range')]), undefined);
    expect(group.selectProtocol()).toBe('roundrobin');
  });

  test('a protocol only some members support is never chosen', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('sticky'), p('range')]), undefined);
    group.transitionTo('PreparingRebalance');
    group.add(member(group, 'b', [p('range')]), undefined);
    expect(group.selectProtocol()).toBe('range');
  });

  test('an Empty group accepts any non-empty protocol type and list; otherwise one protocol must fit everyone', () => {
    const group = new GroupMetadata('g');
    expect(group.supportsProtocols('', [p('range')])).toBe(false);
    expect(group.supportsProtocols('consumer', [])).toBe(false);
    expect(group.supportsProtocols('consumer', [p('x')])).toBe(true);
    group.add(member(group, 'a', [p('range'), p('roundrobin')]), undefined);
    group.transitionTo('PreparingRebalance');
    expect(group.supportsProtocols('connect', [p('range')])).toBe(false);
    expect(group.supportsProtocols('consumer', [p('sticky')])).toBe(false);
    expect(group.supportsProtocols('consumer', [p('sticky'), p('roundrobin')])).toBe(true);
  });

  test('the first member leads; a leaving leader hands over to a remaining member', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('range')]), undefined);
    group.transitionTo('PreparingRebalance');
    group.add(member(group, 'b', [p('range')]), undefined);
    expect(group.leaderId).toBe('a');
    group.remove('a');
    expect(group.leaderId).toBe('b');
    group.remove('b');
    expect(group.leaderId).toBeUndefined();
  });

  test('a leader that did not rejoin is replaced by one that did; with none rejoined there is no leader to elect', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('range')]), undefined);
    group.transitionTo('PreparingRebalance');
    group.add(member(group, 'b', [p('range')]), undefined);
    expect(group.maybeElectNewJoinedLeader()).toBe(false);
    group.updateMember(group.get('b') as MemberMetadata, [p('range')], 500, 500, parked());
    expect(group.maybeElectNewJoinedLeader()).toBe(true);
    expect(group.leaderId).toBe('b');
  });

  test('all members joined counts parked joins and pending member ids', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('range')]), parked());
    expect(group.hasAllMembersJoined).toBe(true);
    group.addPendingMember('pending', new DelayedHeartbeat(handler, group, 'pending', true));
    expect(group.hasAllMembersJoined).toBe(false);
    group.removePendingMember('pending');
    expect(group.hasAllMembersJoined).toBe(true);
    group.transitionTo('PreparingRebalance');
    group.add(member(group, 'b', [p('range')]), undefined);
    expect(group.hasAllMembersJoined).toBe(false);
  });

  test('the same metadata in the same order matches; anything else does not', () => {
    const group = new GroupMetadata('g');
    const m = member(group, 'a', [p('range', 'x'), p('roundrobin', 'y')]);
    expect(m.matches([p('range', 'x'), p('roundrobin', 'y')])).toBe(true);
    expect(m.matches([p('roundrobin', 'y'), p('range', 'x')])).toBe(false);
    expect(m.matches([p('range', 'x'), p('roundrobin', 'z')])).toBe(false);
    expect(m.matches([p('range', 'x')])).toBe(false);
  });

  test('adding a second member with the same group instance id is a broken invariant', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'a', [p('range')], 'instance'), undefined);
    expect(() => group.add(member(group, 'b', [p('range')], 'instance'), undefined)).toThrow(CohortError);
  });

  test('an illegal transition throws and leaves the state as it was', () => {
    const group = new GroupMetadata('g');
    expect(() => group.transitionTo('Stable')).toThrow(CohortError);
    expect(group.state).toBe('Empty');
  });

  test('replacing a static member moves every index to the new member id', () => {
    const group = new GroupMetadata('g');
    group.add(member(group, 'old', [p('range')], 'instance'), undefined);
    const replaced = group.replaceStaticMember('instance', 'old', 'new');
    expect(replaced.memberId).toBe('new');
    expect(replaced.heartbeat.memberId).toBe('new');
    expect(group.has('old')).toBe(false);
    expect(group.has('new')).toBe(true);
    expect(group.leaderId).toBe('new');
    expect(group.currentStaticMemberId('instance')).toBe('new');
  });
});
