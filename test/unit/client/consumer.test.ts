import { RANGE_ASSIGNOR } from '../../../src/client/assignors';
import { encodeAssignment } from '../../../src/client/consumer-protocol';
import { Consumer } from '../../../src/client/consumer';
import type { EachBatchPayload } from '../../../src/client/consumer-handlers';
import type { ConsumerOptions } from '../../../src/client/consumer-options';
import type * as m from '../../../src/protocol/group-messages';
import type { CallOptions } from '../../../src/client/group-transport';
import { CohortError, ErrorCode } from '../../../src/errors';
import { ManualTime } from '../../../src/time';
import { InMemoryBroker } from './support/in-memory-broker';
import { flush, ScriptedTransport } from './support/scripted-transport';

/** The scripted coordinator, with offset commits kept and read back as a real coordinator would. */
class CommittingTransport extends ScriptedTransport {
  readonly committed = new Map<string, number>();

  override async offsetCommit(
    request: m.OffsetCommitRequest,
    options: CallOptions,
  ): Promise<m.OffsetCommitResponse> {
    const response = await super.offsetCommit(request, options);
    const accepted = response.topics.every((t) => t.partitions.every((p) => p.errorCode === ErrorCode.NONE));
    if (accepted) {
      for (const t of request.topics) {
        for (const p of t.partitions) this.committed.set(`${t.name}-${p.partitionIndex}`, p.committedOffset);
      }
    }
    return response;
  }

  override offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    this.calls.push({ method: 'offsetFetch', request, options });
    return Promise.resolve({
      errorCode: ErrorCode.NONE,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => ({
          partitionIndex,
          committedOffset: this.committed.get(`${t.name}-${partitionIndex}`) ?? -1,
          committedLeaderEpoch: -1,
          metadata: '',
          errorCode: ErrorCode.NONE,
        })),
      })),
    });
  }

  /** The offsets each OffsetCommit carried, as `topic-partition@offset/generation`. */
  commits(): string[] {
    return this.callsOf('offsetCommit').flatMap((c) =>
      c.request.topics.flatMap((t) =>
        t.partitions.map(
          (p) => `${t.name}-${p.partitionIndex}@${p.committedOffset}/g${c.request.generationId}`,
        ),
      ),
    );
  }
}

function setup(options: Partial<ConsumerOptions> = {}, partitions = 2) {
  const time = new ManualTime();
  const group = new CommittingTransport();
  const broker = new InMemoryBroker(time).addTopic('t', partitions);
  const consumer = new Consumer(
    {
      groupId: 'g',
      topics: ['t'],
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 3_000,
      rebalanceTimeoutMs: 20_000,
      autoOffsetReset: 'earliest',
      ...options,
    },
    { groupTransport: group, brokerTransport: broker, time, random: () => 0.5, clientId: 'c' },
  );
  const events: string[] = [];
  consumer.on('assigned', (e) => events.push(`assigned ${e.partitions.map((p) => p.partition).join(',')}`));
  consumer.on('revoked', (e) => events.push(`revoked ${e.partitions.map((p) => p.partition).join(',')}`));
  consumer.on('lost', (e) => events.push(`lost ${e.partitions.map((p) => p.partition).join(',')}`));
  consumer.on('committed', (e) =>
    events.push(`committed ${e.offsets.map((o) => `${o.partition}@${o.offset}`).join(',')}`),
  );
  const seen: string[] = [];
  /** Runs with an eachMessage that records `partition:offset=value`. */
  const run = (each?: (partition: number, value: string) => Promise<void> | void) =>
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        await each?.(partition, message.value.toString());
        seen.push(`${partition}:${message.offset}=${message.value.toString()}`);
      },
    });
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  return { time, group, broker, consumer, events, seen, run, advance };
}

