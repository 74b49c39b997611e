import { ErrorCode } from '../../../../src/errors';
import { CohortError } from '../../../../src/errors';
import { decodeSubscription, encodeAssignment } from '../../../../src/client/consumer-protocol';
import type * as m from '../../../../src/protocol/group-messages';
import type { CallOptions, GroupTransport } from '../../../../src/client/group-transport';

type Method = Exclude<keyof GroupTransport, 'openHeartbeatStream' | 'onCoordinatorFound'>;
type RequestOf<K extends Method> = Parameters<GroupTransport[K]>[0];
type ResponseOf<K extends Method> = Awaited<ReturnType<GroupTransport[K]>>;

/** A deferred reply: the test answers it later (or the caller's signal aborts it). */
export class Held<R> {
  resolve!: (response: Partial<R>) => void;
  reject!: (error: unknown) => void;
  settled = false;
}

/**
 * What the transport does with one call: answer with (a partial of) a response, reject with an error,
 * `'hang'` until the caller aborts, or hand a `Held` to the test. A function computes it from the request.
 */
export type Reply<K extends Method> =
  | Partial<ResponseOf<K>>
  | CohortError
  | 'hang'
  | Held<ResponseOf<K>>
  | ((request: RequestOf<K>) => Partial<ResponseOf<K>> | CohortError | 'hang');

export interface RecordedCall<K extends Method = Method> {
  readonly method: K;
  readonly request: RequestOf<K>;
  readonly options: CallOptions;
}

/**
 * A GroupTransport for unit tests: records every call and answers from a per-method script, falling back to
 * a coordinator for a one-member group in which the caller leads (MEMBER_ID_REQUIRED is not used unless
 * scripted). Answers are promises, so the member sees them after a microtask, as with a real network.
 */
export class ScriptedTransport implements GroupTransport {
  readonly calls: RecordedCall[] = [];
  private readonly scripts = new Map<Method, Reply<Method>[]>();
  generationId = 1;
  assignedMemberId = 'member-1';

  /** Queues replies for the next calls of `method`, in order. */
  script<K extends Method>(method: K, ...replies: Reply<K>[]): this {
    const queue = this.scripts.get(method) ?? [];
    queue.push(...(replies as Reply<Method>[]));
    this.scripts.set(method, queue);
    return this;
  }

  /** Calls of one method, oldest first. */
  callsOf<K extends Method>(method: K): RecordedCall<K>[] {
    return this.calls.filter((c) => c.method === method) as RecordedCall<K>[];
  }

  joinGroup(request: m.JoinGroupRequest, options: CallOptions): Promise<m.JoinGroupResponse> {
    return this.answer('joinGroup', request, options, () => {
      const memberId = request.memberId || this.assignedMemberId;
      return {
        errorCode: ErrorCode.NONE,
        generationId: this.generationId,
        protocolType: request.protocolType,
        protocolName: request.protocols[0]?.name ?? '',
        leaderId: memberId,
        memberId,
        members: [
          { memberId, groupInstanceId: request.groupInstanceId, metadata: request.protocols[0].metadata },
        ],
        skipAssignment: false,
      };
    });
  }

  syncGroup(request: m.SyncGroupRequest, options: CallOptions): Promise<m.SyncGroupResponse> {
    return this.answer('syncGroup', request, options, () => ({
      errorCode: ErrorCode.NONE,
      protocolType: request.protocolType,
      protocolName: request.protocolName,
      assignment:
        request.assignments.find((a) => a.memberId === request.memberId)?.assignment ??
        encodeAssignment({ partitions: [] }),
    }));
  }

  heartbeat(request: m.HeartbeatRequest, options: CallOptions): Promise<m.HeartbeatResponse> {
    return this.answer('heartbeat', request, options, () => ({ errorCode: ErrorCode.NONE }));
  }

  leaveGroup(request: m.LeaveGroupRequest, options: CallOptions): Promise<m.LeaveGroupResponse> {
    return this.answer('leaveGroup', request, options, () => ({
      errorCode: ErrorCode.NONE,
      members: request.members.map((x) => ({ ...x, errorCode: ErrorCode.NONE })),
    }));
  }

  offsetCommit(request: m.OffsetCommitRequest, options: CallOptions): Promise<m.OffsetCommitResponse> {
    return this.answer('offsetCommit', request, options, () => ({
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: ErrorCode.NONE,
        })),
      })),
    }));
  }

  offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    return this.answer('offsetFetch', request, options, () => ({ errorCode: ErrorCode.NONE, topics: [] }));
  }

  private answer<K extends Method>(
    method: K,
    request: RequestOf<K>,
    options: CallOptions,
    fallback: () => ResponseOf<K>,
  ): Promise<ResponseOf<K>> {
    this.calls.push({ method, request, options } as RecordedCall);
    let reply = (this.scripts.get(method)?.shift() as Reply<K> | undefined) ?? null;
    if (typeof reply === 'function') reply = reply(request);
    const full = (partial: Partial<ResponseOf<K>>): ResponseOf<K> => ({ ...fallback(), ...partial });
    if (reply === null) return Promise.resolve(fallback());
    if (reply instanceof CohortError) return Promise.reject(reply);
    if (reply === 'hang' || reply instanceof Held) {
      const held = reply instanceof Held ? reply : new Held<ResponseOf<K>>();
      return new Promise<ResponseOf<K>>((resolve, reject) => {
        held.resolve = (partial) => {
          held.settled = true;
          resolve(full(partial));
        };
        held.reject = (error) => {
          held.settled = true;
          reject(error);
        };
        options.signal?.addEventListener('abort', () =>
          reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'cancelled')),
        );
      });
    }
    return Promise.resolve(full(reply as Partial<ResponseOf<K>>));
  }
}

/** Lets every pending promise chain run (a few event-loop turns; no time passes on any clock we read). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** The subscription a JoinGroup carried. */
export function subscriptionOf(request: m.JoinGroupRequest) {
  return decodeSubscription(request.protocols[0].metadata);
}
