/**
 * What the cluster layer needs of its metadata store: etcd's v3 data model, reduced to the calls cohort
 * makes. Two implementations keep the same contract (test/integration/metadata-store-contract.test.ts
 * runs one suite against both): `EtcdMetadataStore` over a real etcd and `InMemoryEtcd` under a manual
 * clock for unit tests.
 *
 * The model, as etcd has it:
 * - Every change (put, delete, a transaction that writes) moves the store's `revision` up by one. A key
 *   carries `createRevision` (the revision that created it; a deleted and re-created key gets a new one),
 *   `modRevision` (its last change) and `version` (puts since it was created). A missing key compares as
 *   createRevision = modRevision = version = 0.
 * - A transaction evaluates all its compares against one snapshot and applies `success` or `failure`
 *   atomically. This is the only way cluster code writes shared state: a write is conditioned on the
 *   revision it was decided from, so a deposed controller or leader cannot overwrite its successor.
 * - A lease has a TTL (whole seconds; the server may raise it to its minimum) and dies unless renewed
 *   within it; its keys are deleted when it dies. A lease alone gives no mutual exclusion to anything
 *   outside etcd: data outside must be fenced by a revision or an epoch derived from one.
 * - A watch delivers, in revision order, every change to a key range from a start revision on, unless the
 *   history there has been compacted away, in which case it is cancelled with the compaction revision.
 *
 * Failures: a read that fails had no effect. A write that fails with `isOutcomeUnknown` may or may not
 * have been applied (the request may have been committed before the connection, deadline or server
 * failed); the caller must re-read before deciding anything, never assume either way. Nothing here
 * retries on its own.
 */

/**
 * etcd's `--max-txn-ops` default. A transaction may carry at most this many compares, this many success
 * ops and this many failure ops (each list counted on its own); etcd refuses a larger one, definitely
 * (nothing applied), with "too many operations in txn request". A caller writing many keys splits them.
 */
export const ETCD_MAX_TXN_OPS = 128;

/**
 * etcd's `--max-request-bytes` default, 1.5 MiB: a request whose encoding is larger is refused, definitely,
 * with "request is too large" (keys and values make up nearly all of it; each key or op adds a few bytes).
 */
export const ETCD_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

/** A lease id: etcd's int64, kept as a decimal string (lease ids use all 63 bits). '0' is "no lease". */
export type LeaseId = string;
export const NO_LEASE: LeaseId = '0';

export interface KeyValue {
  readonly key: string;
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly lease: LeaseId;
}

export type CompareResult = 'equal' | 'notEqual' | 'greater' | 'less';

/**
 * A condition on one key, evaluated inside a transaction. `target` names the field compared. With
 * `prefix: true` it is a condition on every key that starts with `key` (etcd's compare over a range): it
 * holds only if it holds for each of them, and when there is none, as it would for one missing key — so
 * `createRevision` equal to 0 over a prefix says "no key under it exists", in one compare.
 */
export type Compare = { readonly prefix?: boolean } & (
  | {
      readonly key: string;
      readonly target: 'createRevision' | 'modRevision' | 'version';
      readonly result: CompareResult;
      readonly operand: number;
    }
  | {
      readonly key: string;
      readonly target: 'value';
      readonly result: CompareResult;
      readonly operand: string;
    }
  | {
      readonly key: string;
      readonly target: 'lease';
      readonly result: CompareResult;
      readonly operand: LeaseId;
    }
);

export type TxnOp =
  | { readonly type: 'put'; readonly key: string; readonly value: string; readonly lease?: LeaseId }
  /** Deletes one key (`prefix: true`: every key that starts with `key`). */
  | { readonly type: 'delete'; readonly key: string; readonly prefix?: boolean }
  /** Reads one key (`prefix: true`: every key that starts with `key`), at the transaction's revision. */
  | { readonly type: 'get'; readonly key: string; readonly prefix?: boolean };

export type TxnOpResult =
  | { readonly type: 'put' }
  | { readonly type: 'delete'; readonly deleted: number }
  | { readonly type: 'get'; readonly kvs: readonly KeyValue[] };

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly TxnOp[];
  readonly failure?: readonly TxnOp[];
}

export interface TxnResponse {
  readonly succeeded: boolean;
  /** The store's revision after the transaction (unchanged if it wrote nothing). */
  readonly revision: number;
  /** One result per op of the branch that ran, in order. */
  readonly results: readonly TxnOpResult[];
}

