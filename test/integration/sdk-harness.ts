import { EventEmitter } from 'node:events';
import {
  CohortClient,
  CohortError,
  ErrorCode,
  GrpcTransport,
  startServer,
  type CallOptions,
  type GroupMember,
  type GroupMemberEvents,
  type GroupTransport,
  type HeartbeatStream,
  type JoinOptions,
  type ManualClockServer,
  type StartServerOptions,
  type TopicPartition,
} from '../../src';
import type { GroupCoordinatorClient } from '../support/grpc-clients';
import { groupCoordinatorClient } from '../support/grpc-clients';

/**
 * What the SDK integration tests share: a real cohort server started through the package entry point, real
 * `CohortClient`s talking gRPC to it, and a transport wrapper that lets a test see every call's outcome and
 * hold calls of one kind (a network that drops heartbeats, a commit that arrives late) without faking any
 * answer. Tests await events and outcomes, never durations.
 */

type Method = Exclude<keyof GroupTransport, 'openHeartbeatStream' | 'onCoordinatorFound'>;

/** One call's end: the coordinator's error code, or the CohortError the transport rejected with. */
export interface Outcome {
  readonly method: Method;
  readonly request: unknown;
  /** The response's `errorCode` (for OffsetCommit, the first partition's); absent when it rejected. */
  readonly code?: ErrorCode;
  readonly error?: CohortError;
  /** A heartbeat sent on a HeartbeatStream rather than as a unary call. */
  readonly overStream?: true;
}

/**
 * A GrpcTransport that reports every outcome and can hold calls. A held call is not sent until `release`;
 * if the member aborts it meanwhile it rejects, as a cancelled gRPC call does. With `heartbeatStreams` it
 * also opens HeartbeatStreams (otherwise its members heartbeat unary): their heartbeats are outcomes of
 * `heartbeat` and held with them, and every push is recorded in `pushes`.
 */
