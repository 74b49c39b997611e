import type { GroupHistoryEvent, GroupHistorySnapshot } from './group-history';

/**
 * The invariants group coordination owes its members across coordinator moves, checked over a recorded
 * history (group-history.ts) after the run:
 *
 * - `well-formed`: each operation invoked once and completed once; commit offsets unique (the workload's
 *   counter); one final offset per (group, partition).
 * - `acknowledged-commit-lost`: for each (group, partition), the final offset is not one that an
 *   acknowledged commit superseded. A commit B supersedes A when B was sent after A completed (real-time
 *   order; the workload's counter then gives B the larger offset); concurrent commits may land in either
 *   order, and a commit of unknown outcome may take effect at any time. No final offset at all, after an
 *   acknowledged commit, is a loss too.
 * - `read-lost-commit`: an OffsetFetch never returns an offset superseded by a commit acknowledged before
 *   the read was sent, nor -1 after one.
 * - `read-vanished`: once a read returned an offset, a read sent after it answered never returns one that
 *   the first superseded (or -1): what was read stays.
 * - `failed-commit-visible`: an offset whose commit certainly failed is never read nor final;
 *   `phantom-offset`: nothing read or final was committed by nobody.
 * - `one-assignment-per-generation`: a member is handed one assignment per generation, and the members
 *   of one generation are handed disjoint partitions.
 */
export const GROUP_CHECK_NAMES = [
  'well-formed',
  'acknowledged-commit-lost',
  'read-lost-commit',
  'read-vanished',
  'failed-commit-visible',
  'phantom-offset',
  'one-assignment-per-generation',
] as const;
export type GroupCheckName = (typeof GROUP_CHECK_NAMES)[number];

export interface GroupCheckResult {
  readonly name: GroupCheckName;
  readonly violations: readonly string[];
}

export interface GroupHistoryVerdict {
  readonly isValid: boolean;
  readonly checks: readonly GroupCheckResult[];
  readonly stats: {
    readonly commits: number;
    readonly acknowledgedCommits: number;
    readonly failedCommits: number;
    readonly unknownCommits: number;
    readonly reads: number;
    readonly assignments: number;
    readonly generations: number;
  };
}

/** One commit with its outcome and the indexes of its two events. */
interface Commit {
  readonly key: string;
  readonly offset: number;
  readonly invokeIndex: number;
  /** Infinity while unknown (`info`): it may take effect at any time. */
  readonly completeIndex: number;
  readonly outcome: 'ok' | 'fail' | 'info';
}

interface Read {
  readonly key: string;
  readonly offset: number;
  readonly invokeIndex: number;
  readonly completeIndex: number;
  readonly process: string;
}

const keyOf = (e: { groupId: string; topic: string; partition: number }): string =>
  `${e.groupId}/${e.topic}-${e.partition}`;

