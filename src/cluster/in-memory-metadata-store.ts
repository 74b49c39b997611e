import { SystemTimer, TimerTask, type Timer } from '../timer';
import type { Time } from '../time';
import {
  ETCD_MAX_REQUEST_BYTES,
  ETCD_MAX_TXN_OPS,
  MetadataStoreError,
  NO_LEASE,
  type Compare,
  type KeyValue,
  type LeaseGrant,
  type LeaseId,
  type MetadataStore,
  type MetadataWatch,
  type RangeResponse,
  type TxnOp,
  type TxnOpResult,
  type TxnRequest,
  type TxnResponse,
  type WatchEvent,
  type WatchHandlers,
  type WatchOptions,
} from './metadata-store';

/**
 * An etcd in memory, for unit tests of the cluster layer under a manual clock: the same revisions
 * (store revision, create/mod revision, version), compares, leases and watches as etcd's v3 API, checked
 * against a real etcd by the shared contract suite.
 *
 * `InMemoryEtcd` is the server; `connect()` gives a client (a `MetadataStore`) with its own faults, so a
 * test can cut one node off while the others carry on:
 * - `partition()` holds that client's requests (and its watch deliveries) without applying them, as a
 *   network that stopped delivering would; the server keeps running, so leases not renewed expire on
 *   the server's clock. `heal()` delivers what was held, in order, as TCP would once the path is back.
 * - `loseNextResponse({ applied })` makes the client's next write fail with `isOutcomeUnknown`, applied
 *   first or not: the ambiguous outcome every caller must handle by re-reading. With `afterWrites: n`,
 *   the n writes sent before it are answered as usual: a fault in the middle of a run of writes.
 * - `partitionAfterWrites(n)` partitions the client as it sends its (n + 1)-th write from now: the first n
 *   go through, that one and everything after are held, as if the path died between two writes.
 * - `failRequests()` makes every request fail at once, as an etcd that refuses connections does (a
 *   read with no effect; a write, by the real client's rule, `isOutcomeUnknown`), and ends the client's
 *   watches as a failed stream (`onCancelled` with an error); `restoreRequests()` ends it.
 *
 * Leases expire on the server's `Time` (monotonic), `ttlSeconds * 1000` after the last renewal the server
 * received. A lease's keys are deleted in one revision when it expires or is revoked, as etcd does.
 *
 * etcd's request limits hold here too, refused as definitely as etcd refuses them: more than `maxTxnOps`
 * compares, success ops or failure ops in one transaction, and a request above `maxRequestBytes` (its keys
 * and values, plus a few bytes for each).
 */
export interface InMemoryEtcdOptions {
  readonly time: Time;
  /** A timer on `time`; one is made when absent. */
  readonly timer?: Timer;
  /** etcd raises shorter TTLs to its minimum (2 s with its default election timeout). */
  readonly minLeaseTtlSeconds?: number;
  /** `--max-txn-ops`; etcd's default, ETCD_MAX_TXN_OPS (128), when absent. */
  readonly maxTxnOps?: number;
  /** `--max-request-bytes`; etcd's default, ETCD_MAX_REQUEST_BYTES (1.5 MiB), when absent. */
  readonly maxRequestBytes?: number;
}

/** What etcd's encoding adds to each key or op of a request, about (its framing and revision fields). */
const REQUEST_BYTES_PER_ITEM = 20;

/** A request's size as etcd counts it, near enough: its keys and values, and a few bytes for each. */
function requestBytes(request: TxnRequest): number {
  let bytes = 0;
  for (const compare of request.compare) {
    bytes += Buffer.byteLength(compare.key) + REQUEST_BYTES_PER_ITEM;
    if (compare.target === 'value') bytes += Buffer.byteLength(compare.operand);
  }
  for (const op of [...request.success, ...(request.failure ?? [])]) {
    bytes += Buffer.byteLength(op.key) + REQUEST_BYTES_PER_ITEM;
    if (op.type === 'put') bytes += Buffer.byteLength(op.value);
  }
  return bytes;
}

