import { CohortError, ErrorCode } from '../../../src/errors';
import { LOAD_RETRIES_AT_FIRST_BACKOFF } from '../../../src/client/member-backoff';
import { harness, joined } from './support/member-harness';
import { flush, ScriptedTransport } from './support/scripted-transport';

const offsetCommitAnswer = (code: ErrorCode) => ({
  topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: code }] }],
});

describe('GroupMember retries', () => {
  it('retries a retriable JoinGroup answer after a backoff that doubles each time', async () => {
    const transport = new ScriptedTransport().script(
      'joinGroup',
      { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE },
      { errorCode: ErrorCode.NOT_COORDINATOR },
      { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE },
    );
    const { member, advance } = harness({}, transport);
    await flush();
    const joins = () => transport.callsOf('joinGroup').length;
    expect(joins()).toBe(1);
    await advance(99);
    expect(joins()).toBe(1);
    await advance(1); // 100 ms
    expect(joins()).toBe(2);
    await advance(199);
    expect(joins()).toBe(2);
    await advance(1); // then 200 ms
    expect(joins()).toBe(3);
    await advance(400); // then 400 ms
    expect(joins()).toBe(4);
    expect(member.state).toBe('stable');
  });

  it('retries COORDINATOR_LOAD_IN_PROGRESS at the first backoff, without doubling it', async () => {
    // The coordinator is found and serves once its partition is loaded: JoinGroup, OffsetCommit and
    // Heartbeat each retry it every 100 ms, however many times it comes.
    const loading = { errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS };
    const transport = new ScriptedTransport().script('joinGroup', loading, loading, loading, loading);
    const { member, advance } = harness({}, transport);
    await flush();
    for (let attempt = 2; attempt <= 5; attempt++) {
      await advance(99);
      expect(transport.callsOf('joinGroup')).toHaveLength(attempt - 1);
      await advance(1);
      expect(transport.callsOf('joinGroup')).toHaveLength(attempt);
    }
    expect(member.state).toBe('stable');

    transport.script(
      'offsetCommit',
      offsetCommitAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
      offsetCommitAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
      offsetCommitAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    );
    let done = false;
    const commit = member.commitOffsets([{ topic: 't', partition: 0, offset: 5n }]).then(() => (done = true));
    await flush();
    for (let attempt = 2; attempt <= 4; attempt++) {
      expect(done).toBe(false);
      await advance(100);
      expect(transport.callsOf('offsetCommit')).toHaveLength(attempt);
    }
    await flush();
    expect(done).toBe(true);
    await commit;

    const heartbeats = transport.callsOf('heartbeat').length;
    transport.script('heartbeat', loading, loading, loading);
    await advance(3_000); // the next heartbeat is due
    expect(transport.callsOf('heartbeat')).toHaveLength(heartbeats + 1);
    for (let retry = 1; retry <= 3; retry++) {
      await advance(100);
      expect(transport.callsOf('heartbeat')).toHaveLength(heartbeats + 1 + retry);
    }
  });

  it('lets the wait grow once a load has lasted LOAD_RETRIES_AT_FIRST_BACKOFF answers', async () => {
    // A load that never ends must not be asked ten times a second for ever: after 20 answers at 100 ms,
    // the backoff grows as for any retriable code (1 s at most here).
    const loading = { errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS };
    const transport = new ScriptedTransport();
    for (let i = 0; i < LOAD_RETRIES_AT_FIRST_BACKOFF + 3; i++) transport.script('joinGroup', loading);
    const { advance } = harness({}, transport);
    await flush();
    const joins = () => transport.callsOf('joinGroup').length;
    for (let i = 0; i < LOAD_RETRIES_AT_FIRST_BACKOFF; i++) await advance(100);
    expect(joins()).toBe(LOAD_RETRIES_AT_FIRST_BACKOFF + 1);
    await advance(100);
    expect(joins()).toBe(LOAD_RETRIES_AT_FIRST_BACKOFF + 1);
    await advance(900); // the 21st answer in a row waits the capped 1 s
    expect(joins()).toBe(LOAD_RETRIES_AT_FIRST_BACKOFF + 2);
  });

  it('caps the backoff at retryBackoffMaxMs and jitters it', async () => {
    const transport = new ScriptedTransport();
    for (let i = 0; i < 6; i++)
      transport.script('joinGroup', { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE });
    const { GroupMember } = await import('../../../src/client/group-member');
    const { ManualTime } = await import('../../../src/time');
    const time = new ManualTime();
    // random 0 → factor 0.8 (jitter 0.2): waits 80, 160, 320, 400, 400 with a 500 ms cap.
    new GroupMember(
      { groupId: 'g', topics: [], retryBackoffMs: 100, retryBackoffMaxMs: 500 },
      { transport, time, random: () => 0 },
    );
    await flush();
    const sentAt: number[] = [0];
    for (let ms = 0; ms < 2_000; ms += 10) {
      time.advance(10);
      await flush();
      if (transport.callsOf('joinGroup').length > sentAt.length) sentAt.push(time.monotonicMs());
    }
    expect(sentAt.slice(0, 6)).toEqual([0, 80, 240, 560, 960, 1360]);
  });

  it('treats a transport failure with a retriable code like the same code in a response', async () => {
    const transport = new ScriptedTransport().script(
      'joinGroup',
      new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'unavailable'),
    );
    const { member, advance } = harness({}, transport);
    await flush();
    await advance(100);
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(member.state).toBe('stable');
  });

  it('gives up on a JoinGroup after the rebalance timeout plus five seconds, then retries', async () => {
    const transport = new ScriptedTransport().script('joinGroup', 'hang');
    const { advance } = harness({ requestTimeoutMs: 1_000 }, transport);
    await flush();
    const first = transport.callsOf('joinGroup')[0];
    expect(first.options.timeoutMs).toBe(25_000);
    await advance(24_999);
    expect(first.options.signal?.aborted).toBe(false);
    await advance(1);
    expect(first.options.signal?.aborted).toBe(true);
    await advance(100);
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
  });

  it.each([
    ['INVALID_SESSION_TIMEOUT', ErrorCode.INVALID_SESSION_TIMEOUT],
    ['GROUP_MAX_SIZE_REACHED', ErrorCode.GROUP_MAX_SIZE_REACHED],
    ['INCONSISTENT_GROUP_PROTOCOL', ErrorCode.INCONSISTENT_GROUP_PROTOCOL],
    ['UNKNOWN_SERVER_ERROR', ErrorCode.UNKNOWN_SERVER_ERROR],
  ])('does not retry %s: it fails with the error rebuilt from the code', async (name, code) => {
    const transport = new ScriptedTransport().script('joinGroup', { errorCode: code });
    const { member, events, advance } = harness({}, transport);
    await flush();
    expect(events).toHaveLength(1);
    const [event, error] = events[0];
    expect(event).toBe('error');
    expect(error).toBeInstanceOf(CohortError);
    expect(error).toMatchObject({ code, retriable: false });
    expect((error as Error).message).toContain(name);
    expect(member.state).toBe('failed');
    await advance(60_000);
    expect(transport.callsOf('joinGroup')).toHaveLength(1);
  });

  it('fails on a non-retriable transport failure and keeps it as the cause', async () => {
    const denied = new CohortError(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'from the transport');
    const transport = new ScriptedTransport().script('joinGroup', denied);
    const { member } = harness({}, transport);
    const failed = new Promise<Error>((resolve) => member.once('error', resolve));
    await flush();
    expect(await failed).toBe(denied);
  });

  it('fails when the member id of a session is rejected in favour of another instance', async () => {
    const transport = new ScriptedTransport().script('joinGroup', {
      errorCode: ErrorCode.FENCED_INSTANCE_ID,
    });
    const { member, names } = harness({ groupInstanceId: 'i-1' }, transport);
    await flush();
    expect(names()).toEqual(['error']);
    expect(member.failure).toMatchObject({ code: ErrorCode.FENCED_INSTANCE_ID });
  });

  it('retries a commit answered with a retriable code until it succeeds', async () => {
    const transport = new ScriptedTransport().script(
      'offsetCommit',
      offsetCommitAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
      offsetCommitAnswer(ErrorCode.REQUEST_TIMED_OUT),
    );
    const { member, advance } = await joined({}, transport);
    let done = false;
    const commit = member.commitOffsets([{ topic: 't', partition: 0, offset: 5n }]).then(() => (done = true));
    await flush();
    await advance(100);
    expect(done).toBe(false);
    await advance(200);
    await commit;
    expect(transport.callsOf('offsetCommit')).toHaveLength(3);
  });

  it('rejects a commit with a non-retriable code after one attempt', async () => {
    const transport = new ScriptedTransport().script(
      'offsetCommit',
      offsetCommitAnswer(ErrorCode.OFFSET_METADATA_TOO_LARGE),
    );
    const { member } = await joined({}, transport);
    await expect(member.commitOffsets([{ topic: 't', partition: 0, offset: 5n }])).rejects.toMatchObject({
      code: ErrorCode.OFFSET_METADATA_TOO_LARGE,
      retriable: false,
    });
    expect(transport.callsOf('offsetCommit')).toHaveLength(1);
  });

  it('gives up retrying a commit at its deadline with the last error', async () => {
    const transport = new ScriptedTransport();
    for (let i = 0; i < 20; i++)
      transport.script('offsetCommit', offsetCommitAnswer(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    const { member, advance } = await joined({}, transport);
    const outcome = member
      .commitOffsets([{ topic: 't', partition: 0, offset: 5n }], { timeoutMs: 1_000 })
      .catch((e) => e);
    for (let i = 0; i < 12; i++) await advance(100);
    expect(await outcome).toMatchObject({ code: ErrorCode.COORDINATOR_NOT_AVAILABLE });
    expect(transport.callsOf('offsetCommit').length).toBeLessThan(6); // 100 + 200 + 400 then out of time
  });

  it('rejects offsets that cannot be sent exactly', async () => {
    const { member } = await joined();
    await expect(member.commitOffsets([{ topic: 't', partition: 0, offset: 2n ** 53n }])).rejects.toThrow(
      RangeError,
    );
    await expect(member.commitOffsets([{ topic: 't', partition: 0, offset: -1n }])).rejects.toThrow(
      RangeError,
    );
  });
});
