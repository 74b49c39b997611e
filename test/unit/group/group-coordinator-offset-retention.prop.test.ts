import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import { codesOf, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { GROUP_ID, Tracked } from '../../support/group-harness';

/**
 * A model test of offset retention (KIP-211): one group, one member that joins and leaves, commits inside
 * and outside membership to three partitions, and the clock moving by up to 90 s at a time against a
 * one-minute retention checked every second. A reference model keeps, per partition, the time its
 * retention counts from (its commit while the group never had members; the moment the group emptied once it
 * had), and checks after every step:
 *
 * - an offset whose retention has not run out is still there, with the value last committed;
 * - an offset whose retention ran out more than one check interval ago is gone;
 * - a group with a member keeps every offset; an Empty group with none left is gone by the next check.
 *
 * Between the two bounds (the last interval) either answer is right, and the model takes what it reads.
 *
 * The coordinator runs on the coordinator test context, whose partition keeps up: whatever a call or the
 * clock wrote is committed, and its write ended, before the model reads an answer or the state, and each
 * answer is read synchronously then, so a call left unanswered fails the property instead of hanging it.
 */

const RETENTION_MS = 60_000;
const CHECK_INTERVAL_MS = 1_000;
const SESSION_MS = 600_000;
const PARTITIONS = [0, 1, 2] as const;

type Action =
  | { kind: 'join' }
  | { kind: 'leave' }
  | { kind: 'commit'; partition: number }
  | { kind: 'advance'; ms: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.constant({ kind: 'join' as const }),
  fc.constant({ kind: 'leave' as const }),
  fc.record({ kind: fc.constant('commit' as const), partition: fc.constantFrom(...PARTITIONS) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 90_000 }) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 55_000, max: 65_000 }) }),
);

interface ReferenceOffset {
  value: number;
  /** Wall-clock ms of the commit. */
  committedAtMs: number;
}

/** What the coordinator must hold, as far as the rules decide it. */
class Reference {
  /** Whether the group exists with a protocol type (it had a member since it was last removed). */
  hadMembers = false;
  /** Wall-clock ms the group last became Empty (meaningful when `hadMembers` and no member is in). */
  emptiedAtMs = 0;
  memberId: string | undefined;
  generationId = 0;
  readonly offsets = new Map<number, ReferenceOffset>();

  /** When an offset's retention started counting, or undefined while a member keeps it alive. */
  sinceMs(offset: ReferenceOffset): number | undefined {
    if (this.memberId !== undefined) return undefined;
    return this.hadMembers ? this.emptiedAtMs : offset.committedAtMs;
  }
}

/** The partition commits what has been written; then `call`'s answer must have come (it throws if not). */
async function answered<T>(ctx: CoordinatorTestContext, call: Tracked<T>): Promise<T> {
  await ctx.commitAppends();
  return call.result;
}

async function fetchAll(ctx: CoordinatorTestContext): Promise<Map<number, number>> {
  const response = await ctx.fetch(GROUP_ID, [['t', [...PARTITIONS]]]);
  const found = new Map<number, number>();
  for (const p of response.topics[0]?.partitions ?? []) {
    if (p.committedOffset !== -1) found.set(p.partitionIndex, p.committedOffset);
  }
  return found;
}