export class ObservedTransport
  extends EventEmitter<{ outcome: [Outcome]; held: [Method] }>
  implements GroupTransport
{
  readonly outcomes: Outcome[] = [];
  private readonly grpc: GrpcTransport;
  private readonly holding = new Map<Method, (() => void)[]>();
  private readonly inFlight = new Map<Method, Set<AbortController>>();
  /** The codes pushed on this transport's heartbeat streams, in order. */
  readonly pushes: ErrorCode[] = [];
  readonly openHeartbeatStream?: GroupTransport['openHeartbeatStream'];

  constructor(address: string, options: { heartbeatStreams?: boolean } = {}) {
    super();
    this.grpc = new GrpcTransport({ address });
    if (options.heartbeatStreams === true) this.openHeartbeatStream = (onPush) => this.observeStream(onPush);
  }

  private observeStream(onPush: (code: ErrorCode) => void): HeartbeatStream {
    const stream = this.grpc.openHeartbeatStream((code) => {
      this.pushes.push(code);
      onPush(code);
    });
    const send = (request: Parameters<HeartbeatStream['send']>[0]): Promise<ErrorCode> => {
      const forward = (): Promise<ErrorCode> =>
        stream.send(request).then(
          (code) => {
            this.record({ method: 'heartbeat', request, code, overStream: true });
            return code;
          },
          (error: CohortError) => {
            this.record({ method: 'heartbeat', request, error, overStream: true });
            throw error;
          },
        );
      const held = this.holding.get('heartbeat');
      if (held === undefined) return forward();
      return new Promise<ErrorCode>((resolve, reject) => {
        held.push(() => void forward().then(resolve, reject));
        this.emit('held', 'heartbeat');
      });
    };
    return {
      send,
      close: () => stream.close(),
      get unsupported() {
        return stream.unsupported;
      },
    };
  }

  joinGroup: GroupTransport['joinGroup'] = (request, options) => this.send('joinGroup', request, options);
  syncGroup: GroupTransport['syncGroup'] = (request, options) => this.send('syncGroup', request, options);
  heartbeat: GroupTransport['heartbeat'] = (request, options) => this.send('heartbeat', request, options);
  leaveGroup: GroupTransport['leaveGroup'] = (request, options) => this.send('leaveGroup', request, options);
  offsetCommit: GroupTransport['offsetCommit'] = (request, options) =>
    this.send('offsetCommit', request, options);
  offsetFetch: GroupTransport['offsetFetch'] = (request, options) =>
    this.send('offsetFetch', request, options);

  /** From now on, calls of `method` wait (unsent) until `release(method)`. */
  hold(method: Method): void {
    if (!this.holding.has(method)) this.holding.set(method, []);
  }

  /** Sends every held call of `method`, in order, and stops holding. Returns how many were held. */
  release(method: Method): number {
    const held = this.holding.get(method) ?? [];
    this.holding.delete(method);
    for (const send of held) send();
    return held.length;
  }

  /**
   * Cancels every call of `method` in flight, as a proxy or a dropped stream would: the server sees the call
   * cancelled and the member gets gRPC CANCELLED, which it did not ask for. Returns how many were cancelled.
   */
  cancel(method: Method): number {
    const calls = [...(this.inFlight.get(method) ?? [])];
    for (const controller of calls) controller.abort();
    return calls.length;
  }

  /** How many calls of `method` are held right now. */
  heldCount(method: Method): number {
    return this.holding.get(method)?.length ?? 0;
  }

  /** Resolves with the first outcome from now on that matches. */
  next(method: Method, matches: (outcome: Outcome) => boolean = () => true): Promise<Outcome> {
    return new Promise((resolve) => {
      const listener = (outcome: Outcome): void => {
        if (outcome.method !== method || !matches(outcome)) return;
        this.off('outcome', listener);
        resolve(outcome);
      };
      this.on('outcome', listener);
    });
  }

  /** Resolves once `count` calls of `method` are held. */
  heldUntil(method: Method, count = 1): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.heldCount(method) < count) return;
        this.off('held', check);
        resolve();
      };
      this.on('held', check);
      check();
    });
  }

  close(): void {
    for (const method of [...this.holding.keys()]) this.holding.delete(method);
    this.grpc.close();
  }

  private send<Req, Res extends object>(method: Method, request: Req, options: CallOptions): Promise<Res> {
    const forward = (): Promise<Res> => {
      // The member's signal still cancels the call; `cancel(method)` can now cancel it too.
      const controller = new AbortController();
      const onAbort = (): void => controller.abort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      let calls = this.inFlight.get(method);
      if (calls === undefined) this.inFlight.set(method, (calls = new Set()));
      calls.add(controller);
      const done = (): void => {
        calls.delete(controller);
        options.signal?.removeEventListener('abort', onAbort);
      };
      const send = this.grpc[method] as (rq: Req, o: CallOptions) => Promise<Res>;
      return send.call(this.grpc, request, { timeoutMs: options.timeoutMs, signal: controller.signal }).then(
        (response) => {
          done();
          const code = codeOf(response);
          this.record({ method, request, ...(code !== undefined ? { code } : {}) });
          return response;
        },
        (error: CohortError) => {
          done();
          this.record({ method, request, error });
          throw error;
        },
      );
    };
    const held = this.holding.get(method);
    if (held === undefined) return forward();
    return new Promise<Res>((resolve, reject) => {
      const onAbort = (): void => {
        const index = held.indexOf(go);
        if (index >= 0) held.splice(index, 1);
        reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, `${method} was cancelled while held`));
      };
      const go = (): void => {
        options.signal?.removeEventListener('abort', onAbort);
        if (options.signal?.aborted) return onAbort();
        forward().then(resolve, reject);
      };
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      held.push(go);
      this.emit('held', method);
    });
  }

  private record(outcome: Outcome): void {
    this.outcomes.push(outcome);
    this.emit('outcome', outcome);
  }
}

function codeOf(response: object): ErrorCode | undefined {
  if ('errorCode' in response) return response.errorCode as ErrorCode;
  const topics = (response as { topics?: { partitions: { errorCode: ErrorCode }[] }[] }).topics;
  return topics?.[0]?.partitions[0]?.errorCode;
}

/** A client as one application process has it: its channel, observed. */
export interface TestClient {
  readonly client: CohortClient;
  readonly transport: ObservedTransport;
  /** Joins with the harness's defaults under `options`; the member's `error` events are collected. */
  join(options: Partial<JoinOptions> & { groupId: string }): GroupMember;
}

/** Member defaults: quick heartbeats in real time; sessions that only the server's manual clock can end. */
export const MEMBER_DEFAULTS = Object.freeze({
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 10_000,
  heartbeatIntervalMs: 50,
  retryBackoffMs: 20,
  retryBackoffMaxMs: 100,
  closeTimeoutMs: 5_000,
});

export class SdkHarness {
  /** Errors any member emitted; tests expect none unless they say otherwise. */
  readonly errors: Error[] = [];
  private readonly clients: TestClient[] = [];
  private admin: GroupCoordinatorClient | undefined;
  private groupCounter = 0;

  private constructor(readonly server: ManualClockServer) {}

  /** A server on the manual clock: no session or rebalance timeout passes unless the test advances it. */
  static async start(options: Omit<StartServerOptions, 'manualClock'> = {}): Promise<SdkHarness> {
    const server = await startServer({ groupInitialRebalanceDelayMs: 0, ...options, manualClock: true });
    return new SdkHarness(server);
  }

  get address(): string {
    return this.server.address;
  }

