import type { Time } from '../time';
import { GroupMember } from './group-member';
import type { GroupMemberOptions } from './group-member-options';
import { GrpcTransport, type TlsOptions } from './grpc-transport';
import type { GroupTransport } from './group-transport';

/** How to reach cohort. */
export interface CohortClientOptions {
  /** `host:port` (e.g. `127.0.0.1:7070`) or `unix:/path/to.sock`. */
  readonly address: string;
  /** Names this application in the coordinator (shown by `cohort groups describe`). */
  readonly clientId: string;
  /** A bearer token, when the server requires one. */
  readonly token?: string;
  /** `true` for TLS with the system's roots; PEM buffers for a private CA or mutual TLS. */
  readonly tls?: boolean | TlsOptions;
  /**
   * Replaces the clock of the members' timers: heartbeats, backoffs, the stall guard and each call's
   * timeout (tests pass a `ManualTime`). The gRPC channel's own deadlines stay on real time.
   */
  readonly time?: Time;
  /** Replaces the gRPC transport (tests, or another way to reach the coordinator). */
  readonly transport?: GroupTransport & { close?(): void };
}

/** What `CohortClient.join` takes: the member options without `clientId`, which the client supplies. */
export type JoinOptions = Omit<GroupMemberOptions, 'clientId'>;

/**
 * The entry point of the SDK: one gRPC channel to a cohort server, shared by every group member made from
 * it. Consumers and producers over Fetch/Produce will hang off the same client once the log service exists.
 *
 * ```ts
 * const client = new CohortClient({ address: '127.0.0.1:7070', clientId: 'billing' });
 * const member = client.join({ groupId: 'billing', topics: ['orders'], partitionsPerTopic: new Map([['orders', 12]]) });
 * // ...
 * await client.close();
 * ```
 */
export class CohortClient {
  /** The transport every member of this client talks through. */
  readonly transport: GroupTransport;
  readonly clientId: string;
  private readonly time: Time | undefined;
  private readonly closeTransport: () => void;
  private readonly members = new Set<GroupMember>();
  private closing: Promise<void> | null = null;

  constructor(options: CohortClientOptions) {
    if (typeof options.clientId !== 'string' || options.clientId === '') {
      throw new RangeError(
        'clientId must be a non-empty string: it names this application to the coordinator',
      );
    }
    this.clientId = options.clientId;
    this.time = options.time;
    if (options.transport !== undefined) {
      const transport = options.transport;
      this.transport = transport;
      this.closeTransport = () => transport.close?.();
    } else {
      const transport = new GrpcTransport({
        address: options.address,
        ...(options.token !== undefined ? { token: options.token } : {}),
        ...(options.tls !== undefined ? { tls: options.tls } : {}),
        // Not `time`: a gRPC deadline is a moment on the real wall clock, and a ManualTime's wall clock stands
        // still in the past, so every call would expire before it was sent. The member already times each
        // call out on `time`.
      });
      this.transport = transport;
      this.closeTransport = () => transport.close();
    }
  }

  /**
   * Joins a group: returns a `GroupMember` that starts joining on the next microtask (attach listeners now)
   * and keeps its membership alive until `member.close()` or `client.close()`.
   */
  join(options: JoinOptions): GroupMember {
    if (this.closing !== null) throw new Error('CohortClient is closed');
    const member = new GroupMember(
      { ...options, clientId: this.clientId },
      { transport: this.transport, ...(this.time !== undefined ? { time: this.time } : {}) },
    );
    this.members.add(member);
    member.once('closed', () => this.members.delete(member));
    return member;
  }

  /**
   * Closes every member still open (each as `member.close()` does, within its own deadline), then the
   * channel. Safe to call more than once.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.members].map((member) => member.close()));
      this.closeTransport();
    })();
    return this.closing;
  }
}
