import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { InMemoryEtcd } from '../../src/cluster/in-memory-metadata-store';
import type { LeaseId, MetadataStore, WatchEvent, WatchHandlers } from '../../src/cluster/metadata-store';
import { ManualTime } from '../../src/time';
import type { EtcdProcess } from './etcd';

/**
 * A MetadataStore under test, real or in memory, with what a contract test needs to drive it: a second
 * client, and a way to let a lease lapse (the manual clock for the fake, a wait on etcd's own clock
 * for the real one).
 */
export interface StoreHarness {
  readonly name: string;
  readonly store: MetadataStore;
  /** Another client of the same store. */
  connect(): MetadataStore;
  /** Resolves once the lease no longer exists because nobody renewed it. */
  letLeaseExpire(id: LeaseId, ttlSeconds: number): Promise<void>;
  close(): void;
}

export function inMemoryHarness(): StoreHarness & { readonly time: ManualTime; readonly etcd: InMemoryEtcd } {
  const time = new ManualTime();
  const etcd = new InMemoryEtcd({ time });
  const clients: MetadataStore[] = [];
  const connect = (): MetadataStore => {
    const client = etcd.connect();
    clients.push(client);
    return client;
  };
  return {
    name: 'in-memory etcd',
    time,
    etcd,
    store: connect(),
    connect,
    letLeaseExpire: async (id, ttlSeconds) => {
      time.advance(ttlSeconds * 1000);
      if (etcd.leaseIds().includes(id)) throw new Error(`lease ${id} still exists after its TTL`);
      await settle();
    },
    close: () => {
      for (const client of clients) client.close();
      etcd.shutdown();
    },
  };
}

/** Clients of a real etcd, with its TLS files and cohort's user when it is locked down. */
export function etcdHarness(etcd: EtcdProcess): StoreHarness {
  const clients: MetadataStore[] = [];
  const connect = (): MetadataStore => {
    const client = new EtcdMetadataStore({ endpoints: etcd.endpoints, ...etcd.clientOptions });
    clients.push(client);
    return client;
  };
  const store = connect();
  return {
    name: 'etcd',
    store,
    connect,
    letLeaseExpire: async (id, ttlSeconds) => {
      // etcd's lessor checks for expired leases every 500 ms; give it a few rounds past the TTL.
      const giveUpAt = Date.now() + ttlSeconds * 1000 + 5_000;
      while ((await store.leaseTimeToLive(id)) !== -1) {
        if (Date.now() > giveUpAt)
          throw new Error(`lease ${id} still exists ${ttlSeconds} s + 5 s after its last renewal`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    close: () => {
      for (const client of clients) client.close();
    },
  };
}

/** Lets pending microtasks (the fake's answers and deliveries) run. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** Watch handlers that record everything, with a way to await a condition on what was recorded. */
export class WatchRecorder implements WatchHandlers {
  readonly events: WatchEvent[] = [];
  cancelled: { compactRevision?: number; error?: Error } | undefined;
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  onEvents(events: readonly WatchEvent[]): void {
    this.events.push(...events);
    this.wake();
  }

  onCancelled(reason: { compactRevision?: number; error?: Error }): void {
    this.cancelled = reason;
    this.wake();
  }

  /** Resolves when `check()` holds; rejects after `timeoutMs` of real time (a failing test, not a sleep). */
  until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timeout = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(
          new Error(
            `watch: condition not met within ${timeoutMs} ms; events: ${JSON.stringify(this.events)}`,
          ),
        );
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timeout);
        resolve();
      };
      this.waiters.push({ check, resolve: done });
    });
  }

  private wake(): void {
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.check()) return true;
      waiter.resolve();
      return false;
    });
  }
}