export function checkGroupHistory(history: GroupHistorySnapshot): GroupHistoryVerdict {
  const violations = new Map<GroupCheckName, string[]>(GROUP_CHECK_NAMES.map((name) => [name, []]));
  const report = (name: GroupCheckName, message: string): void => void violations.get(name)!.push(message);

  // Pair each operation's invoke with its completion.
  const invokes = new Map<number, GroupHistoryEvent>();
  const commits: Commit[] = [];
  const reads: Read[] = [];
  const commitByOffset = new Map<number, Commit>();
  for (const event of history.events) {
    if (event.type === 'invoke') {
      if (invokes.has(event.opId)) report('well-formed', `operation ${event.opId} invoked twice`);
      invokes.set(event.opId, event);
      continue;
    }
    const invoked = invokes.get(event.opId);
    if (invoked === undefined) {
      report('well-formed', `operation ${event.opId} completed without an invoke`);
      continue;
    }
    invokes.delete(event.opId);
    const key = keyOf(event);
    if (event.f === 'commit') {
      const commit: Commit = {
        key,
        offset: event.offset,
        invokeIndex: invoked.index,
        completeIndex: event.type === 'info' ? Infinity : event.index,
        outcome: event.type,
      };
      if (commitByOffset.has(event.offset)) report('well-formed', `offset ${event.offset} committed twice`);
      commitByOffset.set(event.offset, commit);
      commits.push(commit);
    } else if (event.type === 'ok') {
      reads.push({
        key,
        offset: event.offset,
        invokeIndex: invoked.index,
        completeIndex: event.index,
        process: event.process,
      });
    }
  }
  for (const opId of invokes.keys()) report('well-formed', `operation ${opId} never completed`);

  /** The commit behind an offset some read or final value shows, if it is a legitimate one. */
  const origin = (key: string, offset: number, where: string): Commit | null | undefined => {
    if (offset === -1) return null;
    const commit = commitByOffset.get(offset);
    if (commit === undefined || commit.key !== key) {
      report('phantom-offset', `${where}: ${key} shows ${offset}, which nobody committed there`);
      return undefined;
    }
    if (commit.outcome === 'fail') {
      report('failed-commit-visible', `${where}: ${key} shows ${offset}, whose commit failed`);
      return undefined;
    }
    return commit;
  };
  const acknowledged = new Map<string, Commit[]>();
  for (const commit of commits) {
    if (commit.outcome !== 'ok') continue;
    let list = acknowledged.get(commit.key);
    if (list === undefined) acknowledged.set(commit.key, (list = []));
    list.push(commit);
  }
  /**
   * An acknowledged commit that supersedes `shown` (a value's commit, or none) and was acknowledged
   * before `beforeIndex` (the moment the observer started looking): sent after `shown` completed.
   */
  const supersededBy = (key: string, shown: Commit | null, beforeIndex: number): Commit | undefined =>
    acknowledged
      .get(key)
      ?.find(
        (c) =>
          c !== shown &&
          c.completeIndex < beforeIndex &&
          (shown === null || shown.completeIndex < c.invokeIndex),
      );

  // Final offsets.
  const finals = new Map<string, number>();
  for (const final of history.final) {
    const key = keyOf(final);
    if (finals.has(key)) report('well-formed', `two final offsets for ${key}`);
    finals.set(key, final.offset);
  }
  for (const key of acknowledged.keys()) {
    const offset = finals.get(key) ?? -1;
    const shown = origin(key, offset, 'final');
    if (shown === undefined) continue;
    const lost = supersededBy(key, shown, Infinity);
    if (lost !== undefined) {
      report(
        'acknowledged-commit-lost',
        `${key}: acknowledged commit ${lost.offset} is gone; the final offset is ${offset}`,
      );
    }
  }
  for (const [key, offset] of finals) if (!acknowledged.has(key)) origin(key, offset, 'final');

  // Reads.
  const readsByKey = new Map<string, Read[]>();
  for (const read of reads) {
    const shown = origin(read.key, read.offset, `read by ${read.process}`);
    if (shown !== undefined) {
      const lost = supersededBy(read.key, shown, read.invokeIndex);
      if (lost !== undefined) {
        report(
          'read-lost-commit',
          `${read.key}: ${read.process} read ${read.offset} after commit ${lost.offset} was acknowledged`,
        );
      }
    }
    let list = readsByKey.get(read.key);
    if (list === undefined) readsByKey.set(read.key, (list = []));
    list.push(read);
  }
  for (const list of readsByKey.values()) {
    for (const earlier of list) {
      const earlierCommit = commitByOffset.get(earlier.offset);
      if (earlier.offset === -1 || earlierCommit === undefined) continue;
      for (const later of list) {
        if (later.invokeIndex <= earlier.completeIndex) continue;
        const laterCommit = later.offset === -1 ? null : commitByOffset.get(later.offset);
        if (laterCommit === undefined) continue;
        const isOlder = laterCommit === null || laterCommit.completeIndex < earlierCommit.invokeIndex;
        if (isOlder) {
          report(
            'read-vanished',
            `${earlier.key}: read ${earlier.offset}, then a later read got ${later.offset}`,
          );
        }
      }
    }
  }

  // Assignments.
  const byMember = new Map<string, string>();
  const byGeneration = new Map<string, Map<string, string>>();
  for (const seen of history.assignments) {
    const canonical = [...seen.partitions].sort().join(',');
    const memberKey = `${seen.groupId}/${seen.generationId}/${seen.memberId}`;
    const previous = byMember.get(memberKey);
    if (previous !== undefined && previous !== canonical) {
      report(
        'one-assignment-per-generation',
        `${memberKey}: handed [${previous}] and then [${canonical}] for one generation`,
      );
    }
    byMember.set(memberKey, canonical);
    const generationKey = `${seen.groupId}/${seen.generationId}`;
    let owners = byGeneration.get(generationKey);
    if (owners === undefined) byGeneration.set(generationKey, (owners = new Map()));
    for (const partition of seen.partitions) {
      const owner = owners.get(partition);
      if (owner !== undefined && owner !== seen.memberId) {
        report(
          'one-assignment-per-generation',
          `${generationKey}: ${partition} handed to ${owner} and to ${seen.memberId}`,
        );
      }
      owners.set(partition, seen.memberId);
    }
  }

  const checks = GROUP_CHECK_NAMES.map((name) => ({ name, violations: violations.get(name)! }));
  return {
    isValid: checks.every((check) => check.violations.length === 0),
    checks,
    stats: {
      commits: commits.length,
      acknowledgedCommits: commits.filter((c) => c.outcome === 'ok').length,
      failedCommits: commits.filter((c) => c.outcome === 'fail').length,
      unknownCommits: commits.filter((c) => c.outcome === 'info').length,
      reads: reads.length,
      assignments: history.assignments.length,
      generations: byGeneration.size,
    },
  };
}

/** The violations of a verdict, one per line, for a failing test's message. */
export function describeGroupViolations(verdict: GroupHistoryVerdict): string {
  return verdict.checks
    .filter((check) => check.violations.length > 0)
    .map((check) => `${check.name}:\n  ${check.violations.slice(0, 20).join('\n  ')}`)
    .join('\n');
}