interface StoredKey {
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
  lease: LeaseId;
}

interface Change {
  readonly revision: number;
  readonly events: readonly WatchEvent[];
}

class LeaseExpiry extends TimerTask {
  constructor(
    private readonly etcd: InMemoryEtcd,
    readonly id: LeaseId,
    delayMs: number,
  ) {
    super(delayMs);
  }
  override run(): void {
    this.etcd.expireLease(this.id);
  }
}

interface StoredLease {
  readonly ttlSeconds: number;
  readonly keys: Set<string>;
  readonly expiry: LeaseExpiry;
}

interface Watcher {
  readonly key: string;
  readonly prefix: boolean;
  /** The next revision to deliver. */
  nextRevision: number;
  readonly handlers: WatchHandlers;
  readonly client: InMemoryMetadataStore;
  isCancelled: boolean;
  isScheduled: boolean;
}

function matches(key: string, range: { key: string; prefix?: boolean }): boolean {
  return range.prefix === true ? key.startsWith(range.key) : key === range.key;
}

function compareNumbers(actual: number, result: Compare['result'], operand: number): boolean {
  switch (result) {
    case 'equal':
      return actual === operand;
    case 'notEqual':
      return actual !== operand;
    case 'greater':
      return actual > operand;
    case 'less':
      return actual < operand;
  }
}

export class InMemoryEtcd {
  private readonly time: Time;
  private readonly timer: Timer;
  private readonly ownsTimer: boolean;
  private readonly minLeaseTtlSeconds: number;
  private readonly maxTxnOps: number;
  private readonly maxRequestBytes: number;
  private readonly keys = new Map<string, StoredKey>();
  private readonly leases = new Map<LeaseId, StoredLease>();
  private readonly history: Change[] = [];
  private readonly watchers = new Set<Watcher>();
  private nextLeaseId = 0x1d2e3f4a5b6c7d00n;
  /** The store's revision: etcd starts at 1. */
  revision = 1;
  compactRevision = 0;

  constructor(options: InMemoryEtcdOptions) {
    this.time = options.time;
    this.ownsTimer = options.timer === undefined;
    this.timer = options.timer ?? new SystemTimer({ name: 'in-memory-etcd', time: options.time });
    this.minLeaseTtlSeconds = options.minLeaseTtlSeconds ?? 2;
    this.maxTxnOps = options.maxTxnOps ?? ETCD_MAX_TXN_OPS;
    this.maxRequestBytes = options.maxRequestBytes ?? ETCD_MAX_REQUEST_BYTES;
  }

  /** A client of this etcd. */
  connect(): InMemoryMetadataStore {
    return new InMemoryMetadataStore(this);
  }

  /** Stops lease expiry (and the timer, if this etcd made it). */
  shutdown(): void {
    for (const lease of this.leases.values()) lease.expiry.cancel();
    if (this.ownsTimer) this.timer.shutdown();
  }

  /** Ids of the leases that exist now. */
  leaseIds(): LeaseId[] {
    return [...this.leases.keys()];
  }

  // ---- the server's operations, applied synchronously (clients add the asynchrony) ----