describe('Consumer', () => {
  it('hands every record of its partitions to eachMessage in offset order, from the log start with earliest', async () => {
    const { broker, consumer, seen, run } = setup();
    broker.append('t', 0, 'a', 'b');
    broker.append('t', 1, 'c');
    void run();
    await flush();
    expect(consumer.assignment()).toEqual([
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    expect(seen.sort()).toEqual(['0:0=a', '0:1=b', '1:0=c']);
    expect(consumer.position({ topic: 't', partition: 0 })).toBe(2n);
    await consumer.close();
  });

  it('starts from the offset the group committed', async () => {
    const { broker, group, seen, run, consumer } = setup();
    broker.append('t', 0, 'a', 'b', 'c');
    group.committed.set('t-0', 2);
    void run();
    await flush();
    expect(seen.filter((s) => s.startsWith('0:'))).toEqual(['0:2=c']);
    expect(broker.callsOf('listOffsets')[0].request.topics[0].partitions).toEqual([
      { partitionIndex: 1, timestamp: -2 },
    ]);
    await consumer.close();
  });

  it('with latest, hands over only records appended after it found its position', async () => {
    const { broker, seen, run, consumer } = setup({ autoOffsetReset: 'latest' });
    broker.append('t', 0, 'old');
    void run();
    await flush();
    expect(seen).toEqual([]);
    broker.append('t', 0, 'new');
    await flush();
    expect(seen).toEqual(['0:1=new']);
    await consumer.close();
  });

  it('long-polls: the parked Fetch answers as soon as records arrive, with no time passing', async () => {
    const { broker, seen, run, consumer } = setup({ maxWaitMs: 60_000 });
    void run();
    await flush();
    expect(broker.parkedFetches).toBe(1);
    expect(broker.callsOf('fetch').at(-1)?.request).toMatchObject({
      replicaId: -1,
      maxWaitMs: 60_000,
      minBytes: 1,
    });
    broker.append('t', 1, 'x');
    await flush();
    expect(seen).toEqual(['1:0=x']);
    await consumer.close();
  });

  it('auto-commits processed positions every autoCommitIntervalMs, fenced by its generation, and only what moved', async () => {
    const { broker, group, run, advance, consumer } = setup({ autoCommitIntervalMs: 1_000 });
    broker.append('t', 0, 'a', 'b');
    void run();
    await flush();
    expect(group.commits()).toEqual([]);
    await advance(1_000);
    // Partition 1's position came from autoOffsetReset: committing it too keeps a restart from skipping.
    expect(group.commits()).toEqual(['t-0@2/g1', 't-1@0/g1']);
    expect(group.callsOf('offsetCommit')[0].request.memberId).toBe('member-1');
    await advance(1_000);
    expect(group.commits()).toEqual(['t-0@2/g1', 't-1@0/g1']);
    broker.append('t', 1, 'c');
    await flush();
    await advance(1_000);
    expect(group.commits()).toEqual(['t-0@2/g1', 't-1@0/g1', 't-1@1/g1']);
    await consumer.close();
  });

  it('commit() commits the positions that moved, and exactly the offsets given when given', async () => {
    const { broker, group, run, consumer, events } = setup({ autoCommit: false });
    broker.append('t', 1, 'a');
    void run();
    await flush();
    await consumer.commit();
    await consumer.commit();
    await consumer.commit([{ topic: 't', partition: 0, offset: 7n }]);
    expect(group.commits()).toEqual(['t-0@0/g1', 't-1@1/g1', 't-0@7/g1']);
    expect(events.filter((e) => e.startsWith('committed'))).toEqual(['committed 0@0,1@1', 'committed 0@7']);
    await consumer.close();
    // Without autoCommit, closing commits nothing on its own.
    expect(group.commits()).toEqual(['t-0@0/g1', 't-1@1/g1', 't-0@7/g1']);
  });

  it('rejects commit() with the coordinator code when the generation is gone', async () => {
    const { group, run, consumer } = setup({ autoCommit: false });
    void run();
    await flush();
    group.script('offsetCommit', {
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.ILLEGAL_GENERATION }] }],
    });
    await expect(consumer.commit([{ topic: 't', partition: 0, offset: 1n }])).rejects.toMatchObject({
      code: ErrorCode.ILLEGAL_GENERATION,
    });
    await consumer.close();
  });

  it('pause leaves a partition out of every Fetch and hands nothing over; resume continues where it stopped', async () => {
    const { broker, seen, run, consumer } = setup();
    void run();
    await flush();
    consumer.pause([{ topic: 't', partition: 0 }]);
    expect(consumer.paused()).toEqual([{ topic: 't', partition: 0 }]);
    broker.append('t', 0, 'held');
    broker.append('t', 1, 'flowing');
    await flush();
    expect(seen).toEqual(['1:0=flowing']);
    const partitionsAsked = broker
      .callsOf('fetch')
      .at(-1)
      ?.request.topics.flatMap((t) => t.partitions.map((p) => p.partitionIndex));
    expect(partitionsAsked).toEqual([1]);

    consumer.resume([{ topic: 't', partition: 0 }]);
    await flush();
    expect(seen).toEqual(['1:0=flowing', '0:0=held']);
    expect(() => consumer.pause([{ topic: 't', partition: 9 }])).toThrow(/not assigned/);
    await consumer.close();
  });

  it('pausing inside eachMessage stops the rest of that partition’s records until resume', async () => {
    const { broker, seen, consumer, run } = setup();
    broker.append('t', 0, 'a', 'b', 'c');
    void run((partition, value) => {
      if (value === 'a') consumer.pause([{ topic: 't', partition }]);
    });
    await flush();
    expect(seen).toEqual(['0:0=a']);
    expect(consumer.position({ topic: 't', partition: 0 })).toBe(1n);
    consumer.resume([{ topic: 't', partition: 0 }]);
    await flush();
    expect(seen).toEqual(['0:0=a', '0:1=b', '0:2=c']);
    await consumer.close();
  });

  it('on a rebalance, stops delivery, commits processed positions, then tells its listeners, and resumes from the commits', async () => {
    const { broker, group, events, seen, run, advance, consumer } = setup({ protocols: [RANGE_ASSIGNOR] });
    broker.append('t', 0, 'a');
    void run();
    await flush();
    group.script('heartbeat', { errorCode: ErrorCode.REBALANCE_IN_PROGRESS });
    group.generationId = 2;
    await advance(3_000);
    expect(events).toEqual(['assigned 0,1', 'committed 0@1,1@0', 'revoked 0,1', 'assigned 0,1']);
    expect(group.commits()).toEqual(['t-0@1/g1', 't-1@0/g1']);
    broker.append('t', 0, 'b');
    await flush();
    expect(seen).toEqual(['0:0=a', '0:1=b']);
    await consumer.close();
  });

  it('a revoked listener may hold the rebalance with waitUntil while it commits by hand', async () => {
    const { broker, group, run, advance, consumer } = setup({
      protocols: [RANGE_ASSIGNOR],
      autoCommit: false,
    });
    broker.append('t', 1, 'a', 'b');
    consumer.on('revoked', (event) => event.waitUntil(consumer.commit()));
    void run();
    await flush();
    group.script('heartbeat', { errorCode: ErrorCode.REBALANCE_IN_PROGRESS });
    await advance(3_000);
    expect(group.commits()).toEqual(['t-0@0/g1', 't-1@2/g1']);
    const order = group.calls.map((c) => c.method).filter((m) => m === 'offsetCommit' || m === 'joinGroup');
    expect(order).toEqual(['joinGroup', 'offsetCommit', 'joinGroup']);
    await consumer.close();
  });

  it('drops a lost partition without committing and starts it again from the last commit', async () => {
    const { broker, group, events, seen, run, advance, consumer } = setup({ autoCommitIntervalMs: 60_000 });
    broker.append('t', 0, 'a', 'b');
    group.committed.set('t-0', 1);
    void run();
    await flush();
    expect(seen).toEqual(['0:1=b']);
    group.script('heartbeat', { errorCode: ErrorCode.UNKNOWN_MEMBER_ID });
    await advance(3_000);
    expect(events).toEqual(['assigned 0,1', 'lost 0,1', 'assigned 0,1']);
    expect(group.commits()).toEqual([]);
    // Processed but never committed: consumed again (at-least-once).
    expect(seen).toEqual(['0:1=b', '0:1=b']);
    await consumer.close();
  });

  it('only hands over the assignment it gets as a follower', async () => {
    const { broker, group, seen, run, consumer } = setup();
    group
      .script('joinGroup', { leaderId: 'someone-else', members: [] })
      .script('syncGroup', { assignment: encodeAssignment({ partitions: [{ topic: 't', partition: 1 }] }) });
    broker.append('t', 0, 'not mine');
    broker.append('t', 1, 'mine');
    void run();
    await flush();
    expect(seen).toEqual(['1:0=mine']);
    expect(broker.callsOf('metadata')).toHaveLength(0); // only the leader needs partition counts
    await consumer.close();
  });

  it('stops when eachMessage throws: run rejects, what was processed is committed, and the member leaves', async () => {
    const { broker, group, seen, run, consumer } = setup();
    broker.append('t', 0, 'a', 'b', 'poison', 'd');
    const failure = new Error('cannot bill');
    const running = run((_p, value) => {
      if (value === 'poison') throw failure;
    });
    await expect(running).rejects.toBe(failure);
    expect(seen).toEqual(['0:0=a', '0:1=b']);
    expect(group.commits()).toEqual(['t-0@2/g1', 't-1@0/g1']);
    expect(group.callsOf('leaveGroup')).toHaveLength(1);
    expect(consumer.member?.state).toBe('closed');
  });

  it('close commits, leaves the group, resolves run, and is safe to call twice', async () => {
    const { broker, group, run, consumer, events } = setup();
    broker.append('t', 1, 'a');
    const running = run();
    await flush();
    await Promise.all([consumer.close(), consumer.close()]);
    await expect(running).resolves.toBeUndefined();
    expect(group.commits()).toEqual(['t-0@0/g1', 't-1@1/g1']);
    expect(group.callsOf('leaveGroup')).toHaveLength(1);
    expect(events.at(-1)).toBe('revoked 0,1');
    expect(broker.parkedFetches).toBe(0);
  });

  it('closes when its signal is aborted: the running handler finishes, its record is committed, run resolves', async () => {
    const controller = new AbortController();
    const { broker, group, seen, run, consumer } = setup({ signal: controller.signal });
    broker.append('t', 0, 'a', 'b');
    let release!: () => void;
    const running = run((_p, value) => {
      if (value === 'a') return new Promise<void>((resolve) => (release = resolve));
    });
    await flush();
    controller.abort();
    await flush();
    release();
    await expect(running).resolves.toBeUndefined();
    expect(seen).toEqual(['0:0=a']); // 'b' was not handed over once the consumer was closing
    expect(group.commits()).toEqual(['t-0@1/g1', 't-1@0/g1']);
    expect(group.callsOf('leaveGroup')).toHaveLength(1);
    expect(consumer.member?.state).toBe('closed');
  });

  it('close waits for a running handler, at most its timeout', async () => {
    const { broker, run, consumer, time } = setup();
    broker.append('t', 0, 'slow');
    void run(() => new Promise<void>(() => undefined)); // never finishes
    await flush();
    const closed = consumer.close({ timeoutMs: 5_000 });
    let isClosed = false;
    void closed.then(() => (isClosed = true));
    await flush();
    expect(isClosed).toBe(false);
    time.advance(5_000);
    await flush();
    // The member's own revocation bound (what is left of the 5 s: nothing) is a timer too.
    time.advance(0);
    await flush();
    expect(isClosed).toBe(true);
  });

  it('resets a position outside the log by autoOffsetReset', async () => {
    const { broker, group, seen, run, consumer } = setup();
    broker.append('t', 0, 'a');
    group.committed.set('t-0', 100);
    void run();
    await flush();
    expect(seen).toEqual(['0:0=a']);
    await consumer.close();
  });

  it('fails with autoOffsetReset none when nothing is committed', async () => {
    const { run } = setup({ autoOffsetReset: 'none' });
    await expect(run()).rejects.toMatchObject({ code: ErrorCode.OFFSET_OUT_OF_RANGE });
  });

  it('backs off after a retriable Fetch failure and fetches again', async () => {
    const { broker, seen, run, advance, consumer } = setup({ retryBackoffMs: 200, retryBackoffMaxMs: 200 });
    broker.script('fetch', new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'unreachable'));
    broker.append('t', 0, 'a');
    void run();
    await flush();
    const fetches = broker.callsOf('fetch').length;
    expect(seen).toEqual([]);
    await advance(199);
    expect(broker.callsOf('fetch')).toHaveLength(fetches);
    await advance(1);
    expect(seen).toEqual(['0:0=a']);
    await consumer.close();
  });

  it('hands eachBatch one batch per partition with its high watermark; resolveOffset moves the position', async () => {
    const { broker, group, consumer } = setup();
    broker.append('t', 0, 'a', 'b', 'c');
    const batches: string[] = [];
    let release!: () => void;
    const running = consumer.run({
      eachBatch: async ({ batch, resolveOffset }: EachBatchPayload) => {
        batches.push(
          `${batch.partition}:${batch.messages.map((r) => r.value.toString()).join('')}@${batch.highWatermark}`,
        );
        resolveOffset(batch.messages[0].offset);
        expect(() => resolveOffset(99n)).toThrow(RangeError);
        await new Promise<void>((resolve) => (release = resolve));
      },
    });
    await flush();
    expect(batches).toEqual(['0:abc@3']);
    expect(consumer.position({ topic: 't', partition: 0 })).toBe(1n);
    release();
    await flush();
    expect(consumer.position({ topic: 't', partition: 0 })).toBe(3n);
    await consumer.close();
    await running;
    expect(group.commits()).toEqual(['t-0@3/g1', 't-1@0/g1']);
  });

  it('checks its options, listing every problem', () => {
    const transport = new ScriptedTransport();
    const broker = new InMemoryBroker(new ManualTime());
    expect(
      () =>
        new Consumer(
          { groupId: 'g', topics: [], maxWaitMs: -1, autoOffsetReset: 'oldest' as never },
          { groupTransport: transport, brokerTransport: broker },
        ),
    ).toThrow(/topics must name at least one topic[\s\S]*autoOffsetReset[\s\S]*maxWaitMs/);
    expect(
      () =>
        new Consumer(
          { groupId: 'g', topics: ['t'], heartbeatIntervalMs: 10_000, sessionTimeoutMs: 10_000 },
          { groupTransport: transport, brokerTransport: broker },
        ),
    ).toThrow(/heartbeatIntervalMs/);
  });

  it('refuses a second run and a run without exactly one handler', async () => {
    const { consumer, run } = setup();
    await expect(consumer.run({})).rejects.toThrow(/exactly one/);
    void run();
    await expect(run()).rejects.toThrow(/once/);
    await consumer.close();
  });
});
