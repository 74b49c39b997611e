import { murmur2, toPositive } from '../../../src/client/murmur2';
import { createDefaultPartitioner } from '../../../src/client/partitioner';
import { Producer, type RecordMetadata } from '../../../src/client/producer';
import type { Scheduler } from '../../../src/client/scheduler';
import { TimeScheduler } from '../../../src/client/time-scheduler';
import type { ProducerOptions } from '../../../src/client/producer-options';
import { CohortError, ErrorCode } from '../../../src/errors';
import { ManualTime } from '../../../src/time';
import { InMemoryBroker } from './support/in-memory-broker';
import { flush } from './support/scripted-transport';

function setup(options: ProducerOptions = {}, partitions = 3) {
  const time = new ManualTime();
  const broker = new InMemoryBroker(time).addTopic('t', partitions);
  const producer = new Producer({ lingerMs: 10, ...options }, { transport: broker, time, random: () => 0.5 });
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  /** What each Produce carried: `partition:value,value` per partition. */
  const requests = () =>
    broker
      .callsOf('produce')
      .map((c) =>
        c.request.topics
          .flatMap((t) =>
            t.partitions.map((p) => `${p.partitionIndex}:${p.records.map((r) => r.value).join(',')}`),
          )
          .join(' '),
      );
  return { time, broker, producer, advance, requests };
}

function settledState<T>(promise: Promise<T>): { value?: T; error?: unknown; isSettled: boolean } {
  const state: { value?: T; error?: unknown; isSettled: boolean } = { isSettled: false };
  promise.then(
    (value) => Object.assign(state, { value, isSettled: true }),
    (error: unknown) => Object.assign(state, { error, isSettled: true }),
  );
  return state;
}