  /** @internal */
  read(range: { key: string; prefix?: boolean }): KeyValue[] {
    const found: KeyValue[] = [];
    for (const [key, stored] of this.keys) if (matches(key, range)) found.push({ key, ...stored });
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** @internal */
  applyTxn(request: TxnRequest): TxnResponse {
    // etcd checks both before it looks at any key: each list on its own against --max-txn-ops.
    const failureOps = request.failure?.length ?? 0;
    if (Math.max(request.compare.length, request.success.length, failureOps) > this.maxTxnOps) {
      throw new MetadataStoreError('invalidRequest', 'etcd: too many operations in txn request', {
        isOutcomeUnknown: false,
      });
    }
    if (requestBytes(request) > this.maxRequestBytes) {
      throw new MetadataStoreError('invalidRequest', 'etcd: request is too large', {
        isOutcomeUnknown: false,
      });
    }
    const succeeded = request.compare.every((compare) => this.holds(compare));
    const ops = succeeded ? request.success : (request.failure ?? []);
    const written = new Set<string>();
    for (const op of ops) {
      if (op.type === 'put') {
        if (written.has(op.key)) {
          throw new MetadataStoreError('invalidRequest', 'etcd: duplicate key given in txn request', {
            isOutcomeUnknown: false,
          });
        }
        written.add(op.key);
        const lease = op.lease ?? NO_LEASE;
        if (lease !== NO_LEASE && !this.leases.has(lease)) {
          throw new MetadataStoreError('leaseNotFound', 'etcd: requested lease not found', {
            isOutcomeUnknown: false,
          });
        }
      }
    }
    const isWrite = ops.some((op) => op.type === 'put' || (op.type === 'delete' && this.read(op).length > 0));
    const revision = isWrite ? this.revision + 1 : this.revision;
    const events: WatchEvent[] = [];
    const results: TxnOpResult[] = ops.map((op): TxnOpResult => {
      switch (op.type) {
        case 'get':
          return { type: 'get', kvs: this.read(op) };
        case 'put':
          events.push({ type: 'put', kv: this.putKey(op.key, op.value, op.lease ?? NO_LEASE, revision) });
          return { type: 'put' };
        case 'delete': {
          const victims = this.read(op);
          for (const victim of victims) events.push(this.deleteKey(victim.key, revision));
          return { type: 'delete', deleted: victims.length };
        }
      }
    });
    if (isWrite) this.commit(revision, events);
    return { succeeded, revision: this.revision, results };
  }

  private holds(compare: Compare): boolean {
    if (compare.prefix !== true) return this.holdsFor(compare, this.keys.get(compare.key));
    // etcd: over a range, every key must satisfy it; an empty range compares as one missing key.
    const found = this.read({ key: compare.key, prefix: true });
    if (found.length === 0) return this.holdsFor(compare, undefined);
    return found.every((kv) => this.holdsFor(compare, kv));
  }

  private holdsFor(compare: Compare, stored: StoredKey | undefined): boolean {
    switch (compare.target) {
      case 'createRevision':
        return compareNumbers(stored?.createRevision ?? 0, compare.result, compare.operand);
      case 'modRevision':
        return compareNumbers(stored?.modRevision ?? 0, compare.result, compare.operand);
      case 'version':
        return compareNumbers(stored?.version ?? 0, compare.result, compare.operand);
      case 'lease': {
        const actual = BigInt(stored?.lease ?? NO_LEASE);
        const operand = BigInt(compare.operand);
        return compareNumbers(actual === operand ? 0 : actual < operand ? -1 : 1, compare.result, 0);
      }
      case 'value': {
        // etcd: a value compare on a missing key is false, whatever the operator.
        if (stored === undefined) return false;
        const order = stored.value < compare.operand ? -1 : stored.value > compare.operand ? 1 : 0;
        return compareNumbers(order, compare.result, 0);
      }
    }
  }

  private putKey(key: string, value: string, lease: LeaseId, revision: number): KeyValue {
    const previous = this.keys.get(key);
    if (previous !== undefined && previous.lease !== NO_LEASE)
      this.leases.get(previous.lease)?.keys.delete(key);
    const stored: StoredKey = {
      value,
      createRevision: previous?.createRevision ?? revision,
      modRevision: revision,
      version: (previous?.version ?? 0) + 1,
      lease,
    };
    this.keys.set(key, stored);
    if (lease !== NO_LEASE) this.leases.get(lease)!.keys.add(key);
    return { key, ...stored };
  }

  private deleteKey(key: string, revision: number): WatchEvent {
    const stored = this.keys.get(key)!;
    if (stored.lease !== NO_LEASE) this.leases.get(stored.lease)?.keys.delete(key);
    this.keys.delete(key);
    return {
      type: 'delete',
      kv: { key, value: '', createRevision: 0, modRevision: revision, version: 0, lease: NO_LEASE },
    };
  }

  private commit(revision: number, events: readonly WatchEvent[]): void {
    this.revision = revision;
    this.history.push({ revision, events });
    for (const watcher of this.watchers) this.scheduleDelivery(watcher);
  }

  /** @internal */
  compact(revision: number): void {
    if (revision <= this.compactRevision) {
      throw new MetadataStoreError('compacted', 'etcd: mvcc: required revision has been compacted', {
        isOutcomeUnknown: false,
      });
    }
    if (revision > this.revision) {
      throw new MetadataStoreError('invalidRequest', 'etcd: mvcc: required revision is a future revision', {
        isOutcomeUnknown: false,
      });
    }
    this.compactRevision = revision;
    while (this.history.length > 0 && this.history[0].revision < revision) this.history.shift();
  }

  /** @internal */
  grantLease(ttlSeconds: number): LeaseGrant {
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1) {
      throw new MetadataStoreError(
        'invalidRequest',
        `etcd: lease TTL must be a positive integer, got ${ttlSeconds}`,
        {
          isOutcomeUnknown: false,
        },
      );
    }
    const granted = Math.max(ttlSeconds, this.minLeaseTtlSeconds);
    const id = String(this.nextLeaseId++);
    const expiry = new LeaseExpiry(this, id, granted * 1000);
    this.leases.set(id, { ttlSeconds: granted, keys: new Set(), expiry });
    this.timer.add(expiry);
    return { id, ttlSeconds: granted };
  }