  /** A group id no other test uses. */
  groupId(name: string): string {
    return `sdk-${name}-${process.pid}-${++this.groupCounter}`;
  }

  /** A client whose members heartbeat unary, or over HeartbeatStreams with `heartbeatStreams`. */
  newClient(clientId = 'sdk-test', options: { heartbeatStreams?: boolean } = {}): TestClient {
    const transport = new ObservedTransport(this.address, options);
    const client = new CohortClient({ address: this.address, clientId, transport });
    const testClient: TestClient = {
      client,
      transport,
      join: (options) => {
        const member = client.join({ topics: [], ...MEMBER_DEFAULTS, ...options });
        member.on('error', (error) => this.errors.push(error));
        return member;
      },
    };
    this.clients.push(testClient);
    return testClient;
  }

  /** DescribeGroups over a separate channel (what an operator's tool sees). */
  async describe(groupId: string): Promise<{ state: string; memberIds: string[] }> {
    this.admin ??= groupCoordinatorClient(this.address);
    const group = (await this.admin.describeGroups({ groups: [groupId] })).groups[0];
    return { state: group.groupState, memberIds: group.members.map((m) => m.memberId).sort() };
  }

  /** Waits, one DescribeGroups round trip at a time, until `groupId` is in `state` with `members` members. */
  async groupReaches(groupId: string, state: string, members: number): Promise<void> {
    for (;;) {
      const described = await this.describe(groupId);
      if (described.state === state && described.memberIds.length === members) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Closes every client (and so every member), then the admin channel and the server. */
  async close(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((c) => c.client.close()));
    this.admin?.close();
    await this.server.close();
  }
}

/** Starts a harness that is closed in afterEach and exposes it to the tests through `get()`. */
export function useHarness(options: Omit<StartServerOptions, 'manualClock'> = {}): () => SdkHarness {
  let harness: SdkHarness | undefined;
  beforeEach(async () => {
    harness = await SdkHarness.start(options);
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return () => harness as SdkHarness;
}

/**
 * The next `name` event of `member` for which `matches` holds. Rejects if the member fails or closes
 * first, so a test never waits on a member that has stopped.
 */
export function nextEvent<K extends 'assigned' | 'revoked' | 'lost'>(
  member: GroupMember,
  name: K,
  matches: (...args: GroupMemberEvents[K]) => boolean = () => true,
): Promise<GroupMemberEvents[K][0]> {
  return new Promise((resolve, reject) => {
    const listener = (...args: GroupMemberEvents[K]): void => {
      if (!matches(...args)) return;
      cleanup();
      resolve(args[0]);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new Error(`the member failed while a test waited for '${name}'`, { cause: error }));
    };
    const onClosed = (): void => {
      cleanup();
      reject(new Error(`the member closed while a test waited for '${name}'`));
    };
    const cleanup = (): void => {
      (member.off as (n: K, l: typeof listener) => void)(name, listener);
      member.off('error', onError);
      member.off('closed', onClosed);
    };
    (member.on as (n: K, l: typeof listener) => void)(name, listener);
    member.on('error', onError);
    member.on('closed', onClosed);
  });
}

/** `topic`'s partitions 0 .. count-1. */
export function partitionsOf(topic: string, count: number): TopicPartition[] {
  return Array.from({ length: count }, (_, partition) => ({ topic, partition }));
}

export function keys(partitions: readonly TopicPartition[] | null): string[] {
  return (partitions ?? []).map((tp) => `${tp.topic}-${tp.partition}`).sort();
}

/**
 * Whether `members` form one stable generation that hands out each of `partitions` exactly once. A member
 * that still has to give partitions away (a cooperative follow-up) leaves some unassigned, so it is not.
 */
export function isSettled(members: readonly GroupMember[], partitions: readonly TopicPartition[]): boolean {
  const generationId = members[0]?.generationId;
  if (generationId === undefined || generationId < 0) return false;
  if (!members.every((m) => m.state === 'stable' && m.generationId === generationId)) return false;
  const assigned = members.flatMap((m) => keys(m.assignment));
  return assigned.length === partitions.length && keys(partitions).join() === assigned.sort().join();
}

/** Resolves once `members` are settled (see isSettled), re-checking after every event any of them emits. */
export function settled(
  members: readonly GroupMember[],
  partitions: readonly TopicPartition[],
): Promise<number> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!isSettled(members, partitions)) return;
      cleanup();
      resolve(members[0].generationId);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new Error('a member failed while the group settled', { cause: error }));
    };
    const cleanup = (): void => {
      for (const m of members) {
        m.off('assigned', check);
        m.off('error', onError);
      }
    };
    for (const m of members) {
      m.on('assigned', check);
      m.on('error', onError);
    }
    check();
  });
}
