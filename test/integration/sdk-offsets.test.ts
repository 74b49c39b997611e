import { CohortError, ErrorCode, type GroupMember } from '../../src';
import { partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * Offset commits fenced by generation, end to end: a commit that reaches the coordinator after its
 * generation ended is refused and changes nothing, while the member's next commit, in the generation it
 * now holds, is stored.
 */

const TOPIC = 'ledger';
const PARTITIONS = partitionsOf(TOPIC, 4);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness();

describe('offset commits through the SDK', () => {
  it('rejects a commit from a stale generation while a commit in the current one succeeds', async () => {
    const h = harness();
    const groupId = h.groupId('stale-commit');
    const first = h.newClient('first');
    const a = first.join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const staleGenerationId = await settled([a], PARTITIONS);
    const p0 = { topic: TOPIC, partition: 0 };
    await a.commitOffsets([{ ...p0, offset: 10n }]);
    let lost = 0;
    a.on('lost', () => lost++);

    // The next commit is delayed on the way (a slow network) while the group moves to a new generation.
    first.transport.hold('offsetCommit');
    const late = a.commitOffsets([{ ...p0, offset: 20n, metadata: 'late' }]);
    await first.transport.heldUntil('offsetCommit');
    const b: GroupMember = h.newClient('second').join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const currentGenerationId = await settled([a, b], PARTITIONS);
    expect(currentGenerationId).toBeGreaterThan(staleGenerationId);

    first.transport.release('offsetCommit');
    const error = await late.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CohortError);
    expect(error).toMatchObject({ code: ErrorCode.ILLEGAL_GENERATION, retriable: false });
    // An answer about a generation the member already left costs it nothing.
    expect([a.state, a.generationId, lost]).toEqual(['stable', currentGenerationId, 0]);

    const owned = a.assignment ?? [];
    expect(owned.length).toBeGreaterThan(0);
    await a.commitOffsets(owned.map((tp) => ({ ...tp, offset: 30n })));
    const committed = await b.fetchOffsets(PARTITIONS);
    const expected = PARTITIONS.map((tp) => ({
      ...tp,
      offset: owned.some((o) => o.partition === tp.partition) ? 30n : tp.partition === 0 ? 10n : null,
      metadata: '',
    }));
    expect(committed).toEqual(expected);
    expect(h.errors).toEqual([]);
  });
});
