import type { CommittedOffsetsReader } from '../group';
import { topicPartitionKey } from '../log';
import {
  lagPartitions,
  partitionLags,
  type CommittedPartitionOffset,
  type LagMember,
} from '../protocol/partition-lag';
import type { Time } from '../time';
import { ownLists, pushBounded, type GroupEntry } from './group-entry';

/*
 * A group's lag as the page shows it. Lag has no events: the board samples committed offsets (the group
 * layer) and high watermarks (the log) once a round, and pages hear only of the groups whose lag changed.
 */

/** Lag samples each group remembers for its chart (one per change, at most one a second: five minutes+). */
export const BOARD_LAG_SAMPLES = 300;

/** Where the board reads lag: committed offsets (the group layer) and high watermarks (the log). */
export interface BoardLagSources {
  readonly offsets: Pick<CommittedOffsetsReader, 'list'>;
  readonly highWatermark: (topicPartitionKey: string) => number | undefined;
}

/**
 * Samples the group's committed offsets and high watermarks, computed as the CLI computes lag
 * (partition-lag.ts), and keeps a lag sample (at `time.nowMs()`) for the chart. True if the group's lag
 * changed; when it did not, the entry is left as it was.
 */
export function sampleGroupLag(entry: GroupEntry, lag: BoardLagSources, time: Time): boolean {
  const groupId = entry.described.groupId;
  const committed: CommittedPartitionOffset[] = [];
  for (const { topic, partition, offset } of lag.offsets.list(groupId)) {
    committed.push({ topic, partition, offset: BigInt(offset.committedOffset) });
  }
  const members: LagMember[] = entry.members;
  const partitions = lagPartitions(members, committed);
  const highWatermarks = partitions.map((tp) => {
    const hw = lag.highWatermark(topicPartitionKey(tp.topic, tp.partition));
    return hw === undefined ? null : BigInt(hw);
  });
  const rows = partitionLags(partitions, members, committed, highWatermarks);
  let signature = '';
  let total: bigint | null = null;
  for (const r of rows) {
    signature += `${r.topic}\u0000${r.partition}\u0000${r.committedOffset}\u0000${r.highWatermark}\u0001`;
    if (r.lag !== null) total = (total ?? 0n) + r.lag;
  }
  if (signature === entry.lagSignature) return false;
  entry.lagSignature = signature;
  entry.partitions = rows.map((r) => ({
    topic: r.topic,
    partition: r.partition,
    committedOffset: r.committedOffset === null ? null : String(r.committedOffset),
    highWatermark: r.highWatermark === null ? null : String(r.highWatermark),
    lag: r.lag === null ? null : String(r.lag),
    memberId: r.memberId,
  }));
  entry.totalLag = total === null ? null : String(total);
  entry.row = undefined;
  if (total !== null) {
    ownLists(entry);
    pushBounded(entry.lagSamples, [time.nowMs(), Number(total)] as const, BOARD_LAG_SAMPLES);
  }
  entry.view = undefined;
  return true;
}

/** After the members' assignment changed: each partition's owner, from the members (offsets stay as sampled). */
export function relabelOwners(entry: GroupEntry): void {
  if (entry.partitions.length === 0) return;
  const owners = new Map<string, string>();
  for (const m of entry.members) {
    for (const tp of m.assignment ?? []) owners.set(topicPartitionKey(tp.topic, tp.partition), m.memberId);
  }
  entry.partitions = entry.partitions.map((p) => ({
    ...p,
    memberId: owners.get(topicPartitionKey(p.topic, p.partition)) ?? null,
  }));
}
