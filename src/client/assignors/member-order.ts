import type { AssignorMember } from './partition-assignor';

/**
 * The order assignors lay members out in, as Kafka's `AbstractPartitionAssignor.MemberInfo`: static members
 * first, by `groupInstanceId` (a restarted static member gets a new member id but keeps its place, so it keeps
 * its partitions), then dynamic members by `memberId`.
 */
export function compareMembers(a: AssignorMember, b: AssignorMember): number {
  const aStatic = a.groupInstanceId !== undefined && a.groupInstanceId !== '';
  const bStatic = b.groupInstanceId !== undefined && b.groupInstanceId !== '';
  if (aStatic && bStatic) {
    if (a.groupInstanceId !== b.groupInstanceId)
      return (a.groupInstanceId as string) < (b.groupInstanceId as string) ? -1 : 1;
  } else if (aStatic !== bStatic) {
    return aStatic ? -1 : 1;
  }
  if (a.memberId === b.memberId) return 0;
  return a.memberId < b.memberId ? -1 : 1;
}

/** A sorted copy; also rejects duplicate member ids, which would make any assignment ambiguous. */
export function sortMembers(members: readonly AssignorMember[]): AssignorMember[] {
  const sorted = [...members].sort(compareMembers);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].memberId === sorted[i - 1].memberId) {
      throw new RangeError(`assignor input lists member id "${sorted[i].memberId}" twice`);
    }
  }
  return sorted;
}

/** A map with an empty list for every member, in member order. */
export function emptyAssignment<T>(members: readonly AssignorMember[]): Map<string, T[]> {
  const assignment = new Map<string, T[]>();
  for (const member of members) assignment.set(member.memberId, []);
  return assignment;
}
