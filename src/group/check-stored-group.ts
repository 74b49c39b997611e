import type { StoredGroup } from './stored-group';

/**
 * What is wrong with a stored group that the coordinator could not take back as it is, or undefined.
 * Records come from the coordinator's own writes, so a problem here is a bug or a damaged data directory:
 * the load fails loudly rather than serve a group whose invariants do not hold (a leader that is not a
 * member, a protocol some member does not support, two members with one instance id).
 */
export function checkStoredGroup(group: StoredGroup): string | undefined {
  const { groupId, members } = group;
  if (!Number.isInteger(group.generationId) || group.generationId < 0) {
    return `group ${groupId} has generation ${group.generationId}`;
  }
  if (members.length === 0) return undefined;
  if (group.protocolType === '') return `group ${groupId} has members but no protocol type`;
  if (group.protocolName === '') return `group ${groupId} has members but no protocol`;
  if (group.generationId === 0) return `group ${groupId} has members at generation 0`;
  const memberIds = new Set<string>();
  const instanceIds = new Set<string>();
  for (const member of members) {
    const { memberId, groupInstanceId } = member;
    if (memberId === '' || memberIds.has(memberId)) {
      return `group ${groupId} has an empty or repeated member id '${memberId}'`;
    }
    memberIds.add(memberId);
    if (groupInstanceId !== '') {
      if (instanceIds.has(groupInstanceId)) {
        return `group ${groupId} has two members with instance id ${groupInstanceId}`;
      }
      instanceIds.add(groupInstanceId);
    }
    const names = new Set(member.protocols.map((protocol) => protocol.name));
    if (names.size !== member.protocols.length) {
      return `member ${memberId} of group ${groupId} offers a protocol twice`;
    }
    if (!names.has(group.protocolName)) {
      return `member ${memberId} of group ${groupId} does not support the group's protocol ${group.protocolName}`;
    }
  }
  if (!memberIds.has(group.leaderId)) return `group ${groupId} is led by ${group.leaderId}, not a member`;
  return undefined;
}
