import { EventEmitter } from 'node:events';
import { TimerAction, type Timer } from '../timer';
import {
  MetadataStoreError,
  type KeyValue,
  type LeaseId,
  type MetadataStore,
  type MetadataWatch,
  type TxnOpResult,
  type TxnRequest,
  type TxnResponse,
  type WatchEvent,
} from './metadata-store';
import type { NodeSession } from './node-session';

/**
 * The controller election, after etcd's `concurrency.Election` and Kafka's ZooKeeper-era
 * `KafkaController.elect`: every node campaigns by creating `/<cluster-id>/controller` only if it is
 * absent (a transaction comparing its create revision with 0), bound to the node session's lease. The
 * winner's **controller epoch is that key's create revision**: etcd's revisions only grow, so each new
 * controller's epoch is higher than every earlier one, with no counter to maintain.
 *
 * - Losers watch the key from the revision they read and campaign again when it is deleted (the
 *   controller's lease expired or was revoked, or it resigned).
 * - The controller is the controller only while its session is active on the lease it won with:
 *   `isController()` reads the session, which reads the monotonic clock, so the role drops at the
 *   session's deadline, before etcd could have expired the key and let another node win. When the session
 *   expires, the election emits `resigned` and campaigns again on the session's next lease, so a node
 *   that was frozen past its TTL comes back as a follower unless it wins a new, higher epoch.
 * - A lease is not mutual exclusion for anything outside etcd: a deposed controller that has not yet
 *   noticed can still send a write. Every controller write therefore goes through `fencedTxn`, which
 *   adds "the controller key's create revision is still my epoch" to the transaction's compares: etcd
 *   refuses the write of any controller but the current one.
 *
 * After a campaign whose answer was lost the election re-reads the key: held on its own lease, it won.
 */

export interface ControllerElectionOptions {
  readonly store: MetadataStore;
  readonly session: NodeSession;
  readonly timer: Timer;
  readonly clusterId: string;
  readonly nodeId: number;
  /** Wait before retrying a campaign or a read that failed; 500 ms by default. */
  readonly retryBackoffMs?: number;
}

export interface ControllerInfo {
  /** The controller's node id, or undefined while there is none. */
  readonly controllerId: number | undefined;
  /** The create revision of its key (0 while there is none). */
  readonly controllerEpoch: number;
}

export interface ControllerElectionEvents {
  /** This node became the controller. */
  elected: [{ readonly controllerEpoch: number }];
  /** This node stopped being the controller (its session expired, its key went, or `close()`). */
  resigned: [{ readonly controllerEpoch: number; readonly reason: ResignReason }];
  /** The controller this node knows of changed (including to none, and to itself). */
  controllerChanged: [ControllerInfo];
}

export type ResignReason = 'sessionExpired' | 'keyLost' | 'fenced' | 'closed';

/** The outcome of a fenced controller write. */
export type FencedTxnResult =
  /** Applied: the compares held, this node's epoch included. */
  | { readonly outcome: 'applied'; readonly response: TxnResponse }
  /** The caller's own compares failed; the controller epoch held. `results` are the failure branch's. */
  | {
      readonly outcome: 'conditionFailed';
      readonly revision: number;
      readonly results: readonly TxnOpResult[];
    }
  /** The epoch no longer holds: another controller (or none) — nothing was written. */
  | { readonly outcome: 'notController'; readonly currentEpoch: number };

export function controllerKey(clusterId: string): string {
  return `/${clusterId}/controller`;
}

/**
 * `request`, applied only if `controllerEpoch` is still the create revision of the controller key. The
 * check happens inside etcd, in the same transaction: a deposed controller cannot write, whatever it
 * believes. Failed writes propagate `MetadataStoreError`; after one with `isOutcomeUnknown`, re-read.
 */
export async function fencedTxn(
  store: MetadataStore,
  clusterId: string,
  controllerEpoch: number,
  request: TxnRequest,
): Promise<FencedTxnResult> {
  const key = controllerKey(clusterId);
  const response = await store.txn({
    compare: [
      { key, target: 'createRevision', result: 'equal', operand: controllerEpoch },
      ...request.compare,
    ],
    success: request.success,
    failure: [{ type: 'get', key }, ...(request.failure ?? [])],
  });
  if (response.succeeded) return { outcome: 'applied', response };
  const controller = response.results[0];
  const currentEpoch = controller?.type === 'get' ? (controller.kvs[0]?.createRevision ?? 0) : 0;
  if (currentEpoch !== controllerEpoch) return { outcome: 'notController', currentEpoch };
  return { outcome: 'conditionFailed', revision: response.revision, results: response.results.slice(1) };
}