  /** @internal 0 when the lease is gone. */
  renewLease(id: LeaseId): number {
    const lease = this.leases.get(id);
    if (lease === undefined) return 0;
    lease.expiry.delayMs = lease.ttlSeconds * 1000;
    this.timer.add(lease.expiry);
    return lease.ttlSeconds;
  }

  /** @internal */
  revokeLease(id: LeaseId): void {
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    lease.expiry.cancel();
    this.leases.delete(id);
    if (lease.keys.size === 0) return;
    const revision = this.revision + 1;
    const events = [...lease.keys].sort().map((key) => this.deleteKey(key, revision));
    this.commit(revision, events);
  }

  /** @internal Called by the lease's timer task. */
  expireLease(id: LeaseId): void {
    this.revokeLease(id);
  }

  /** @internal */
  leaseTimeToLive(id: LeaseId): number {
    const lease = this.leases.get(id);
    if (lease === undefined) return -1;
    return Math.max(0, Math.ceil((lease.expiry.expirationMs - this.time.monotonicMs()) / 1000));
  }

  /** @internal */
  addWatcher(watcher: Watcher): void {
    this.watchers.add(watcher);
    if (watcher.nextRevision < this.compactRevision) {
      const compactRevision = this.compactRevision;
      queueMicrotask(() => {
        if (watcher.isCancelled) return;
        this.removeWatcher(watcher);
        watcher.handlers.onCancelled({ compactRevision });
      });
      return;
    }
    this.scheduleDelivery(watcher);
  }

  /** @internal */
  removeWatcher(watcher: Watcher): void {
    watcher.isCancelled = true;
    this.watchers.delete(watcher);
  }

