import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONSUMER_PROTOCOL_TYPE } from '../../src/client';
import {
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  type MemberMetadataValue,
} from '../../src/group/records/consumer-offsets-record';
import { CONSUMER_OFFSETS_LOG_CONFIG } from '../../src/log/consumer-offsets';
import { PartitionLog, type SimpleRecord } from '../../src/log/storage';
import { SYSTEM_TIME } from '../../src/time';

/**
 * A `__consumer_offsets` partition full of groups, written with cohort's own storage code and encoders as
 * the coordinator writes it, for what loads one (bench:cluster's load section, the readiness test): per
 * group one OffsetCommit batch of `partitionsPerGroup` partitions of `topic`, then the group's metadata
 * record, a Stable `consumer` group of `membersPerGroup` members (generation, protocol, leader, each
 * member's subscription and assignment). Every value follows from the group's number, so a reader can
 * check what came back.
 */
export interface StoredGroupsLayout {
  readonly groups: number;
  readonly partitionsPerGroup: number;
  readonly membersPerGroup: number;
  readonly topic: string;
}

export const storedGroupIdOf = (group: number): string => `load-group-${String(group).padStart(4, '0')}`;
export const storedOffsetOf = (group: number, partition: number): number => group * 1_000 + partition;
export const storedGenerationOf = (group: number): number => 1 + (group % 5);
export const storedMemberIdOf = (group: number, member: number): string =>
  `consumer-${group}-${member}-00000000-0000-4000-8000-${String(group * 100 + member).padStart(12, '0')}`;

/** Writes the partition into `dir` (`<data dir>/__consumer_offsets-0`); returns its log's size in bytes. */
export async function writeStoredGroupsPartition(dir: string, layout: StoredGroupsLayout): Promise<number> {
  const log = PartitionLog.open(dir, {
    time: SYSTEM_TIME,
    config: { ...CONSUMER_OFFSETS_LOG_CONFIG, flushMessages: Number.MAX_SAFE_INTEGER },
  });
  try {
    const commits = new Array<SimpleRecord>(layout.partitionsPerGroup);
    for (let group = 0; group < layout.groups; group++) {
      const groupId = storedGroupIdOf(group);
      const nowMs = SYSTEM_TIME.nowMs();
      for (let partition = 0; partition < layout.partitionsPerGroup; partition++) {
        commits[partition] = {
          timestampMs: nowMs,
          key: encodeOffsetCommitKey(groupId, layout.topic, partition),
          value: encodeOffsetCommitValue({
            committedOffset: storedOffsetOf(group, partition),
            committedLeaderEpoch: -1,
            metadata: '',
            commitTimestampMs: nowMs,
          }),
        };
      }
      log.append(commits);
      const members: MemberMetadataValue[] = Array.from({ length: layout.membersPerGroup }, (_, m) => ({
        memberId: storedMemberIdOf(group, m),
        groupInstanceId: '',
        clientId: `client-${m}`,
        clientHost: '/127.0.0.1',
        rebalanceTimeoutMs: 60_000,
        sessionTimeoutMs: 45_000,
        protocols: [{ name: 'range', metadata: Buffer.alloc(32, m) }],
        assignment: Buffer.alloc(64, m),
      }));
      log.append([
        {
          timestampMs: nowMs,
          key: encodeGroupMetadataKey(groupId),
          value: encodeGroupMetadataValue({
            protocolType: CONSUMER_PROTOCOL_TYPE,
            generationId: storedGenerationOf(group),
            protocolName: 'range',
            leaderId: storedMemberIdOf(group, 0),
            currentStateTimestampMs: nowMs,
            members,
          }),
        },
      ]);
    }
  } finally {
    await log.close();
  }
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}
