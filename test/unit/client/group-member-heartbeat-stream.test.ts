import { CohortError, ErrorCode } from '../../../src/errors';
import type { HeartbeatStream } from '../../../src/client/group-transport';
import type { HeartbeatRequest } from '../../../src/protocol/group-messages';
import { joined } from './support/member-harness';
import { ScriptedTransport, flush } from './support/scripted-transport';

/** A fake HeartbeatStream: the test answers each send, pushes, or ends it. */
class FakeStream implements HeartbeatStream {
  readonly sent: HeartbeatRequest[] = [];
  closed = false;
  unsupported = false;
  private readonly pending: { resolve: (code: ErrorCode) => void; reject: (error: unknown) => void }[] = [];
  private ended: CohortError | null = null;

  constructor(
    readonly push: (code: ErrorCode) => void,
    private readonly autoAnswer: ErrorCode | null,
  ) {}

  send(request: HeartbeatRequest): Promise<ErrorCode> {
    this.sent.push(request);
    if (this.ended !== null) return Promise.reject(this.ended);
    if (this.autoAnswer !== null) return Promise.resolve(this.autoAnswer);
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  answer(code: ErrorCode): void {
    this.pending.shift()?.resolve(code);
  }

  /** Ends the stream as the server would: UNIMPLEMENTED, or broken (the connection went away). */
  end(unimplemented: boolean): void {
    this.unsupported = unimplemented;
    this.ended = new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'stream ended');
    for (const p of this.pending.splice(0)) p.reject(this.ended);
  }

  close(): void {
    this.closed = true;
    if (this.ended === null) this.end(false);
  }
}

/** A ScriptedTransport that also opens fake streams (answering NONE unless told to hold). */
class StreamingTransport extends ScriptedTransport {
  readonly streams: FakeStream[] = [];
  /** What the next streams do: answer every send with this code, or hold (null) for the test to answer. */
  autoAnswer: ErrorCode | null = ErrorCode.NONE;
  /** When set, each new stream ends at once like this (before any answer). */
  endAtOnce: 'unimplemented' | 'broken' | null = null;

  openHeartbeatStream(onPush: (code: ErrorCode) => void): HeartbeatStream {
    const stream = new FakeStream(onPush, this.autoAnswer);
    if (this.endAtOnce !== null) stream.end(this.endAtOnce === 'unimplemented');
    this.streams.push(stream);
    return stream;
  }

  get streamSends(): number {
    return this.streams.reduce((n, s) => n + s.sent.length, 0);
  }
}

