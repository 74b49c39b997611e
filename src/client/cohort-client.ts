import type { Time } from '../time';
import type { BrokerTransport } from './broker-transport';
import { CohortAdmin, type CohortAdminOptions } from './cohort-admin';
import type { GroupWatch, WatchGroupsOptions } from './group-watch';
import { Consumer } from './consumer';
import type { ConsumerOptions } from './consumer-options';
import type { GroupAdminTransport } from './group-admin-transport';
import { GroupMember } from './group-member';
import type { GroupMemberOptions } from './group-member-options';
import { ClusterTransport } from './cluster-transport';
import type { CoordinatorNode } from './coordinator-cache';
import { GrpcTransport, type TlsOptions } from './grpc-transport';
import { bootstrapAddresses } from './node-address';
import type { GroupTransport } from './group-transport';
import { Producer } from './producer';
import type { ProducerOptions } from './producer-options';

/**
 * What `CohortClientOptions.transport` may be: a `GroupTransport` for members, and for consumers, producers
 * and the admin client also the `BrokerTransport` and `GroupAdminTransport` methods (`GrpcTransport` has all).
 */
export type ClientTransport = GroupTransport &
  Partial<BrokerTransport> &
  Partial<GroupAdminTransport> & { close?(): void; waitForServer?(timeoutMs: number): Promise<void> };

/** How to reach cohort. */
export interface CohortClientOptions {
  /**
   * One node to start from: `host:port` (e.g. `127.0.0.1:7070`) or `unix:/path/to.sock`. The same as
   * `bootstrap: [address]`; give one or the other.
   */
  readonly address?: string;
  /**
   * Nodes to start from (`['10.0.0.1:7070', '10.0.0.2:7070']`): the client asks them for the cluster's
   * nodes (Metadata) and each group's coordinator (FindCoordinator), then talks to each node directly, one
   * connection per node, opened when first needed. Any one of them answering is enough.
   */
  readonly bootstrap?: readonly string[];
  /** Names this application in the coordinator (shown by `cohort groups describe`). */
  readonly clientId: string;
  /** A bearer token, when the server requires one. */
  readonly token?: string;
  /** `true` for TLS with the system's roots; PEM buffers for a private CA or mutual TLS. */
  readonly tls?: boolean | TlsOptions;
  /**
   * Replaces the clock of the members', consumers' and producers' timers: heartbeats, backoffs, lingering,
   * the stall guard and each call's timeout (tests pass a `ManualTime`). The gRPC channel's own deadlines
   * stay on real time.
   */
  readonly time?: Time;
  /** Replaces the gRPC transport (tests, or another way to reach the server). */
  readonly transport?: ClientTransport;
}

/** What `CohortClient.join` takes: the member options without `clientId`, which the client supplies. */
export type JoinOptions = Omit<GroupMemberOptions, 'clientId'>;

/**
 * The entry point of the SDK: connections to a cohort cluster (one per node, or the one server), shared by
 * everything made from it — consumers, producers, bare group members and the admin client. Each group's
 * calls go to its coordinator and each partition's to its leader (docs/sdk.md, "Clusters").
 *
 * ```ts
 * const client = new CohortClient({ address: '127.0.0.1:7070', clientId: 'billing' });
 * const consumer = client.consumer({ groupId: 'billing', topics: ['orders'] });
 * void consumer.run({ eachMessage: async ({ message }) => bill(message.value) });
 * const producer = client.producer({ acks: -1 });
 * await producer.send({ topic: 'orders', key: 'customer-7', value: 'order 1' });
 * // ...
 * await client.close(); // closes the consumer (committing), the producer (flushing), then the channel
 * ```
 */
