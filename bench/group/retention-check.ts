import { performance } from 'node:perf_hooks';
import { INT32_MAX } from '../../src/config';
import { ErrorCode } from '../../src/errors';
import { DEFAULT_GROUP_CONFIG, GroupCoordinator } from '../../src/group';
import type { OffsetRetentionCheckSummary } from '../../src/group';
import { ManualTime } from '../../src/time';
import { RoundSet } from '../support/round-set';

/**
 * The offset retention check's longest event-loop task (docs/protocol.md, "Offset retention"), in-process
 * on a ManualTime: 1,000,000 committed offsets in 10,000 groups that never had members (commits with
 * generation -1), the groups the check must list offset by offset. Each round, on one coordinator:
 *
 * - `first`: a check that finds nothing due, listing every offset for the first time;
 * - `steady`: the next check, which knows from the first when each group's earliest offset can be due;
 * - `expiry`: a check after the retention has passed, removing every offset and every group.
 *
 * The baseline is the first pass on a second coordinator whose per-turn budget exceeds the offsets, so
 * that the pass runs in one task, as it did before it was sliced. A turn's length is the time between two
 * turns of a `setImmediate` chain run beside the check (each gap holds one slice of the check), and the
 * first slice, which runs inside the call that starts the check, is timed around that call. It runs in
 * the bench's own process, with V8's own heap growth: no server program is involved.
 */
export const RETENTION_GROUPS = 10_000;
export const RETENTION_OFFSETS_PER_GROUP = 100;

const RETENTION_MINUTES = 60;
const CONTEXT = { clientHost: '127.0.0.1' };

interface Populated {
  readonly coordinator: GroupCoordinator;
  readonly time: ManualTime;
  /** Told when a check's pass ends. */
  onCompleted: ((summary: OffsetRetentionCheckSummary) => void) | undefined;
}

async function populated(budget: number | undefined): Promise<Populated> {
  const time = new ManualTime();
  // The bench starts each check itself: the coordinator's own timer must not fire while the clock moves.
  const config = {
    ...DEFAULT_GROUP_CONFIG,
    offsetsRetentionMinutes: RETENTION_MINUTES,
    offsetsRetentionCheckIntervalMs: INT32_MAX,
  };
  const coordinator = new GroupCoordinator(config, time, {
    retentionCheckOffsetsPerTurn: budget,
    listener: { onOffsetRetentionCheckCompleted: (summary) => result.onCompleted?.(summary) },
  });
  const result: Populated = { coordinator, time, onCompleted: undefined };
  const partitions = Array.from({ length: RETENTION_OFFSETS_PER_GROUP }, (_, i) => ({
    partitionIndex: i,
    committedOffset: i,
    committedLeaderEpoch: -1,
    committedMetadata: '',
  }));
  for (let g = 0; g < RETENTION_GROUPS; g++) {
    const response = await coordinator.offsetCommit(
      {
        groupId: `retention-${g}`,
        generationId: -1,
        memberId: '',
        groupInstanceId: '',
        topics: [{ name: 'orders', partitions }],
      },
      CONTEXT,
    );
    if (response.topics[0].partitions.some((p) => p.errorCode !== ErrorCode.NONE)) {
      throw new Error(`commit to retention-${g} failed`);
    }
  }
  return result;
}

/** Runs one check to the end of its pass; returns its longest turn in ms and what the check reported. */
async function timedCheck(
  subject: Populated,
): Promise<{ longestTurnMs: number; summary: OffsetRetentionCheckSummary }> {
  let summary: OffsetRetentionCheckSummary | undefined;
  subject.onCompleted = (completed) => (summary = completed);
  let last = performance.now();
  subject.coordinator.onOffsetRetentionCheck();
  let longestTurnMs = performance.now() - last;
  while (summary === undefined) {
    last = performance.now();
    await new Promise<void>((resolve) => setImmediate(resolve));
    longestTurnMs = Math.max(longestTurnMs, performance.now() - last);
  }
  subject.onCompleted = undefined;
  return { longestTurnMs, summary };
}

export async function retentionCheck(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    const sliced = await populated(undefined);
    const first = await timedCheck(sliced);
    const steady = await timedCheck(sliced);
    sliced.time.advance(RETENTION_MINUTES * 60_000);
    const expiry = await timedCheck(sliced);
    if (expiry.summary.groupsExpired !== RETENTION_GROUPS || sliced.coordinator.numGroups !== 0) {
      throw new Error(
        `the expiry pass removed ${expiry.summary.groupsExpired} groups of ${RETENTION_GROUPS}`,
      );
    }
    // The expiry pass removed the first coordinator's offsets: the baseline's are the only ones alive.
    sliced.coordinator.shutdown();

    const whole = await populated(Number.MAX_SAFE_INTEGER);
    const unsliced = await timedCheck(whole);
    whole.coordinator.shutdown();

    set.record('firstLongestTurnMs', first.longestTurnMs);
    set.record('firstTurns', first.summary.turns);
    set.record('steadyLongestTurnMs', steady.longestTurnMs);
    set.record('steadyOffsetsListed', steady.summary.offsetsListed);
    set.record('expiryLongestTurnMs', expiry.longestTurnMs);
    set.record('unslicedTaskMs', unsliced.longestTurnMs);
    log(
      `  round ${r + 1}: longest turn ${first.longestTurnMs.toFixed(2)} ms over ${first.summary.turns} turns ` +
        `(first), ${steady.longestTurnMs.toFixed(2)} ms listing ${steady.summary.offsetsListed} offsets ` +
        `(steady), ${expiry.longestTurnMs.toFixed(2)} ms (expiry); unsliced ${unsliced.longestTurnMs.toFixed(1)} ms`,
    );
  }
  return set;
}