  /** @internal Delivers what the watcher has not seen yet, in a microtask, unless its client is cut off. */
  scheduleDelivery(watcher: Watcher): void {
    if (watcher.isScheduled || watcher.isCancelled) return;
    watcher.isScheduled = true;
    queueMicrotask(() => {
      watcher.isScheduled = false;
      if (watcher.isCancelled || watcher.client.isPartitioned) return;
      if (watcher.nextRevision < this.compactRevision) {
        // It fell behind the compaction (a partitioned client): the history it has not seen is gone.
        // etcd cancels such a watcher with the compaction revision rather than skip the events.
        this.removeWatcher(watcher);
        watcher.handlers.onCancelled({ compactRevision: this.compactRevision });
        return;
      }
      const events: WatchEvent[] = [];
      for (const change of this.history) {
        if (change.revision < watcher.nextRevision) continue;
        for (const event of change.events) if (matches(event.kv.key, watcher)) events.push(event);
      }
      watcher.nextRevision = this.revision + 1;
      if (events.length > 0) watcher.handlers.onEvents(events);
    });
  }

  /** @internal */
  watchersOf(client: InMemoryMetadataStore): Watcher[] {
    return [...this.watchers].filter((watcher) => watcher.client === client);
  }
}

/** A client of an `InMemoryEtcd`, with per-client faults. */
export class InMemoryMetadataStore implements MetadataStore {
  isPartitioned = false;
  isFailing = false;
  private held: (() => void)[] = [];
  private lostResponses: { readonly applied: boolean; writesBefore: number }[] = [];
  private writesUntilPartition: number | undefined;
  private isClosed = false;

  constructor(readonly etcd: InMemoryEtcd) {}

  /** Holds this client's requests and watch deliveries until `heal()`. */
  partition(): void {
    this.isPartitioned = true;
  }

  /** Delivers the held requests in order, then resumes watch deliveries. */
  heal(): void {
    this.isPartitioned = false;
    const held = this.held;
    this.held = [];
    for (const deliver of held) deliver();
    for (const watcher of this.etcd.watchersOf(this)) this.etcd.scheduleDelivery(watcher);
  }

  /** Every request fails until `restoreRequests()`; the client's watches end as failed streams. */
  failRequests(): void {
    this.isFailing = true;
    for (const watcher of this.etcd.watchersOf(this)) {
      this.etcd.removeWatcher(watcher);
      queueMicrotask(() =>
        watcher.handlers.onCancelled({ error: new Error('in-memory etcd: watch stream failed') }),
      );
    }
  }

  restoreRequests(): void {
    this.isFailing = false;
  }

  /**
   * The next write of this client (after `afterWrites` more, 0 by default) fails with `isOutcomeUnknown`,
   * after being applied if `applied`.
   */
  loseNextResponse(options: { readonly applied: boolean; readonly afterWrites?: number }): void {
    this.lostResponses.push({ applied: options.applied, writesBefore: options.afterWrites ?? 0 });
  }

  /** Sends `writes` more writes as usual, then partitions the client as it sends the next one. */
  partitionAfterWrites(writes: number): void {
    this.writesUntilPartition = writes;
  }

  /** Runs `apply` on the server now, or on `heal()` when partitioned; answers in a later microtask. */
  private request<T>(call: string, isWrite: boolean, apply: () => T): Promise<T> {
    if (this.isClosed) {
      return Promise.reject(
        new MetadataStoreError('closed', 'the client is closed', { isOutcomeUnknown: false }),
      );
    }
    if (this.isFailing) {
      return Promise.reject(
        new MetadataStoreError('unavailable', `in-memory etcd ${call}: unavailable`, {
          isOutcomeUnknown: isWrite,
        }),
      );
    }
    if (isWrite && this.writesUntilPartition !== undefined) {
      if (this.writesUntilPartition === 0) {
        this.writesUntilPartition = undefined;
        this.partition();
      } else {
        this.writesUntilPartition--;
      }
    }
    let lost: { readonly applied: boolean } | undefined;
    if (isWrite && this.lostResponses.length > 0) {
      if (this.lostResponses[0].writesBefore > 0) this.lostResponses[0].writesBefore--;
      else lost = this.lostResponses.shift();
    }
    return new Promise<T>((resolve, reject) => {
      const deliver = (): void => {
        if (lost !== undefined) {
          if (lost.applied) {
            try {
              apply();
            } catch {
              // Its answer is lost either way.
            }
          }
          reject(
            new MetadataStoreError('unavailable', `in-memory etcd ${call}: response lost`, {
              isOutcomeUnknown: true,
            }),
          );
          return;
        }
        try {
          resolve(apply());
        } catch (error) {
          reject(error);
        }
      };
      if (this.isPartitioned) this.held.push(deliver);
      else queueMicrotask(deliver);
    });
  }

