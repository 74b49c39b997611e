import type { GroupMetadata } from './group-metadata';

/** What an Empty group whose tombstones could not be written comes back with. */
export interface EmptyGroupSnapshot {
  readonly groupId: string;
  readonly protocolType: string | undefined;
  readonly generationId: number;
  readonly currentStateTimestampMs: number;
}

export function emptyGroupSnapshot(group: GroupMetadata): EmptyGroupSnapshot {
  const { groupId, protocolType, generationId, currentStateTimestampMs } = group;
  return { groupId, protocolType, generationId, currentStateTimestampMs };
}
