import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../src/errors';
import type { OffsetCommitResponse } from '../../../src/group/group-protocol';
import { codesOf, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { GROUP_ID } from '../../support/group-harness';

/**
 * A model test of OffsetCommit as a write of the shard's runtime, on the coordinator test context: commits
 * outside any membership to three partitions, each written as the call is made; the test commits the
 * oldest appends, fails the oldest, or a commit refused whole (metadata too large) comes in between. After
 * every step, against a reference that applies a commit's offsets only once its append is committed:
 *
 * - OffsetFetch shows exactly the committed offsets (nothing written and not committed, nothing failed);
 * - with require_stable, a partition with a commit in flight is UNSTABLE_OFFSET_COMMIT, any other shows its
 *   committed offset;
 * - every commit whose append ended is answered: NONE once committed, Kafka's conversion of the failure
 *   (NOT_ENOUGH_REPLICAS → COORDINATOR_NOT_AVAILABLE) once failed; none is answered before.
 */

const PARTITIONS = [0, 1, 2] as const;

type Action =
  | { kind: 'commit'; partition: number }
  | { kind: 'release'; count: number }
  | { kind: 'fail' }
  | { kind: 'refused'; partition: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('commit' as const), partition: fc.constantFrom(...PARTITIONS) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('release' as const), count: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'fail' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('refused' as const),
      partition: fc.constantFrom(...PARTITIONS),
    }),
  },
);

interface InFlight {
  readonly partition: number;
  readonly offset: number;
  readonly answer: { readonly promise: Promise<OffsetCommitResponse>; readonly isSettled: boolean };
}

describe('OffsetCommit written through the runtime, under random commits, releases and failures', () => {
  test('readers see committed offsets only, require_stable sees what is in flight, every ended write is answered', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 40 }), async (actions) => {
        const ctx = await CoordinatorTestContext.create({ offsetMetadataMaxBytes: 4 });
        const committed = new Map<number, number>();
        const inFlight: InFlight[] = [];
        let nextOffset = 1;
        try {
          for (const action of actions) {
            switch (action.kind) {
              case 'commit': {
                const offset = nextOffset++;
                const call = ctx.commitOffsets({ memberId: '', generationId: -1 }, [
                  { topic: 't', partition: action.partition, offset },
                ]);
                expect(call.records).toHaveLength(1);
                inFlight.push({ partition: action.partition, offset, answer: call.answer });
                break;
              }
              case 'refused': {
                // Written nothing, answered at once; whatever is in flight stays in flight.
                const call = ctx.commitOffsets({ memberId: '', generationId: -1 }, [
                  { topic: 't', partition: action.partition, offset: nextOffset++, metadata: 'fives' },
                ]);
                expect(call.records).toEqual([]);
                expect(codesOf(await call.answer.promise).get(`t-${action.partition}`)).toBe(
                  ErrorCode.OFFSET_METADATA_TOO_LARGE,
                );
                break;
              }
              case 'release': {
                const released = inFlight.splice(0, Math.min(action.count, inFlight.length));
                ctx.commit(released.length);
                for (const write of released) {
                  expect(codesOf(await write.answer.promise).get(`t-${write.partition}`)).toBe(
                    ErrorCode.NONE,
                  );
                  committed.set(write.partition, write.offset);
                }
                break;
              }
              case 'fail': {
                const failed = inFlight.shift();
                if (failed === undefined) break;
                ctx.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS));
                expect(codesOf(await failed.answer.promise).get(`t-${failed.partition}`)).toBe(
                  ErrorCode.COORDINATOR_NOT_AVAILABLE,
                );
                break;
              }
            }

            for (const write of inFlight) expect(write.answer.isSettled).toBe(false);
            const read = await ctx.fetch(GROUP_ID, [['t', [...PARTITIONS]]], false);
            expect(read.topics[0]!.partitions.map((p) => [p.partitionIndex, p.committedOffset])).toEqual(
              PARTITIONS.map((p) => [p, committed.get(p) ?? -1]),
            );
            const stable = await ctx.fetch(GROUP_ID, [['t', [...PARTITIONS]]], true);
            const pending = new Set(inFlight.map((write) => write.partition));
            expect(
              stable.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.committedOffset]),
            ).toEqual(
              PARTITIONS.map((p) =>
                pending.has(p)
                  ? [p, ErrorCode.UNSTABLE_OFFSET_COMMIT, -1]
                  : [p, ErrorCode.NONE, committed.get(p) ?? -1],
              ),
            );
          }
        } finally {
          ctx.shutdown();
        }
      }),
      { numRuns: 200 },
    );
  });
});
