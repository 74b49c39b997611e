import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Metadata, sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { CohortError, ErrorCode } from '../errors';
import type { RequestContext } from '../group/group-protocol';
import type { BrokerRequestContext } from '../log/broker-protocol';
import { clientHostOf } from './client-host';
import type { NodeAuthenticator } from './node-credentials';
import { NOT_A_NODE } from './node-credentials';
import { statusForError } from './status-for-error';
import { UndecodableRequest } from './undecodable-request';

/** A domain method as the server calls it: decoded request in, response out (or a thrown CohortError). */
export type UnaryMethod<Req, Res> = (request: Req, context: RequestContext) => Promise<Res>;

/**
 * Watches the calls of one method, for metrics. `startCall` runs when a call arrives and returns a mark
 * (a timestamp) that `endCall` gets back when the call is answered, with the ErrorCode it was answered with:
 * the response's top-level `errorCode` (NONE when it has none), the code of a thrown CohortError,
 * UNKNOWN_SERVER_ERROR for anything else, or `undefined` when the caller went away first. Both run on
 * every call, heartbeats included: keep them to a clock read and a few additions.
 */
export interface CallObserver {
  startCall(): number;
  endCall(startMark: number, errorCode: ErrorCode | undefined): void;
}

/** The observer of one method of one service (`cohort.v1.GroupCoordinator`, `Heartbeat`). */
export type CallObservers = (service: string, method: string) => CallObserver;

/** What the adapter needs from a grpc-js unary call (grpc-js's ServerUnaryCall has all of it). */
export interface UnaryCallLike<Req> {
  readonly request: Req | UndecodableRequest;
  readonly cancelled: boolean;
  /** The call's metadata (grpc-js always has it; test doubles may leave it out: then no node credentials). */
  readonly metadata?: Metadata;
  getPeer(): string;
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

const NOTHING_TO_UNREGISTER = (): void => {};

function runListener(listener: () => void, onError: (error: unknown) => void): void {
  try {
    listener();
  } catch (error) {
    onError(error);
  }
}

/**
 * The RequestContext (and BrokerRequestContext) of one call. Most calls (heartbeats) never park and never
 * register a cancel listener; a parked one registers one, rarely two (a listener slot, then a list).
 */
class CallContext implements RequestContext, BrokerRequestContext {
  private host: string | undefined;
  private listener: (() => void) | undefined;
  private moreListeners: (() => void)[] | undefined;
  isAborted = false;

  constructor(
    private readonly call: UnaryCallLike<unknown>,
    /** Set by the unary adapter from the call's node credentials (node-credentials.ts), never by the caller. */
    readonly authenticatedNodeId: number | undefined,
  ) {}

  get clientHost(): string {
    return (this.host ??= clientHostOf(this.call.getPeer()));
  }

  onCancel(listener: () => void): () => void {
    if (this.isAborted) {
      listener();
      return NOTHING_TO_UNREGISTER;
    }
    if (this.listener === undefined) this.listener = listener;
    else (this.moreListeners ??= []).push(listener);
    return () => this.removeCancelListener(listener);
  }

  /** Runs every cancel listener once; one that throws is reported and does not keep the others from running. */
  abort(onListenerError: (error: unknown) => void): void {
    if (this.isAborted) return;
    this.isAborted = true;
    const first = this.listener;
    const more = this.moreListeners;
    this.listener = undefined;
    this.moreListeners = undefined;
    if (first !== undefined) runListener(first, onListenerError);
    if (more !== undefined) for (const listener of more) runListener(listener, onListenerError);
  }