describe('GroupMember heartbeats over a stream', () => {
  it('sends heartbeats on one stream, one per interval, and uses its answers', async () => {
    const transport = new StreamingTransport();
    const { member, advance } = await joined({}, transport);
    await advance(2_999);
    expect(transport.streams).toHaveLength(0);
    await advance(1);
    await advance(3_000);
    expect(transport.streams).toHaveLength(1);
    expect(transport.streams[0].sent).toEqual([
      { groupId: 'g', generationId: 1, memberId: 'member-1', groupInstanceId: '' },
      { groupId: 'g', generationId: 1, memberId: 'member-1', groupInstanceId: '' },
    ]);
    expect(transport.callsOf('heartbeat')).toHaveLength(0);
    expect(member.state).toBe('stable');
  });

  it('handles an answer on the stream as the unary answer (ILLEGAL_GENERATION: lost, rejoin)', async () => {
    const transport = new StreamingTransport();
    transport.autoAnswer = null;
    const { member, advance, names } = await joined({}, transport);
    await advance(3_000);
    transport.generationId = 2;
    transport.streams[0].answer(ErrorCode.ILLEGAL_GENERATION);
    await flush();
    expect(names()).toEqual(['assigned', 'lost', 'assigned']);
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(member.state).toBe('stable');
    // Same member id: the stream stays, and carries the new generation.
    await advance(3_000);
    expect(transport.streams).toHaveLength(1);
    expect(transport.streams[0].closed).toBe(false);
    expect(transport.streams[0].sent.map((r) => r.generationId)).toEqual([1, 2]);
  });

  it('keeps its stream across generations: a pushed rebalance costs no new stream', async () => {
    const transport = new StreamingTransport();
    const { member, advance, names } = await joined({}, transport);
    await advance(3_000);
    transport.generationId = 2;
    transport.streams[0].push(ErrorCode.REBALANCE_IN_PROGRESS);
    await flush();
    expect(member.generationId).toBe(2);
    expect(names()).toEqual(['assigned', 'assigned']);
    await advance(3_000);
    transport.generationId = 3;
    transport.streams[0].push(ErrorCode.REBALANCE_IN_PROGRESS); // the next rebalance, on the same stream
    await flush();
    expect(member.generationId).toBe(3);
    await advance(3_000);
    expect(transport.streams).toHaveLength(1);
    expect(transport.streams[0].closed).toBe(false);
    expect(transport.streams[0].sent.map((r) => r.generationId)).toEqual([1, 2, 3]);
    expect(transport.callsOf('joinGroup')).toHaveLength(3);
  });

  it('opens a new stream when JoinGroup gives the member another id', async () => {
    const transport = new StreamingTransport();
    const { advance } = await joined({}, transport);
    await advance(3_000);
    transport.script('joinGroup', { errorCode: ErrorCode.UNKNOWN_MEMBER_ID, memberId: '' });
    transport.assignedMemberId = 'member-2';
    transport.streams[0].push(ErrorCode.REBALANCE_IN_PROGRESS);
    await flush(); // JoinGroup: UNKNOWN_MEMBER_ID, then again with no id: member-2
    expect(transport.streams[0].closed).toBe(true);
    await advance(3_000);
    expect(transport.streams).toHaveLength(2);
    expect(transport.streams[1].sent.map((r) => r.memberId)).toEqual(['member-2']);
  });

  it('rejoins at once on a pushed REBALANCE_IN_PROGRESS, before the next heartbeat is due', async () => {
    const transport = new StreamingTransport();
    const { member, advance } = await joined({}, transport);
    await advance(3_000);
    expect(transport.callsOf('joinGroup')).toHaveLength(1);
    transport.script('joinGroup', 'hang');
    transport.streams[0].push(ErrorCode.REBALANCE_IN_PROGRESS);
    await flush();
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(transport.callsOf('joinGroup')[1].request.memberId).toBe('member-1');
    expect(member.state).toBe('preparing-rebalance');
  });

  it('on a pushed UNKNOWN_MEMBER_ID loses the assignment and rejoins with an empty member id, on a new stream', async () => {
    const transport = new StreamingTransport();
    const { advance, names } = await joined({}, transport);
    await advance(3_000);
    transport.assignedMemberId = 'member-2';
    transport.streams[0].push(ErrorCode.UNKNOWN_MEMBER_ID);
    await flush();
    expect(names()).toEqual(['assigned', 'lost', 'assigned']);
    expect(transport.callsOf('joinGroup')[1].request.memberId).toBe('');
    expect(transport.streams[0].closed).toBe(true);
    await advance(3_000);
    expect(transport.streams).toHaveLength(2);
    expect(transport.streams[1].sent[0].memberId).toBe('member-2');
  });

  it('fails on a pushed FENCED_INSTANCE_ID', async () => {
    const transport = new StreamingTransport();
    const { member, advance, names } = await joined({ groupInstanceId: 'i-1' }, transport);
    await advance(3_000);
    transport.streams[0].push(ErrorCode.FENCED_INSTANCE_ID);
    await flush();
    expect(member.state).toBe('failed');
    expect((member.failure as CohortError).code).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(names()).toEqual(['assigned', 'lost', 'error']);
  });

  it('ignores a push on a stream of a member id it left', async () => {
    const transport = new StreamingTransport();
    const { advance } = await joined({}, transport);
    await advance(3_000);
    const old = transport.streams[0];
    transport.assignedMemberId = 'member-2';
    old.push(ErrorCode.UNKNOWN_MEMBER_ID); // rejoins as member-2: the stream of member-1 is closed
    await flush();
    await advance(3_000);
    expect(transport.streams).toHaveLength(2);
    old.push(ErrorCode.UNKNOWN_MEMBER_ID);
    old.push(ErrorCode.REBALANCE_IN_PROGRESS);
    await flush();
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
  });

  it('leaves a push that comes while JoinGroup is in flight to the JoinGroup answer', async () => {
    const transport = new StreamingTransport();
    const { member, advance } = await joined({}, transport);
    await advance(3_000);
    transport.script('joinGroup', 'hang');
    transport.streams[0].push(ErrorCode.REBALANCE_IN_PROGRESS);
    await flush();
    transport.streams[0].push(ErrorCode.UNKNOWN_MEMBER_ID); // no heartbeats run: nothing is done on it
    await flush();
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(member.state).toBe('preparing-rebalance');
    expect(member.memberId).toBe('member-1');
    expect(transport.streams[0].closed).toBe(false);
  });

  it('falls back to unary heartbeats for good when the server does not serve the stream', async () => {
    const transport = new StreamingTransport();
    transport.endAtOnce = 'unimplemented';
    const { member, advance } = await joined({}, transport);
    await advance(3_000);
    expect(transport.streams).toHaveLength(1);
    expect(transport.callsOf('heartbeat')).toHaveLength(1); // the same tick, unary
    transport.endAtOnce = null;
    await advance(3_000);
    await advance(3_000);
    expect(transport.streams).toHaveLength(1); // never tried again
    expect(transport.callsOf('heartbeat')).toHaveLength(3);
    expect(member.state).toBe('stable');
  });

  it('sends that heartbeat unary when the stream breaks, and reopens a stream at the next one', async () => {
    const transport = new StreamingTransport();
    transport.autoAnswer = null;
    const { member, advance } = await joined({}, transport);
    await advance(3_000);
    transport.streams[0].end(false); // the connection dropped with the heartbeat unanswered
    await flush();
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    transport.autoAnswer = ErrorCode.NONE;
    await advance(3_000);
    expect(transport.streams).toHaveLength(2);
    expect(transport.streams[1].sent).toHaveLength(1);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    expect(member.state).toBe('stable');
  });

  it('times out a heartbeat the stream never answers, closes the stream and retries on a new one', async () => {
    const transport = new StreamingTransport();
    transport.autoAnswer = null;
    const { member, advance } = await joined({ requestTimeoutMs: 5_000 }, transport);
    await advance(3_000);
    transport.autoAnswer = ErrorCode.NONE;
    await advance(4_999);
    expect(transport.streams[0].closed).toBe(false);
    await advance(1);
    expect(transport.streams[0].closed).toBe(true);
    await advance(100); // REQUEST_TIMED_OUT is retriable: backoff, then a new stream
    expect(transport.streams).toHaveLength(2);
    expect(transport.streams[1].sent).toHaveLength(1);
    expect(member.state).toBe('stable');
  });

  it('sends unary heartbeats when heartbeatOverStream is false', async () => {
    const transport = new StreamingTransport();
    const { member, advance } = await joined({ heartbeatOverStream: false }, transport);
    expect(member.options.heartbeatOverStream).toBe(false);
    await advance(3_000);
    expect(transport.streams).toHaveLength(0);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
  });

  it('closes the stream when the member closes', async () => {
    const transport = new StreamingTransport();
    const { member, advance } = await joined({}, transport);
    await advance(3_000);
    await member.close();
    expect(transport.streams[0].closed).toBe(true);
    expect(transport.streamSends).toBe(1);
  });
});