function controllerValue(nodeId: number): string {
  return JSON.stringify({ nodeId });
}

function parseControllerId(kv: KeyValue): number | undefined {
  try {
    const parsed = JSON.parse(kv.value) as { nodeId?: unknown };
    return typeof parsed.nodeId === 'number' ? parsed.nodeId : undefined;
  } catch {
    return undefined;
  }
}

export class ControllerElection extends EventEmitter<ControllerElectionEvents> {
  readonly key: string;
  private readonly store: MetadataStore;
  private readonly session: NodeSession;
  private readonly timer: Timer;
  private readonly clusterId: string;
  private readonly nodeId: number;
  private readonly retryBackoffMs: number;
  /** Set while this node holds the controller key: its epoch, and the lease it won with. */
  private held: { readonly epoch: number; readonly lease: LeaseId } | undefined;
  private known: ControllerInfo = { controllerId: undefined, controllerEpoch: 0 };
  private watch: MetadataWatch | undefined;
  /** Bumped by every campaign and every stop: answers to an older round are ignored. */
  private round = 0;
  private isStarted = false;
  private isClosed = false;
  private readonly retryTask = new TimerAction(() => this.campaign());
  private readonly onActive = (): void => this.campaign();
  private readonly onExpired = (): void => this.stop('sessionExpired');

  constructor(options: ControllerElectionOptions) {
    super();
    this.store = options.store;
    this.session = options.session;
    this.timer = options.timer;
    this.clusterId = options.clusterId;
    this.nodeId = options.nodeId;
    this.retryBackoffMs = options.retryBackoffMs ?? 500;
    this.key = controllerKey(options.clusterId);
  }

  /** Campaigns now if the session is active, and on each new lease of the session from now on. */
  start(): void {
    if (this.isStarted) throw new Error('ControllerElection.start: already started');
    this.isStarted = true;
    this.session.on('active', this.onActive);
    this.session.on('expired', this.onExpired);
    const lease = this.session.leaseId;
    if (lease !== undefined) this.campaign();
  }

  /**
   * True while this node holds the controller key on its session's current, live lease. Turns false at
   * the session's monotonic deadline, without waiting for any event.
   */
  isController(): boolean {
    return this.held !== undefined && this.session.leaseId === this.held.lease;
  }

  /** This node's controller epoch while `isController()`, else undefined. */
  get controllerEpoch(): number | undefined {
    return this.isController() ? this.held!.epoch : undefined;
  }

  /** The controller this node last saw (itself included). */
  get controller(): ControllerInfo {
    return this.known;
  }

  /**
   * A controller write: refused here without a request unless this node is the controller at
   * `controllerEpoch`, and fenced in etcd by the epoch (see `fencedTxn`). A `notController` answer deposes
   * this node at once.
   */
  async write(controllerEpoch: number, request: TxnRequest): Promise<FencedTxnResult> {
    const current = this.controllerEpoch;
    if (current !== controllerEpoch) {
      return { outcome: 'notController', currentEpoch: current ?? this.known.controllerEpoch };
    }
    const result = await fencedTxn(this.store, this.clusterId, controllerEpoch, request);
    if (result.outcome === 'notController' && this.held?.epoch === controllerEpoch) {
      this.depose('fenced');
      this.campaign();
    }
    return result;
  }