  private removeCancelListener(listener: () => void): void {
    if (this.listener === listener) {
      this.listener = undefined;
      return;
    }
    const more = this.moreListeners;
    const at = more === undefined ? -1 : more.indexOf(listener);
    if (at >= 0) more!.splice(at, 1);
  }
}

/**
 * How a service's calls authenticate nodes: each call's node credentials are checked before anything else;
 * a proven id becomes the context's `authenticatedNodeId`, refused credentials end the call with
 * UNAUTHENTICATED (and `onRefused` hears of it, for the log and metrics).
 */
export interface NodeAuthentication {
  readonly authenticator: NodeAuthenticator;
  onRefused?(method: string, reason: string, peer: string): void;
}

/** The top-level `errorCode` of a response (Heartbeat, JoinGroup, Fetch, ...); NONE for those without one. */
function responseCode(response: unknown): ErrorCode {
  const code = (response as { errorCode?: unknown } | null)?.errorCode;
  return typeof code === 'number' ? (code as ErrorCode) : ErrorCode.NONE;
}

/** By name, not instanceof: DOMException and errors from other realms are not `instanceof Error`. */
function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}

/**
 * Turns `async (request, context) => response` into a grpc-js unary handler. This is the only place calls
 * are answered, and it answers each exactly once:
 * - a response → OK with the response (protocol outcomes ride inside it, in `errorCode`);
 * - a thrown CohortError → its ERROR_TABLE status and message (`statusForError`);
 * - anything else → INTERNAL with a generic message, logged here with its stack;
 * - undecodable request bytes → INVALID_ARGUMENT, without calling the domain;
 * - with `nodes`, node credentials that do not check out → UNAUTHENTICATED, before anything else (as the
 *   token interceptor refuses a wrong token: such a call is not observed).
 * When the call is cancelled or its deadline passes (grpc-js reports both as 'cancelled'), the context's
 * cancel listeners run so the domain can release parked work, and whatever the domain answers later is
 * dropped: nothing is ever sent into a dead call.
 */
export function unaryHandler<Req, Res>(
  method: string,
  logger: Logger,
  handle: UnaryMethod<Req, Res>,
  observer?: CallObserver,
  nodes?: NodeAuthentication,
): (call: UnaryCallLike<Req>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    let nodeId: number | undefined;
    if (nodes !== undefined && call.metadata !== undefined) {
      const proven = nodes.authenticator.authenticate(call.metadata);
      if (typeof proven === 'string') {
        nodes.onRefused?.(method, proven, call.getPeer());
        callback({ code: GrpcStatus.UNAUTHENTICATED, details: proven });
        return;
      }
      if (proven !== NOT_A_NODE) nodeId = proven;
    }
    const startMark = observer === undefined ? 0 : observer.startCall();
    const context = new CallContext(call, nodeId);
    let isAnswered = false;

    const onCancelled = (): void => {
      if (isAnswered) return;
      isAnswered = true;
      context.abort((error) =>
        logger.error({ err: error, method, peer: call.getPeer() }, 'a cancel listener failed'),
      );
      observer?.endCall(startMark, undefined);
    };
    const onResponse = (response: Res): void => {
      if (isAnswered) return;
      isAnswered = true;
      call.removeListener('cancelled', onCancelled);
      callback(null, response);
      observer?.endCall(startMark, responseCode(response));
    };
    const onError = (error: unknown): void => {
      const { status, isUnexpected } = statusForError(error);
      // A domain that gives up because we aborted it is doing as asked; any other surprise is a bug,
      // worth a log line even when the caller has gone.
      if (isUnexpected && !(context.isAborted && isAbortError(error))) {
        logger.error({ err: error, method, peer: call.getPeer() }, 'unexpected error while handling a call');
      }
      if (isAnswered) return;
      isAnswered = true;
      call.removeListener('cancelled', onCancelled);
      callback(status);
      observer?.endCall(
        startMark,
        error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR,
      );
    };

    if (call.cancelled) {
      observer?.endCall(startMark, undefined);
      return;
    }
    const request = call.request;
    if (request instanceof UndecodableRequest) {
      onError(new CohortError(ErrorCode.INVALID_REQUEST, `The request could not be decoded (${method}).`));
      return;
    }
    call.once('cancelled', onCancelled);

    let pending: Promise<Res>;
    try {
      pending = Promise.resolve(handle(request, context));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(onResponse, onError);
  };
}
