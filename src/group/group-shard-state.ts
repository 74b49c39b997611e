import type { ErrorCode } from '../errors';
import type { Time } from '../time';
import type { CoordinatorResult } from './coordinator-result';
import type { EmptyGroupSnapshot } from './empty-group-snapshot';
import type { GroupConfig } from './group-config';
import type { GroupMetadata } from './group-metadata';
import type { MemberMetadata } from './member-metadata';
import type { CallCancellation } from './parked-call';
import type { CoordinatorRecord } from './records/coordinator-record';

/**
 * How one handler's result ends once the runtime has written its records (`scheduleWriteOperation`):
 * `onCommitted` finishes the change once they are committed (the shard has replayed them into the state
 * readers see by then); `onFailed` reverts the handler's change and gives the response for the code the
 * client gets (`cause`: what the append was rejected with, for reporting). When the shard was unloaded
 * first, `onFailed` gets the unload's code and no cause, and the shard is no longer active: there is
 * nothing to revert for a successor that replays the log.
 */
export interface WriteOperation<Response> {
  onCommitted(): void;
  onFailed(errorCode: ErrorCode, cause: unknown): Response;
}

/**
 * How a group's metadata record ends (`writeGroupRecord`): committed, or failed with the code the group's
 * members get (and the append's error). Neither runs after the shard was unloaded: the unload answered
 * every call parked on the group, and `onUnloaded` tells a caller that waits on the write itself (a
 * LeaveGroup that emptied the group) the unload's code.
 */
export interface GroupRecordWrite {
  onCommitted(): void;
  onFailed(errorCode: ErrorCode, cause: unknown): void;
  onUnloaded?(errorCode: ErrorCode): void;
}

/**
 * The state of one coordinator shard as its request families (GroupMembership, GroupOffsets) work on it:
 * the partition's groups and load state, and the few operations on them the families share (the committed
 * offsets are GroupOffsets' own).
 * GroupCoordinatorShard implements it and builds the families over it, so the imports point one way:
 * shard → families → this declaration. The members are documented where the shard implements them.
 */
export interface GroupShardState {
  readonly config: GroupConfig;
  readonly time: Time;
  readonly groups: Map<string, GroupMetadata>;
  readonly isActive: boolean;
  readonly availability: ErrorCode;
  scheduleWriteOperation<Response>(
    result: CoordinatorResult<Response, CoordinatorRecord>,
    operation: WriteOperation<Response>,
    caller: CallCancellation | undefined,
    abortedResponse: Response | undefined,
  ): Promise<Response>;
  scheduleInternalWriteOperation(
    records: readonly CoordinatorRecord[],
    operation: WriteOperation<void>,
  ): void;
  createGroup(groupId: string): GroupMetadata;
  bringBackEmptyGroup(removed: EmptyGroupSnapshot): void;
  deleteGroup(group: GroupMetadata): void;
  writeGroupRecord(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
    operation: GroupRecordWrite,
  ): void;
  validateCurrentMember(group: GroupMetadata, memberId: string, groupInstanceId: string): ErrorCode;
  fenced(groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode): ErrorCode;
  scheduleSessionTimeout(member: MemberMetadata): void;
  keepAlive(member: MemberMetadata): void;
}
