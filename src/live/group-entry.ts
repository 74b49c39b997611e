import { CONSUMER_PROTOCOL_TYPE, decodeAssignment } from '../protocol/consumer-protocol';
import type { DescribedGroup } from '../protocol/group-messages';
import type { TopicPartition } from '../protocol/topic-partition';
import type {
  BoardGroup,
  BoardGroupRow,
  BoardMember,
  BoardPartitionLag,
  DepartedMember,
  Rebalance,
} from './board-views';

/**
 * What the board knows of one group. Once a view holds its lists (`isShared`), they are never changed in
 * place, only replaced (a new list, or a new rebalance in a list's place): building a view copies nothing,
 * and a view already handed to the pages (and serialised once for all of them, page-stream.ts) never
 * changes under them. Lists no view holds (every group but those pages show) are changed in place.
 *
 * Entries are also links of the board's list of changes (GroupBoard.touch), in the order their rows last
 * changed: `seq` is the board's count of row changes at the entry's latest.
 */
export class GroupEntry {
  /** The node whose changes the entry follows; null while none is known (GroupBoardRow.coordinatorId). */
  coordinatorId: number | null = null;
  members: BoardMember[] = [];
  described!: DescribedGroup;
  reason = 'snapshot';
  changedAtMs = 0;
  rebalances: Rebalance[] = [];
  departed: DepartedMember[] = [];
  partitions: BoardPartitionLag[] = [];
  totalLag: string | null = null;
  /** The partitions' lag as one string, to tell a changed sample from an unchanged one cheaply. */
  lagSignature = '';
  lagSamples: (readonly [number, number])[] = [];
  view: BoardGroup | undefined;
  row: BoardGroupRow | undefined;
  /** A view holds `rebalances`, `departed` and `lagSamples`: change them by replacing them. */
  isShared = false;
  seq = 0;
  older: GroupEntry | undefined;
  newer: GroupEntry | undefined;
}

/** The group's members as the page shows them; assignments decoded for a Stable consumer group. */
export function membersOf(group: DescribedGroup): BoardMember[] {
  const isConsumer = group.protocolType === CONSUMER_PROTOCOL_TYPE;
  return group.members.map((m) => {
    let assignment: TopicPartition[] | null = null;
    if (isConsumer && group.groupState === 'Stable') {
      try {
        assignment = decodeAssignment(m.memberAssignment).partitions;
      } catch {
        // Not the consumer protocol after all (a custom client): the page shows no partitions for it.
      }
    }
    return {
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      assignment,
      lastHeartbeatMs: heartbeatMsOf(m.lastHeartbeatMs),
    };
  });
}

/** A member's last heartbeat as the page shows it: the coordinator's 0 (not known) is null. */
export function heartbeatMsOf(ms: number): number | null {
  return ms === 0 ? null : ms;
}

/** Adds `item` last to `list`, in place, leaving out its oldest items beyond `max`. */
export function pushBounded<T>(list: T[], item: T, max: number): void {
  while (list.length >= max) list.shift();
  list.push(item);
}

/** Before a change of the entry's lists: those a view holds are replaced by copies (GroupEntry). */
export function ownLists(entry: GroupEntry): void {
  if (!entry.isShared) return;
  entry.rebalances = entry.rebalances.slice();
  entry.departed = entry.departed.slice();
  entry.lagSamples = entry.lagSamples.slice();
  entry.isShared = false;
}

/** The entry's row (BoardGroupRow), built once until the row changes (`entry.row` cleared). */
export function rowOf(entry: GroupEntry): BoardGroupRow {
  if (entry.row !== undefined) return entry.row;
  const g = entry.described;
  const last = entry.rebalances[entry.rebalances.length - 1];
  return (entry.row = {
    groupId: g.groupId,
    state: g.groupState,
    generationId: g.generationId,
    protocolType: g.protocolType,
    protocol: g.protocolData,
    memberCount: entry.members.length,
    totalLag: entry.totalLag,
    lastRebalanceMs: last === undefined ? null : (last.endMs ?? last.startMs),
    coordinatorId: entry.coordinatorId,
  });
}

/**
 * The entry's whole view (BoardGroup), built once until the group changes (`entry.view` cleared). The view
 * holds the entry's lists from now on (`isShared`): they are replaced, never changed, while it does.
 */
export function viewOf(entry: GroupEntry): BoardGroup {
  if (entry.view !== undefined) return entry.view;
  const g = entry.described;
  entry.isShared = true;
  return (entry.view = {
    groupId: g.groupId,
    state: g.groupState,
    generationId: g.generationId,
    protocolType: g.protocolType,
    protocol: g.protocolData,
    members: entry.members,
    reason: entry.reason,
    changedAtMs: entry.changedAtMs,
    rebalances: entry.rebalances,
    departed: entry.departed,
    partitions: entry.partitions,
    totalLag: entry.totalLag,
    lagSamples: entry.lagSamples,
    coordinatorId: entry.coordinatorId,
  });
}