describe('Producer', () => {
  it('batches records sent together into one Produce after lingerMs and resolves each with its offset', async () => {
    const { producer, advance, requests, broker } = setup();
    const sends = ['a', 'b', 'c'].map((value) => producer.send({ topic: 't', partition: 1, value }));
    await flush();
    expect(requests()).toEqual([]);
    await advance(10);
    expect(requests()).toEqual(['1:a,b,c']);
    const metadata = await Promise.all(sends);
    expect(metadata.map((m: RecordMetadata) => [m.partition, m.offset])).toEqual([
      [1, 0n],
      [1, 1n],
      [1, 2n],
    ]);
    expect(broker.values('t', 1)).toEqual(['a', 'b', 'c']);
    await producer.close();
  });

  it('sends a batch once it holds batchSizeBytes, without lingering', async () => {
    // Each record costs its value and 20 bytes of framing: two fill a batch of 80.
    const { producer, requests } = setup({ batchSizeBytes: 80, lingerMs: 60_000 });
    const first = producer.send({ topic: 't', partition: 0, value: 'x'.repeat(20) });
    await flush();
    expect(requests()).toEqual([]);
    const second = producer.send({ topic: 't', partition: 0, value: 'y'.repeat(20) });
    await flush();
    expect(requests()).toEqual([`0:${'x'.repeat(20)},${'y'.repeat(20)}`]);
    await expect(Promise.all([first, second])).resolves.toHaveLength(2);
    // A record that does not fit closes the open batch, which goes out at once; the newcomer lingers.
    const third = settledState(producer.send({ topic: 't', partition: 0, value: 'z'.repeat(50) }));
    const fourth = settledState(producer.send({ topic: 't', partition: 0, value: 'w'.repeat(50) }));
    await flush();
    expect(requests()).toHaveLength(2);
    expect([third.isSettled, fourth.isSettled]).toEqual([true, false]);
  });

  it('keeps one Produce in flight: records sent meanwhile follow in the next one, in order', async () => {
    const { producer, broker, advance, requests } = setup({ lingerMs: 0 });
    broker.hold('produce');
    const a = producer.send({ topic: 't', partition: 0, value: 'a' });
    await advance(0);
    const b = producer.send({ topic: 't', partition: 0, value: 'b' });
    const c = producer.send({ topic: 't', partition: 2, value: 'c' });
    await advance(0);
    expect(requests()).toEqual(['0:a']);
    broker.release('produce');
    await flush();
    expect(requests()).toEqual(['0:a', '0:b 2:c']);
    expect((await Promise.all([a, b, c])).map((m) => `${m.partition}@${m.offset}`)).toEqual([
      '0@0',
      '0@1',
      '2@0',
    ]);
  });

  it('puts a keyed record where Kafka would (murmur2) and spreads keyless ones round robin', async () => {
    const { producer, advance } = setup({}, 5);
    const keyed = ['21', 'foobar', 'abc'].map((key) => producer.send({ topic: 't', key, value: 'v' }));
    const keyless = [1, 2, 3, 4, 5, 6].map(() => producer.send({ topic: 't', value: 'v' }));
    await flush(); // the topic's partition count arrives; the batches linger from then on
    await advance(10);
    const keyedPartitions = (await Promise.all(keyed)).map((m) => m.partition);
    expect(keyedPartitions).toEqual(
      ['21', 'foobar', 'abc'].map((k) => toPositive(murmur2(Buffer.from(k))) % 5),
    );
    expect((await Promise.all(keyless)).map((m) => m.partition)).toEqual([0, 1, 2, 3, 4, 0]);
  });

  it('waits for an unknown topic to appear, then rejects with UNKNOWN_TOPIC_OR_PARTITION after deliveryTimeoutMs', async () => {
    const { producer, advance, broker } = setup({
      deliveryTimeoutMs: 3_000,
      requestTimeoutMs: 1_000,
      retryBackoffMs: 500,
      retryBackoffMaxMs: 500,
    });
    const lateTopic = settledState(producer.send({ topic: 'late', value: 'v' }));
    const neverTopic = settledState(producer.send({ topic: 'never', value: 'v' }));
    await flush();
    broker.addTopic('late', 1);
    await advance(500);
    await advance(10);
    expect(lateTopic.value).toMatchObject({ topic: 'late', partition: 0, offset: 0n });
    for (let i = 0; i < 6 && !neverTopic.isSettled; i++) await advance(500);
    expect(neverTopic.error).toMatchObject({ code: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION });
  });

  it('retries a retriable partition error after its backoff, and rejects at once on one that is not', async () => {
    const { producer, broker, advance } = setup({ retryBackoffMs: 200, retryBackoffMaxMs: 200 });
    const failOnce = (code: ErrorCode) => () => ({
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, errorCode: code, baseOffset: -1n, logAppendTimeMs: -1, logStartOffset: 0n },
          ],
        },
      ],
    });
    broker.script('produce', failOnce(ErrorCode.NOT_ENOUGH_REPLICAS));
    const retried = settledState(producer.send({ topic: 't', partition: 0, value: 'a' }));
    await advance(10);
    expect(broker.callsOf('produce')).toHaveLength(1);
    await advance(199);
    expect(broker.callsOf('produce')).toHaveLength(1);
    await advance(1);
    expect(retried.value).toMatchObject({ partition: 0, offset: 0n });

    broker.script('produce', failOnce(ErrorCode.MESSAGE_TOO_LARGE));
    const refused = settledState(producer.send({ topic: 't', partition: 0, value: 'big' }));
    await advance(10);
    expect(refused.error).toBeInstanceOf(CohortError);
    expect(refused.error).toMatchObject({ code: ErrorCode.MESSAGE_TOO_LARGE });
    expect(broker.callsOf('produce')).toHaveLength(3);
  });

  it('retries a batch whose whole request failed in transit', async () => {
    const { producer, broker, advance } = setup({ retryBackoffMs: 100, retryBackoffMaxMs: 100 });
    broker.script('produce', new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'connection refused'));
    const sent = producer.send({ topic: 't', partition: 2, value: 'a' });
    await advance(10);
    await advance(100);
    await expect(sent).resolves.toMatchObject({ partition: 2, offset: 0n });
  });

  it('sends a lingering batch even when its timer fires before the clock shows the moment', async () => {
    // Regression: whole-millisecond clocks let a real timer run up to a millisecond "early"; the batch found
    // not ready then used to wait for the next send, forever if none came.
    const time = new ManualTime();
    const broker = new InMemoryBroker(time).addTopic('t', 1);
    const onTime = new TimeScheduler(time);
    let isFirst = true;
    const early: Scheduler = {
      schedule: (delayMs, task) => {
        const lead = isFirst && delayMs > 0 ? 1 : 0;
        isFirst = false;
        return onTime.schedule(delayMs - lead, task);
      },
    };
    const producer = new Producer({ lingerMs: 10 }, { transport: broker, time, scheduler: early });
    const sent = settledState(producer.send({ topic: 't', partition: 0, value: 'a' }));
    time.advance(9);
    await flush();
    expect(broker.callsOf('produce')).toHaveLength(0);
    time.advance(1);
    await flush();
    expect(sent.value).toMatchObject({ offset: 0n });
  });

  it('sends acks and the server-side timeout with every Produce', async () => {
    const { producer, broker, advance } = setup({ acks: 1, requestTimeoutMs: 7_000 });
    const sent = producer.send({
      topic: 't',
      partition: 0,
      value: 'a',
      key: 'k',
      headers: [{ key: 'h', value: 'v' }],
    });
    await advance(10);
    await sent;
    const request = broker.callsOf('produce')[0].request;
    expect([request.acks, request.timeoutMs]).toEqual([1, 7_000]);
    const record = request.topics[0].partitions[0].records[0];
    expect([record.key.toString(), record.headers[0].key, record.headers[0].value.toString()]).toEqual([
      'k',
      'h',
      'v',
    ]);
  });

  it('flush sends at once, without lingering, and resolves when every record has settled', async () => {
    const { producer, requests } = setup({ lingerMs: 60_000 });
    const sent = producer.send({ topic: 't', partition: 0, value: 'a' });
    await producer.flush();
    expect(requests()).toEqual(['0:a']);
    await expect(sent).resolves.toMatchObject({ offset: 0n });
  });

  it('close sends what is queued and refuses later sends; it rejects what it could not send in time', async () => {
    const { producer, broker, time } = setup({ lingerMs: 60_000 });
    const queued = producer.send({ topic: 't', partition: 0, value: 'a' });
    await producer.close();
    await expect(queued).resolves.toMatchObject({ offset: 0n });
    await expect(producer.send({ topic: 't', value: 'b' })).rejects.toThrow(/closed/);

    const other = new Producer({}, { transport: broker, time });
    broker.hold('produce');
    const stuck = settledState(other.send({ topic: 't', partition: 1, value: 'x' }));
    const closing = other.close({ timeoutMs: 1_000 });
    await flush();
    time.advance(1_000);
    await closing;
    await flush();
    expect(stuck.error).toMatchObject({ code: ErrorCode.REQUEST_TIMED_OUT });
  });

  it('rejects records it can never send, at once', () => {
    const { producer } = setup();
    expect(() => producer.send({ topic: '', value: 'a' })).toThrow(TypeError);
    expect(() => producer.send({ topic: 't', value: 5 as never })).toThrow(/value must be/);
    expect(() => producer.send({ topic: 't', partition: -1, value: 'a' })).toThrow(RangeError);
    expect(() => producer.send({ topic: 't', value: 'a', timestampMs: -5 })).toThrow(/timestampMs/);
  });

  it('checks its options, listing every problem', () => {
    const broker = new InMemoryBroker(new ManualTime());
    expect(
      () => new Producer({ acks: 2 as never, lingerMs: -1, deliveryTimeoutMs: 10 }, { transport: broker }),
    ).toThrow(/acks must be 0, 1 or -1[\s\S]*lingerMs[\s\S]*deliveryTimeoutMs/);
  });
});

describe('the default partitioner', () => {
  it('matches Kafka’s murmur2 on Kafka’s own test vectors', () => {
    const cases: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of cases) expect(murmur2(Buffer.from(key))).toBe(hash);
    expect(toPositive(-2147483648)).toBe(0);
  });

  it('keeps round robin counters per topic', () => {
    const partition = createDefaultPartitioner();
    const chosen = ['a', 'b', 'a', 'a', 'b'].map((topic) => partition({ topic, key: null }, 3));
    expect(chosen).toEqual([0, 0, 1, 2, 1]);
  });
});