export class CohortClient {
  /** The transport everything made from this client talks through. */
  readonly transport: ClientTransport;
  /** Names this application in the coordinator. */
  readonly clientId: string;
  private readonly time: Time | undefined;
  private readonly closeTransport: () => void;
  private readonly members = new Set<GroupMember>();
  private readonly consumers = new Set<Consumer>();
  private readonly producers = new Set<Producer>();
  private _admin: CohortAdmin | null = null;
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
      const bootstrap = bootstrapAddresses(options);
      const transport = new ClusterTransport({
        bootstrap,
        connect: (address) =>
          new GrpcTransport({
            address,
            ...(options.token !== undefined ? { token: options.token } : {}),
            ...(options.tls !== undefined ? { tls: options.tls } : {}),
            // Not `time`: a gRPC deadline is a moment on the real wall clock, and a ManualTime's wall clock
            // stands still in the past, so every call would expire before it was sent. The member already
            // times each call out on `time`.
          }),
        ...(options.time !== undefined ? { time: options.time } : {}),
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
    this.checkOpen();
    const member = new GroupMember(
      { ...options, clientId: this.clientId },
      { transport: this.transport, ...(this.time !== undefined ? { time: this.time } : {}) },
    );
    this.members.add(member);
    member.once('closed', () => this.members.delete(member));
    return member;
  }

  /**
   * A consumer in group `options.groupId`: it joins when its `run` is called. `client.close()` closes it.
   */
  consumer(options: ConsumerOptions): Consumer {
    this.checkOpen();
    const consumer = new Consumer(options, {
      groupTransport: this.transport,
      brokerTransport: this.broker('consumer()'),
      clientId: this.clientId,
      ...(this.time !== undefined ? { time: this.time } : {}),
    });
    this.consumers.add(consumer);
    consumer.once('closed', () => this.consumers.delete(consumer));
    return consumer;
  }

  /** A producer. `client.close()` closes it (sending what is queued first). */
  producer(options: ProducerOptions = {}): Producer {
    this.checkOpen();
    const producer = new Producer(options, {
      transport: this.broker('producer()'),
      ...(this.time !== undefined ? { time: this.time } : {}),
    });
    this.producers.add(producer);
    return producer;
  }

  /**
   * The admin client (topics, offsets, groups and their lag). The same instance on every call after the
   * first; `options` apply only to the first.
   */
  admin(options: CohortAdminOptions = {}): CohortAdmin {
    this.checkOpen();
    const t = this.transport;
    if (t.describeGroups === undefined || t.listGroups === undefined || t.deleteGroups === undefined) {
      throw new TypeError('admin() needs a transport with DescribeGroups, ListGroups and DeleteGroups');
    }
    this._admin ??= new CohortAdmin(options, {
      groupTransport: t as GroupTransport & GroupAdminTransport,
      brokerTransport: this.broker('admin()'),
      ...(this.time !== undefined ? { time: this.time } : {}),
    });
    return this._admin;
  }

  /**
   * Watches groups: `admin().watchGroups(groupIds, options)`, an async iteration of a snapshot of each
   * group, then one event per change, until `break` or `options.signal` ends it.
   */
  watchGroups(groupIds: readonly string[] = [], options: WatchGroupsOptions = {}): GroupWatch {
    return this.admin().watchGroups(groupIds, options);
  }

  /**
   * The node that coordinates `groupId`, as FindCoordinator names it (and cached, as every call of the
   * group uses it), or null with a transport that routes nothing itself (a test's). Rejects with a
   * `CohortError` (COORDINATOR_NOT_AVAILABLE while the group's partition has no leader).
   */
  async findCoordinator(groupId: string, timeoutMs = 10_000): Promise<CoordinatorNode | null> {
    this.checkOpen();
    const t = this.transport;
    if (!(t instanceof ClusterTransport)) return null;
    return t.coordinatorFor(groupId, { timeoutMs });
  }

  /**
   * Resolves once the server answers on this client's channel, or rejects after `timeoutMs` with a
   * `ServerUnreachableError` saying what failed: the connection refused, the name not resolved, the TLS
   * handshake, or no answer. Nothing needs it: every call waits and retries within its own timeout. A
   * tool that should fail fast when the server is away (the `cohort` CLI) asks first. A transport without
   * the method (a test's) is taken as reachable.
   */
  waitForServer(timeoutMs: number): Promise<void> {
    this.checkOpen();
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
      return Promise.reject(new RangeError('timeoutMs must be a whole number of milliseconds above 0'));
    }
    return this.transport.waitForServer?.(timeoutMs) ?? Promise.resolve();
  }

  /**
   * Closes every consumer (each committing and leaving its group), every producer (sending what is
   * queued) and every member still open, each within its own deadline, then every connection. Safe to call more
   * than once.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([
        ...[...this.consumers].map((consumer) => consumer.close()),
        ...[...this.producers].map((producer) => producer.close()),
      ]);
      await Promise.all([...this.members].map((member) => member.close()));
      this.closeTransport();
    })();
    return this.closing;
  }

  private checkOpen(): void {
    if (this.closing !== null) throw new Error('CohortClient is closed');
  }

  private broker(what: string): BrokerTransport {
    const t = this.transport;
    if (
      t.createTopics === undefined ||
      t.metadata === undefined ||
      t.produce === undefined ||
      t.fetch === undefined ||
      t.listOffsets === undefined
    ) {
      throw new TypeError(
        `${what} needs a transport with the Broker calls (CreateTopics, Metadata, Produce, Fetch, ListOffsets)`,
      );
    }
    return t as BrokerTransport;
  }
}
