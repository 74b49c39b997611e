import type { ServerDuplexStream, StatusObject } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { CohortError, ErrorCode } from '../errors';
import type {
  GenerationWatcher,
  GroupCoordinatorService,
  HeartbeatRequest,
  HeartbeatStreamResponse,
  RequestContext,
} from '../group/group-protocol';
import { clientHostOf } from './client-host';
import { statusForError } from './status-for-error';
import type { CallObserver } from './unary-handler';
import { UndecodableRequest } from './undecodable-request';

/** What the adapter needs from a grpc-js bidi call (grpc-js's ServerDuplexStream has all of it). */
export type HeartbeatStreamCall = ServerDuplexStream<
  HeartbeatRequest | UndecodableRequest,
  HeartbeatStreamResponse
>;

/**
 * Every open HeartbeatStream of one server. A stream has no natural end (a member heartbeats for as long as
 * it lives), so grpc-js's tryShutdown would wait on it for the whole grace period: close() ends them here
 * instead, each with OK once the answers it owes are written.
 */
export class HeartbeatStreams {
  private readonly open = new Set<HeartbeatStream>();
  private isClosed = false;

  get size(): number {
    return this.open.size;
  }

  /** @internal Called by a stream as it opens; false when the server is closing (the stream ends at once). */
  add(stream: HeartbeatStream): boolean {
    if (this.isClosed) return false;
    this.open.add(stream);
    return true;
  }

  /** @internal */
  delete(stream: HeartbeatStream): void {
    this.open.delete(stream);
  }

  /** Ends every open stream (and any opened from now on) with OK. Idempotent. */
  endAll(): void {
    this.isClosed = true;
    for (const stream of [...this.open]) stream.endAfterAnswers(undefined);
  }
}

/**
 * One member's heartbeat stream: the RequestContext of each of its heartbeats, and the member's
 * GenerationWatcher. Heartbeats go through the coordinator's unary heartbeat (same checks, same codes);
 * they are handled one after another, so answers leave in request order and carry the request's position.
 * Pushes (sequence 0) are written the moment the coordinator reports a change.
 */
class HeartbeatStream implements RequestContext, GenerationWatcher {
  /** The coordinator puts this stream in the member's watcher slot on each valid heartbeat. */
  readonly generationWatcher: GenerationWatcher = this;
  private host: string | undefined;
  private groupId: string | undefined;
  private memberId = '';
  private groupInstanceId = '';
  private received = 0;
  /** The last answer still to be written: each heartbeat waits for the one before it. */
  private tail: Promise<void> = Promise.resolve();
  /** Set once the stream has decided to end: later requests are ignored, owed answers still go out. */
  private isClosing = false;
  private isEnded = false;

  constructor(
    private readonly call: HeartbeatStreamCall,
    private readonly coordinator: GroupCoordinatorService,
    private readonly streams: HeartbeatStreams,
    private readonly logger: Logger,
    private readonly method: string,
    private readonly observer: CallObserver | undefined,
  ) {}

  get clientHost(): string {
    return (this.host ??= clientHostOf(this.call.getPeer()));
  }

  open(): void {
    if (this.call.cancelled) return;
    if (!this.streams.add(this)) {
      this.end(undefined);
      return;
    }
    this.call.on('data', (request: HeartbeatRequest | UndecodableRequest) => this.onRequest(request));
    // The member half-closed: answer what it sent, then end with OK.
    this.call.on('end', () => this.endAfterAnswers(undefined));
    // Cancelled, deadline passed or connection lost: nothing more can be written. The member stays.
    this.call.on('cancelled', () => this.end(undefined));
  }

  onGenerationOver(errorCode: ErrorCode): void {
    if (this.isEnded) return;
    this.call.write({ errorCode, sequence: 0 });
  }

  private onRequest(request: HeartbeatRequest | UndecodableRequest): void {
    if (this.isClosing || this.isEnded) return;
    if (request instanceof UndecodableRequest) {
      this.failAfterAnswers(
        new CohortError(ErrorCode.INVALID_REQUEST, `A request could not be decoded (${this.method}).`),
      );
      return;
    }
    if (this.groupId === undefined) {
      this.groupId = request.groupId;
      this.memberId = request.memberId;
      this.groupInstanceId = request.groupInstanceId;
    } else if (
      request.groupId !== this.groupId ||
      request.memberId !== this.memberId ||
      request.groupInstanceId !== this.groupInstanceId
    ) {
      this.failAfterAnswers(
        new CohortError(
          ErrorCode.INVALID_REQUEST,
          'A heartbeat stream carries one member: its first request fixes group_id, member_id and ' +
            'group_instance_id; open a new stream for other ids.',
        ),
      );
      return;
    }
    const sequence = ++this.received;
    const startMark = this.observer === undefined ? 0 : this.observer.startCall();
    this.tail = this.tail.then(() => this.heartbeat(request, sequence, startMark));
  }

  private async heartbeat(request: HeartbeatRequest, sequence: number, startMark: number): Promise<void> {
    if (this.isEnded) {
      this.observer?.endCall(startMark, undefined);
      return;
    }
    let errorCode: ErrorCode;
    try {
      errorCode = (await this.coordinator.heartbeat(request, this)).errorCode;
    } catch (error) {
      this.observer?.endCall(
        startMark,
        error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR,
      );
      this.fail(error);
      return;
    }
    if (this.isEnded) {
      this.observer?.endCall(startMark, undefined);
      return;
    }
    this.call.write({ errorCode, sequence });
    this.observer?.endCall(startMark, errorCode);
  }

  private failAfterAnswers(error: CohortError): void {
    // Stop taking requests now; the answers already owed still go out, in order, before the status.
    this.isClosing = true;
    this.tail = this.tail.then(() => this.fail(error));
  }

  private fail(error: unknown): void {
    const { status, isUnexpected } = statusForError(error);
    if (isUnexpected) {
      this.logger.error(
        { err: error, method: this.method, peer: this.call.getPeer() },
        'unexpected error while handling a call',
      );
    }
    this.end(status);
  }

  /** Ends the stream once every heartbeat received so far is answered. */
  endAfterAnswers(status: StatusObject | undefined): void {
    if (this.isEnded || this.isClosing) return;
    this.isClosing = true;
    this.tail = this.tail.then(() => this.end(status));
  }

  /**
   * The one way a stream ends: with `status`, or OK. The member is left as it is — a closed stream changes
   * nothing, its session timeout decides — only the watcher slot is emptied.
   */
  private end(status: StatusObject | undefined): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.streams.delete(this);
    if (this.groupId !== undefined) {
      this.coordinator.unwatchMember?.(this.groupId, this.memberId, this);
    }
    if (this.call.cancelled) return;
    if (status === undefined) this.call.end();
    else this.call.emit('error', status);
  }
}

/**
 * cohort.v1.GroupCoordinator/HeartbeatStream over grpc-js. `observer` sees each heartbeat on the stream
 * as one call (arrival to answer), so its latency series matches the unary Heartbeat's.
 */
export function heartbeatStreamHandler(
  method: string,
  coordinator: GroupCoordinatorService,
  streams: HeartbeatStreams,
  logger: Logger,
  observer?: CallObserver,
): (call: HeartbeatStreamCall) => void {
  return (call) => new HeartbeatStream(call, coordinator, streams, logger, method, observer).open();
}