describe('offset retention under random traffic', () => {
  test('offsets live exactly as long as the retention rules say, and groups go when nothing is left', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 40 }), async (actions) => {
        const ctx = await CoordinatorTestContext.create(
          {
            groupInitialRebalanceDelayMs: 0,
            offsetsRetentionMinutes: RETENTION_MS / 60_000,
            offsetsRetentionCheckIntervalMs: CHECK_INTERVAL_MS,
          },
          // Every answer in the task that gives it: the model never lets the event loop turn.
          { replySliceSize: Number.MAX_SAFE_INTEGER },
        );
        const ref = new Reference();
        let nextValue = 1;
        try {
          for (const action of actions) {
            switch (action.kind) {
              case 'join': {
                if (ref.memberId !== undefined) break;
                // A JoinGroup without member id gets one (MEMBER_ID_REQUIRED); the rejoin with it completes
                // the join at once, the initial rebalance delay being 0.
                const options = { sessionTimeoutMs: SESSION_MS, rebalanceTimeoutMs: SESSION_MS };
                let join = await answered(ctx, ctx.sendJoin(options));
                if (join.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
                  join = await answered(ctx, ctx.sendJoin({ ...options, memberId: join.memberId }));
                }
                expect(join.errorCode).toBe(ErrorCode.NONE);
                const sync = await answered(
                  ctx,
                  ctx.sendSync({
                    generationId: join.generationId,
                    memberId: join.memberId,
                    assignments: [[join.memberId, Buffer.alloc(0)]],
                  }).answer,
                );
                expect(sync.errorCode).toBe(ErrorCode.NONE);
                ref.memberId = join.memberId;
                ref.generationId = join.generationId;
                ref.hadMembers = true;
                break;
              }
              case 'leave':
                if (ref.memberId === undefined) break;
                expect(
                  (await answered(ctx, new Tracked(ctx.leave([{ memberId: ref.memberId }])))).errorCode,
                ).toBe(ErrorCode.NONE);
                ref.memberId = undefined;
                ref.emptiedAtMs = ctx.time.nowMs();
                break;
              case 'commit': {
                const value = nextValue++;
                const call = ctx.commitOffsets(
                  {
                    memberId: ref.memberId ?? '',
                    generationId: ref.memberId === undefined ? -1 : ref.generationId,
                  },
                  [{ topic: 't', partition: action.partition, offset: value }],
                );
                const codes = codesOf(await answered(ctx, call.answer));
                expect(codes.get(`t-${action.partition}`)).toBe(ErrorCode.NONE);
                ref.offsets.set(action.partition, { value, committedAtMs: ctx.time.nowMs() });
                break;
              }
              case 'advance':
                // One heartbeat per step keeps the member: steps are far shorter than its session. The
                // checks run inside the advance; once their tombstones are committed, what they expired is
                // gone for readers.
                ctx.time.advance(action.ms);
                await ctx.commitAppends();
                if (ref.memberId !== undefined) {
                  expect(await ctx.heartbeat(ref.memberId, ref.generationId)).toBe(ErrorCode.NONE);
                }
                break;
            }

            const nowMs = ctx.time.nowMs();
            const actual = await fetchAll(ctx);
            for (const [partition, offset] of [...ref.offsets]) {
              const sinceMs = ref.sinceMs(offset);
              // Due once its retention ran out; gone once a check has run since then, and since its commit
              // (a check at the very millisecond of the commit ran before it). Checks come every interval.
              const dueMs =
                sinceMs === undefined
                  ? Number.POSITIVE_INFINITY
                  : Math.max(sinceMs + RETENTION_MS, offset.committedAtMs + 1);
              if (sinceMs === undefined || nowMs < sinceMs + RETENTION_MS) {
                expect([partition, actual.get(partition)]).toEqual([partition, offset.value]);
              } else if (nowMs >= dueMs + CHECK_INTERVAL_MS) {
                expect([partition, actual.has(partition)]).toEqual([partition, false]);
                ref.offsets.delete(partition);
              } else if (!actual.has(partition)) {
                ref.offsets.delete(partition);
              }
            }
            // Nothing the reference does not know of.
            for (const partition of actual.keys()) expect(ref.offsets.has(partition)).toBe(true);

            const described = await ctx.describe();
            if (ref.memberId !== undefined) {
              expect(described.groupState).toBe('Stable');
            } else if (described.errorCode === ErrorCode.GROUP_ID_NOT_FOUND) {
              // Removed: only an Empty group with nothing left goes, and it forgets it had members.
              expect(ref.offsets.size).toBe(0);
              ref.hadMembers = false;
            } else {
              expect(described.groupState).toBe('Empty');
              // An Empty group with nothing left (its member left without a commit that is still there)
              // is gone at the next check at the latest.
              if (ref.offsets.size === 0) {
                expect(ref.hadMembers).toBe(true);
                expect(nowMs - ref.emptiedAtMs).toBeLessThan(CHECK_INTERVAL_MS);
              }
            }
          }
        } finally {
          ctx.shutdown();
        }
      }),
      { numRuns: 300 },
    );
  });
});
