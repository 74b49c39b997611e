import { EventEmitter } from 'node:events';
import type { StatusObject } from '@grpc/grpc-js';
import type { HeartbeatStreamResponse } from '../../src/group/group-protocol';

/**
 * The parts of a grpc-js ServerDuplexStream that the HeartbeatStream handler uses, recording what it is told;
 * `onWrite` sees each message as it is written (a test tags it with the moment).
 */
export class FakeDuplexCall extends EventEmitter {
  readonly written: HeartbeatStreamResponse[] = [];
  readonly statuses: (StatusObject | 'OK')[] = [];
  cancelled = false;

  getPeer(): string {
    return '127.0.0.1:5000';
  }

  constructor(private readonly onWrite?: (message: HeartbeatStreamResponse) => void) {
    super();
    this.on('error', (error: StatusObject) => this.statuses.push(error));
  }

  write(message: HeartbeatStreamResponse): boolean {
    this.written.push(message);
    this.onWrite?.(message);
    return true;
  }

  end(): void {
    this.statuses.push('OK');
  }

  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled');
  }
}