  get(key: string): Promise<{ kv: KeyValue | undefined; revision: number }> {
    return this.request('Range', false, () => ({
      kv: this.etcd.read({ key })[0],
      revision: this.etcd.revision,
    }));
  }

  range(prefix: string): Promise<RangeResponse> {
    return this.request('Range', false, () => ({
      kvs: this.etcd.read({ key: prefix, prefix: true }),
      revision: this.etcd.revision,
    }));
  }

  put(key: string, value: string, options: { lease?: LeaseId } = {}): Promise<{ revision: number }> {
    const op: TxnOp = { type: 'put', key, value, lease: options.lease ?? NO_LEASE };
    return this.request('Put', true, () => ({
      revision: this.etcd.applyTxn({ compare: [], success: [op] }).revision,
    }));
  }

  delete(key: string): Promise<{ revision: number; deleted: number }> {
    return this.request('DeleteRange', true, () => {
      const response = this.etcd.applyTxn({ compare: [], success: [{ type: 'delete', key }] });
      const result = response.results[0];
      return { revision: response.revision, deleted: result.type === 'delete' ? result.deleted : 0 };
    });
  }

  txn(request: TxnRequest): Promise<TxnResponse> {
    const isWrite = [...request.success, ...(request.failure ?? [])].some((op) => op.type !== 'get');
    return this.request('Txn', isWrite, () => this.etcd.applyTxn(request));
  }

  compact(revision: number): Promise<void> {
    return this.request('Compact', true, () => this.etcd.compact(revision));
  }

  watch(key: string, options: WatchOptions, handlers: WatchHandlers): MetadataWatch {
    const watcher: Watcher = {
      key,
      prefix: options.prefix === true,
      nextRevision: 0,
      handlers,
      client: this,
      isCancelled: false,
      isScheduled: false,
    };
    const created = this.request('Watch', false, () => {
      if (watcher.isCancelled) return;
      watcher.nextRevision = options.startRevision ?? this.etcd.revision + 1;
      this.etcd.addWatcher(watcher);
    });
    created.catch((error: unknown) => {
      // A stream that could not be opened ends as a failed one does.
      if (this.isFailing && !watcher.isCancelled) {
        watcher.isCancelled = true;
        handlers.onCancelled({ error: error instanceof Error ? error : new Error(String(error)) });
      }
    });
    return { created, cancel: () => this.etcd.removeWatcher(watcher) };
  }

  grantLease(ttlSeconds: number): Promise<LeaseGrant> {
    return this.request('LeaseGrant', true, () => this.etcd.grantLease(ttlSeconds));
  }

  keepAliveOnce(id: LeaseId): Promise<{ ttlSeconds: number }> {
    // A renewal is idempotent: no lost-response fault applies to it.
    return this.request('LeaseKeepAlive', false, () => ({ ttlSeconds: this.etcd.renewLease(id) }));
  }

  revokeLease(id: LeaseId): Promise<void> {
    return this.request('LeaseRevoke', true, () => this.etcd.revokeLease(id));
  }

  leaseTimeToLive(id: LeaseId): Promise<number> {
    return this.request('LeaseTimeToLive', false, () => this.etcd.leaseTimeToLive(id));
  }

  close(): void {
    this.isClosed = true;
    for (const watcher of this.etcd.watchersOf(this)) this.etcd.removeWatcher(watcher);
    this.held = [];
  }
}