  /** Stops campaigning; if controller, resigns and deletes the key (only if it is still this epoch's). */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.session.off('active', this.onActive);
    this.session.off('expired', this.onExpired);
    const held = this.held;
    const wasController = this.isController();
    this.stop('closed');
    if (wasController && held !== undefined) {
      try {
        await this.store.txn({
          compare: [{ key: this.key, target: 'createRevision', result: 'equal', operand: held.epoch }],
          success: [{ type: 'delete', key: this.key }],
        });
      } catch {
        // The key goes with the lease anyway.
      }
    }
  }

  private stop(reason: ResignReason): void {
    this.round++;
    this.retryTask.cancel();
    this.watch?.cancel();
    this.watch = undefined;
    this.depose(reason);
  }

  private depose(reason: ResignReason): void {
    const held = this.held;
    if (held === undefined) return;
    this.held = undefined;
    this.emit('resigned', { controllerEpoch: held.epoch, reason });
  }

  /** One attempt to become controller on the session's current lease, or to learn who is. */
  private campaign(): void {
    if (this.isClosed) return;
    const lease = this.session.leaseId;
    if (lease === undefined) return; // The session's next `active` starts the next campaign.
    const round = ++this.round;
    this.retryTask.cancel();
    this.watch?.cancel();
    this.watch = undefined;
    this.store
      .txn({
        compare: [{ key: this.key, target: 'createRevision', result: 'equal', operand: 0 }],
        success: [{ type: 'put', key: this.key, value: controllerValue(this.nodeId), lease }],
        failure: [{ type: 'get', key: this.key }],
      })
      .then(
        (response) => {
          if (round !== this.round) return;
          if (response.succeeded) {
            this.observe(
              { lease, createRevision: response.revision, controllerId: this.nodeId },
              response.revision,
              round,
            );
          } else {
            const result = response.results[0];
            this.observeRead(
              result?.type === 'get' ? result.kvs[0] : undefined,
              response.revision,
              lease,
              round,
            );
          }
        },
        (error: unknown) => {
          if (round !== this.round) return;
          if (error instanceof MetadataStoreError && error.isOutcomeUnknown) {
            // The key may have been created, by us: read before anything else.
            this.reread(lease, round);
          } else {
            // A definite failure (lease gone: the session is about to expire) or etcd unreachable.
            this.retryLater(round);
          }
        },
      );
  }

  private reread(lease: LeaseId, round: number): void {
    this.store.get(this.key).then(
      ({ kv, revision }) => {
        if (round === this.round) this.observeRead(kv, revision, lease, round);
      },
      () => {
        if (round === this.round) this.retryLater(round);
      },
    );
  }

  private observeRead(kv: KeyValue | undefined, revision: number, lease: LeaseId, round: number): void {
    if (kv === undefined) {
      // Gone between the compare and the read: campaign again at once.
      this.campaign();
      return;
    }
    this.observe(
      { lease: kv.lease, createRevision: kv.createRevision, controllerId: parseControllerId(kv) },
      revision,
      round,
      lease,
    );
  }

  /** The controller key as read at `revision`; `ownLease` is the lease this round campaigned with. */
  private observe(
    holder: {
      readonly lease: LeaseId;
      readonly createRevision: number;
      readonly controllerId: number | undefined;
    },
    revision: number,
    round: number,
    ownLease: LeaseId = holder.lease,
  ): void {
    const isOurs = holder.lease === ownLease && this.session.leaseId === ownLease;
    // Someone else holds the key while we believed we did: we were deposed without noticing.
    if (!isOurs && this.held !== undefined) this.depose('keyLost');
    if (isOurs && this.held?.epoch !== holder.createRevision) {
      this.held = { epoch: holder.createRevision, lease: ownLease };
      this.emit('elected', { controllerEpoch: holder.createRevision });
    }
    this.setKnown({ controllerId: holder.controllerId, controllerEpoch: holder.createRevision });
    this.watchFrom(revision + 1, holder.createRevision, round);
  }

  private setKnown(info: ControllerInfo): void {
    if (info.controllerId === this.known.controllerId && info.controllerEpoch === this.known.controllerEpoch)
      return;
    this.known = info;
    this.emit('controllerChanged', info);
  }

  /** Watches the key for the deletion of the controller at `epoch`. */
  private watchFrom(startRevision: number, epoch: number, round: number): void {
    this.watch = this.store.watch(
      this.key,
      { startRevision },
      {
        onEvents: (events: readonly WatchEvent[]) => {
          if (round !== this.round) return;
          if (events.some((event) => event.type === 'delete')) this.onControllerGone(epoch);
        },
        onCancelled: () => {
          if (round !== this.round) return;
          // Compacted or failed: read the key again and start over from what is there.
          this.watch = undefined;
          const lease = this.session.leaseId;
          if (lease === undefined) return;
          this.reread(lease, round);
        },
      },
    );
  }

  private onControllerGone(epoch: number): void {
    if (this.held?.epoch === epoch) this.depose('keyLost');
    this.setKnown({ controllerId: undefined, controllerEpoch: 0 });
    this.campaign();
  }

  private retryLater(round: number): void {
    if (round !== this.round || this.isClosed) return;
    this.retryTask.delayMs = this.retryBackoffMs;
    this.timer.add(this.retryTask);
  }
}