export interface RangeResponse {
  readonly kvs: readonly KeyValue[];
  /** The store's revision the read saw. */
  readonly revision: number;
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  /** For a delete: the key, `modRevision` = the deleting revision, the rest zero / empty. */
  readonly kv: KeyValue;
}

export interface WatchHandlers {
  /** Events of one or more revisions, in revision order. */
  onEvents(events: readonly WatchEvent[]): void;
  /**
   * The watch ended without being cancelled by its owner: `compactRevision` is set when the start revision
   * had been compacted (re-read, then watch again from the read's revision + 1); otherwise the stream
   * failed. No event follows.
   */
  onCancelled(reason: { readonly compactRevision?: number; readonly error?: Error }): void;
}

export interface WatchOptions {
  /** Inclusive. Without it the watch starts after the store's current revision. */
  readonly startRevision?: number;
  /** Watch every key that starts with `key`. */
  readonly prefix?: boolean;
}

export interface MetadataWatch {
  /** Resolves once the store has accepted the watch: changes from then on will be delivered. */
  readonly created: Promise<void>;
  /** Stops the watch; no handler runs afterwards. */
  cancel(): void;
}

export interface LeaseGrant {
  readonly id: LeaseId;
  /** The TTL the server chose (at least the one asked for). */
  readonly ttlSeconds: number;
}

export interface MetadataStore {
  get(key: string): Promise<{ readonly kv: KeyValue | undefined; readonly revision: number }>;
  /** Every key that starts with `prefix`, in key order. */
  range(prefix: string): Promise<RangeResponse>;
  put(
    key: string,
    value: string,
    options?: { readonly lease?: LeaseId },
  ): Promise<{ readonly revision: number }>;
  delete(key: string): Promise<{ readonly revision: number; readonly deleted: number }>;
  txn(request: TxnRequest): Promise<TxnResponse>;
  /** Drops the history below `revision`; watches that start below it are cancelled. */
  compact(revision: number): Promise<void>;
  watch(key: string, options: WatchOptions, handlers: WatchHandlers): MetadataWatch;

  grantLease(ttlSeconds: number): Promise<LeaseGrant>;
  /**
   * One renewal round trip. Resolves with the renewed TTL, or 0 when the lease no longer exists (expired
   * or revoked): a lease that is gone stays gone. The lease was renewed no earlier than the moment the
   * request was sent, which is what a holder's own deadline must be counted from.
   */
  keepAliveOnce(id: LeaseId): Promise<{ readonly ttlSeconds: number }>;
  /** Revokes the lease and deletes its keys. Revoking a lease that is gone is not an error. */
  revokeLease(id: LeaseId): Promise<void>;
  /** Remaining TTL in seconds, -1 if the lease does not exist. */
  leaseTimeToLive(id: LeaseId): Promise<number>;

  /** Closes connections and ends watches (their handlers are not called). */
  close(): void;
}

export type MetadataStoreErrorKind =
  /** The store could not be reached or did not answer in time. */
  | 'unavailable'
  /** The lease named by a put or renewal does not exist. */
  | 'leaseNotFound'
  /** A read at a revision below the compaction revision. */
  | 'compacted'
  /** The store refused the request as malformed (a bug in the caller). */
  | 'invalidRequest'
  /**
   * The store refused the client's credentials or what they allow: a wrong user name or password, a token
   * it no longer accepts, no credentials where it wants some, a user without permission on the key.
   * Nothing was applied. A token is renewed by the next call; the rest stays until the operator fixes it.
   */
  | 'accessDenied'
  | 'closed';

export class MetadataStoreError extends Error {
  readonly kind: MetadataStoreErrorKind;
  /**
   * True when the failed call was a write that may have been applied all the same. The caller re-reads;
   * it never assumes the write failed (or succeeded).
   */
  readonly isOutcomeUnknown: boolean;

  constructor(
    kind: MetadataStoreErrorKind,
    message: string,
    options: { readonly isOutcomeUnknown: boolean; readonly cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = 'MetadataStoreError';
    this.kind = kind;
    this.isOutcomeUnknown = options.isOutcomeUnknown;
  }
}

/** The smallest key after every key with `prefix` (etcd's range_end for a prefix). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  // Every byte is 0xff (or the prefix is empty): the range runs to the end of the keyspace.
  return Buffer.from([0]);
}
