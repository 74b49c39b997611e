import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { LEADER_EPOCH_CHECKPOINT_FILE, PartitionLog, type LogRecord } from '../../../../src/log/storage';
import { ErrorCode } from '../../../../src/errors';
import { ManualTime } from '../../../../src/time';
import { text } from './log-fixture';
import { makeTempDir, removeTempDir } from './temp-dir';

/**
 * The leader-epoch cache of a real log against a model: the log as a list of batches (base, last, epoch)
 * and the cache as the rule "an entry for each batch whose epoch is above every epoch before it". Leader
 * appends (refused below the latest epoch), follower appends, truncations, syncs (which let the file and
 * the recovery checkpoint be written in the background), restarts, restarts without the checkpoint file
 * (the rebuild) and crashes (the directory as it is on disk at that moment, whatever writes are under way)
 * run in any order; after each, the cache, the log end and every endOffsetFor answer must match the model.
 */
type Op =
  | { readonly kind: 'leader'; readonly epoch: number; readonly count: number }
  | { readonly kind: 'follower'; readonly records: readonly { gap: number; epoch: number }[] }
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'truncateFully'; readonly ahead: number }
  | { readonly kind: 'reopen'; readonly isFileLost: boolean }
  | { readonly kind: 'sync' }
  | { readonly kind: 'crash' };

const epoch = fc.integer({ min: -1, max: 6 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('leader' as const),
      epoch,
      count: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('follower' as const),
      records: fc.array(fc.record({ gap: fc.integer({ min: 0, max: 2 }), epoch }), {
        minLength: 1,
        maxLength: 5,
      }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('truncate' as const),
      at: fc.nat(1_000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('truncateFully' as const),
      ahead: fc.integer({ min: 0, max: 5 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reopen' as const), isFileLost: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sync' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('crash' as const) }) },
);

interface Batch {
  base: number;
  last: number;
  readonly epoch: number;
}

class Model {
  batches: Batch[] = [];
  start = 0;
  end = 0;

  /** The entries the cache must hold: each batch whose epoch is above every epoch before it. */
  entries(): [number, number][] {
    const entries: [number, number][] = [];
    for (const batch of this.batches) {
      if (batch.epoch >= 0 && batch.epoch > (entries.at(-1)?.[0] ?? -1))
        entries.push([batch.epoch, batch.base]);
    }
    return entries;
  }

  latestEpoch(): number {
    return this.entries().at(-1)?.[0] ?? -1;
  }

  endOffsetFor(requested: number): [number, number] {
    const entries = this.entries();
    const latest = entries.at(-1);
    if (requested === -1 || latest === undefined) return [-1, -1];
    if (requested === latest[0]) return [requested, this.end];
    const floor = entries.filter(([e]) => e <= requested).at(-1);
    const next = entries.find(([e]) => e > requested);
    return floor === undefined || next === undefined ? [-1, -1] : [floor[0], next[1]];
  }

  truncateTo(offset: number): void {
    if (offset >= this.end) return;
    if (offset <= this.start) return this.truncateFully(offset);
    this.batches = this.batches.filter((batch) => batch.base < offset);
    const last = this.batches.at(-1);
    if (last !== undefined) last.last = Math.min(last.last, offset - 1);
    this.end = last === undefined ? this.start : last.last + 1;
  }

  truncateFully(offset: number): void {
    this.batches = [];
    this.start = this.end = offset;
  }
}

describe('LeaderEpochCache against a model', () => {
  test('entries, log end and endOffsetFor match the model through appends, truncations and restarts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
        const root = makeTempDir();
        let dir = path.join(root, 'topic-0');
        let crashes = 0;
        const time = new ManualTime();
        // Small segments: syncs then cover sealed segments, which writes recovery checkpoints.
        const open = (): PartitionLog =>
          PartitionLog.open(dir, { time, config: { flushMessages: 1_000_000, segmentBytes: 300 } });
        let log = open();
        const model = new Model();
        try {
          for (const step of ops) {
            switch (step.kind) {
              case 'leader': {
                if (step.epoch < model.latestEpoch()) {
                  expect(() => log.append([{ value: text('x') }], false, step.epoch)).toThrow(
                    expect.objectContaining({ code: ErrorCode.FENCED_LEADER_EPOCH }),
                  );
                  break;
                }
                log.append(
                  Array.from({ length: step.count }, () => ({ value: text('x') })),
                  false,
                  step.epoch,
                );
                model.batches.push({ base: model.end, last: model.end + step.count - 1, epoch: step.epoch });
                model.end += step.count;
                break;
              }
              case 'follower': {
                let offset = model.end - 1;
                // A follower that truncated first: epochs never below the latest, and records without one (-1,
                // from a leader's magic-1 batches) only before any epoch, as a real leader's log holds them.
                let latest = model.latestEpoch();
                const records: LogRecord[] = step.records.map(({ gap, epoch: generated }) => {
                  const leaderEpoch = generated < 0 && latest < 0 ? -1 : Math.max(generated, latest, 0);
                  latest = Math.max(latest, leaderEpoch);
                  offset += 1 + gap;
                  return { offset, timestampMs: 1, key: null, value: text('y'), headers: [], leaderEpoch };
                });
                log.appendAsFollower(records);
                for (const record of records) {
                  const last = model.batches.at(-1);
                  if (
                    last !== undefined &&
                    last.epoch === record.leaderEpoch &&
                    last.last >= records[0]!.offset
                  ) {
                    last.last = record.offset;
                  } else {
                    model.batches.push({
                      base: record.offset,
                      last: record.offset,
                      epoch: record.leaderEpoch,
                    });
                  }
                }
                model.end = offset + 1;
                break;
              }
              case 'truncate': {
                const offset = model.start + (step.at % (model.end - model.start + 1));
                log.truncateTo(offset);
                model.truncateTo(offset);
                break;
              }
              case 'truncateFully': {
                log.truncateFullyAndStartAt(model.end + step.ahead);
                model.truncateFully(model.end + step.ahead);
                break;
              }
              case 'reopen': {
                await log.close();
                if (step.isFileLost) fs.rmSync(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE), { force: true });
                log = open();
                break;
              }
              case 'sync': {
                if (model.end > model.start) await log.flush();
                for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
                break;
              }
              case 'crash': {
                // What a process crash leaves: the files as they are now (page cache included).
                const copy = path.join(root, `crash-${++crashes}`);
                fs.cpSync(dir, copy, { recursive: true });
                await log.close();
                dir = copy;
                log = open();
                break;
              }
            }
            expect(log.logEndOffset).toBe(model.end);
            expect(log.epochEntries().map((e) => [e.epoch, e.startOffset])).toEqual(model.entries());
            for (let requested = -1; requested <= 7; requested++) {
              const { leaderEpoch, endOffset } = log.endOffsetFor(requested);
              expect([leaderEpoch, endOffset]).toEqual(model.endOffsetFor(requested));
            }
          }
          if (model.end > model.start) {
            const read = log.read(model.start, Number.MAX_SAFE_INTEGER);
            expect(read.batches.map((b) => [b.baseOffset, b.lastOffset, b.partitionLeaderEpoch])).toEqual(
              model.batches.map((b) => [b.base, b.last, b.epoch]),
            );
          }
        } finally {
          await log.close();
          removeTempDir(root);
        }
      }),
      { numRuns: 60 },
    );
  });
});
