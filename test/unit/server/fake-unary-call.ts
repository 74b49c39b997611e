import { EventEmitter } from 'node:events';
import type { Metadata, StatusObject, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { UnaryCallLike } from '../../../src/server';
import type { UndecodableRequest } from '../../../src/server/undecodable-request';

export interface Reply<Res> {
  readonly error: Partial<StatusObject> | null;
  readonly response: Res | null | undefined;
}

/**
 * A grpc-js unary call without a socket: `cancel()` does what grpc-js does when the client cancels or the
 * deadline passes (sets `cancelled`, emits 'cancelled'), and `replies` records every callback invocation.
 */
export class FakeUnaryCall<Req, Res = unknown> extends EventEmitter implements UnaryCallLike<Req> {
  cancelled = false;
  readonly replies: Reply<Res>[] = [];
  /** The request's metadata, as grpc-js hands it to the handler; none unless a test gives some. */
  metadata?: Metadata;

  constructor(
    readonly request: Req | UndecodableRequest,
    private readonly peer = '127.0.0.1:50123',
  ) {
    super();
  }

  getPeer(): string {
    return this.peer;
  }

  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled', 'cancelled');
  }

  readonly callback = (error: Partial<StatusObject> | null, response?: Res | null): void => {
    this.replies.push({ error, response });
  };
}

/** Lets every pending promise callback run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export type FakeHandler = (
  call: FakeUnaryCall<unknown>,
  callback: FakeUnaryCall<unknown>['callback'],
) => void;

/** A service's unary handler, callable with a FakeUnaryCall (grpc-js types it for every call kind). */
export function unaryOf(service: UntypedServiceImplementation, method: string): FakeHandler {
  return service[method] as unknown as FakeHandler;
}
