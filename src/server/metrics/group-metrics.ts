import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ErrorCode } from '../../errors';
import type { GroupCoordinatorListener, GroupState, GroupStats, RebalanceReason } from '../../group';
import { GROUP_STATES, REBALANCE_REASONS } from '../../group';
import type { Time } from '../../time';

/** Upper bounds of a rebalance's duration, in seconds: a group of one with no delay to a slow 10-minute one. */
export const REBALANCE_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
]);

/** What the group metrics read on scrape: the real GroupCoordinator has it. */
export interface GroupStatsSource {
  groupStats(): GroupStats;
}

/** A rebalance is over when the group settles: Stable with a new generation, or Empty with nobody left. */
const SETTLED: ReadonlySet<GroupState> = new Set<GroupState>(['Stable', 'Empty']);

/**
 * The group coordinator's metrics. Counters move in the coordinator's listener hooks, which run only on
 * rebalances, expiries and fenced requests (never on a successful heartbeat); groups and members by state
 * are counted from the coordinator when the registry is scraped.
 *
 * Rebalance durations are measured on the server's `Time` (under --manual-clock, the time a test advanced),
 * from the moment a settled group (Stable or Empty) enters PreparingRebalance to the moment it settles
 * again; a rebalance restarted on the way (a member joined while the group was completing) is one duration
 * but two counts in `cohort_rebalances_total`, one per reason.
 */
export class GroupMetrics {
  readonly listener: GroupCoordinatorListener;
  private readonly rebalanceStartMs = new Map<string, number>();

  constructor(registry: Registry, time: Time, source: () => GroupStatsSource | undefined) {
    const registers = [registry];
    const rebalances = new Counter({
      name: 'cohort_rebalances_total',
      help: 'Rebalances started (a group entering PreparingRebalance), by reason.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of REBALANCE_REASONS) rebalances.inc({ reason }, 0);
    const durations = new Histogram({
      name: 'cohort_rebalance_duration_seconds',
      help: 'From a settled group (Stable or Empty) entering PreparingRebalance until it settles again.',
      buckets: [...REBALANCE_BUCKETS_SECONDS],
      registers,
    });
    const expirations = new Counter({
      name: 'cohort_session_expirations_total',
      help: 'Members removed because their session timed out (or their first join never completed).',
      registers,
    });
    const expiredOffsets = new Counter({
      name: 'cohort_offsets_expired_total',
      help: 'Committed offsets removed by offset retention (offsets.retention.minutes).',
      registers,
    });
    const expiredGroups = new Counter({
      name: 'cohort_groups_expired_total',
      help: 'Empty groups removed by offset retention once they had no offsets left.',
      registers,
    });
    const fenced = new Counter({
      name: 'cohort_fenced_requests_total',
      help: 'Requests refused as they arrived with FENCED_INSTANCE_ID or ILLEGAL_GENERATION, by code.',
      labelNames: ['code'],
      registers,
    });
    for (const code of ['FENCED_INSTANCE_ID', 'ILLEGAL_GENERATION']) fenced.inc({ code }, 0);
    const refusedCommits = new Counter({
      name: 'cohort_offset_commits_refused_total',
      help:
        'OffsetCommit partitions refused one by one, by code: INVALID_COMMIT_OFFSET_SIZE past ' +
        'groupMaxCommittedPartitions, UNKNOWN_TOPIC_OR_PARTITION (a negative partition), ' +
        'INVALID_TOPIC_EXCEPTION, OFFSET_METADATA_TOO_LARGE.',
      labelNames: ['code'],
      registers,
    });
    for (const code of [
      'INVALID_COMMIT_OFFSET_SIZE',
      'UNKNOWN_TOPIC_OR_PARTITION',
      'INVALID_TOPIC_EXCEPTION',
      'OFFSET_METADATA_TOO_LARGE',
    ]) {
      refusedCommits.inc({ code }, 0);
    }
    const byState = (name: string, help: string, pick: 'groups' | 'members'): void => {
      new Gauge({
        name,
        help,
        labelNames: ['state'],
        registers,
        collect() {
          const stats = source()?.groupStats();
          this.reset();
          if (stats === undefined) return;
          for (const state of GROUP_STATES) this.set({ state }, stats[state][pick]);
        },
      });
    };
    byState('cohort_groups', 'Groups the coordinator holds, by state.', 'groups');
    byState('cohort_group_members', 'Members of the groups in each state.', 'members');

    const starts = this.rebalanceStartMs;
    this.listener = {
      onPrepareRebalance: (groupId: string, _generationId: number, reason: RebalanceReason) => {
        rebalances.inc({ reason });
        if (!starts.has(groupId)) starts.set(groupId, time.monotonicMs());
      },
      onStateChange: (groupId: string, _previous: GroupState, next: GroupState) => {
        if (next === 'Dead') {
          starts.delete(groupId);
          return;
        }
        if (!SETTLED.has(next)) return;
        const startMs = starts.get(groupId);
        if (startMs === undefined) return;
        starts.delete(groupId);
        durations.observe(Math.max(0, time.monotonicMs() - startMs) / 1_000);
      },
      onMemberExpired: () => expirations.inc(),
      onOffsetsExpired: (_groupId: string, partitions: number, isGroupRemoved: boolean) => {
        expiredOffsets.inc(partitions);
        if (isGroupRemoved) expiredGroups.inc();
      },
      onFenced: (_groupId: string, _memberId: string, _instanceId: string, errorCode: ErrorCode) =>
        fenced.inc({ code: ErrorCode[errorCode] }),
      onOffsetCommitRefused: (_groupId: string, errorCode: ErrorCode, partitions: number) =>
        refusedCommits.inc({ code: ErrorCode[errorCode] }, partitions),
    };
  }

  /** Groups in the middle of a rebalance whose start is remembered (bounded by the number of groups). */
  get rebalancesInProgress(): number {
    return this.rebalanceStartMs.size;
  }
}
