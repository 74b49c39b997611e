import { DelayedOperationPurgatory, type PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { SystemTimer } from '../timer';
import type { BrokerRequestContext } from './broker-protocol';
import { DelayedFetch } from './delayed-fetch';
import type { DelayedHighWatermark } from './delayed-high-watermark';
import type { DelayedProduce } from './delayed-produce';

/**
 * What this node parks: acks=-1 Produces, the offsets stores' writes and their loads' waits for the HW in
 * the produce purgatory; Fetches in the fetch purgatory.
 */
export type ParkedOperation = DelayedProduce | DelayedHighWatermark | DelayedFetch;

/** A parked request whose caller may go away: it is then aborted (completed without an answer). */
type AbortableOperation = DelayedProduce | DelayedFetch;

function abortError(): Error {
  const error = new Error('the call was cancelled');
  error.name = 'AbortError';
  return error;
}

/**
 * The two purgatories (Kafka's delayedProducePurgatory and delayedFetchPurgatory) and the operations
 * parked in them: one way to park an operation and answer its caller when it completes (`park`), the
 * wake-ups the partitions' events send them, and the answer every parked operation gets at shutdown.
 */
export class ParkedOperations {
  private readonly producePurgatory: DelayedOperationPurgatory<DelayedProduce | DelayedHighWatermark>;
  private readonly fetchPurgatory: DelayedOperationPurgatory<DelayedFetch>;
  /** Parked operations, answered at shutdown. */
  private readonly parked = new Set<ParkedOperation>();

  constructor(time: Time, onTaskError: (error: unknown) => void) {
    // One timer per purgatory, as in Kafka: numDelayed is its timer's size.
    this.producePurgatory = new DelayedOperationPurgatory(
      'Produce',
      new SystemTimer({ name: 'produce-purgatory', time, onTaskError }),
    );
    this.fetchPurgatory = new DelayedOperationPurgatory(
      'Fetch',
      new SystemTimer({ name: 'fetch-purgatory', time, onTaskError }),
    );
  }

  get numDelayedProduce(): number {
    return this.producePurgatory.numDelayed;
  }

  get numDelayedFetch(): number {
    return this.fetchPurgatory.numDelayed;
  }

  /** Kafka's gauges of the Produce and Fetch purgatories. */
  stats(): PurgatoryStats[] {
    return [this.producePurgatory.stats(), this.fetchPurgatory.stats()];
  }

  /**
   * Parks the operation `create` makes (it calls `respond`, given to it, once it completes) in its
   * purgatory under `keys`, unless it can complete at once, and answers the call with `answer` when it
   * completes, by an event, its timeout or shutdown; if `answer` throws, the call rejects with it. With
   * `context` (a request's; only an operation that can be aborted) the caller may go away: the operation
   * is then aborted, never answered, and the call rejects with an AbortError.
   */
  park<Op extends ParkedOperation, T>(
    keys: readonly string[],
    create: (respond: () => void) => Op,
    answer: (op: Op, resolve: (value: T) => void, reject: (error: unknown) => void) => void,
    context?: Op extends AbortableOperation ? BrokerRequestContext : never,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        this.parked.delete(op);
        // Only an abortable operation takes a context (the parameter's type).
        (op as AbortableOperation).abort();
        reject(abortError());
      };
      const respond = (): void => {
        this.parked.delete(op);
        unlisten?.();
        // The answer is this call's: a failure while making it (a Fetch's re-read of the log) rejects this
        // call, not the request whose append or HW move happened to complete the operation.
        try {
          answer(op, resolve, reject);
        } catch (error) {
          reject(error);
        }
      };
      const op = create(respond);
      this.parked.add(op);
      // Runs onAbort at once if the caller has already gone; respond (which unregisters) runs only later.
      const unlisten = context?.onCancel?.(onAbort);
      if (op.isCompleted) return; // aborted: the caller was already gone
      if (op instanceof DelayedFetch) this.fetchPurgatory.tryCompleteElseWatch(op, keys);
      else this.producePurgatory.tryCompleteElseWatch(op, keys);
    });
  }

  /**
   * An append on a leader: parked follower Fetches wait for the LEO, consumer Fetches for the HW (one
   * check of the key covers both); Produces and HW waits only if the HW moved (an ISR of one).
   */
  afterLeaderAppend(key: string, isHwIncreased: boolean): void {
    this.fetchPurgatory.checkAndComplete(key);
    if (isHwIncreased) this.producePurgatory.checkAndComplete(key);
  }

  /**
   * Kafka's tryCompleteDelayedRequests: the partition's HW moved, or its role changed, or it is gone:
   * every operation parked on it is checked, Produces (and HW waits) first.
   */
  checkAndComplete(key: string): void {
    this.producePurgatory.checkAndComplete(key);
    this.fetchPurgatory.checkAndComplete(key);
  }

  /** Checks the Produces and HW waits parked on the partition (its ISR or its leadership changed). */
  checkProduces(key: string): void {
    this.producePurgatory.checkAndComplete(key);
  }

  /** Checks the Fetches parked on the partition (a follower's HW moved). */
  checkFetches(key: string): void {
    this.fetchPurgatory.checkAndComplete(key);
  }

  /** Answers every parked operation now: a Fetch with what is there, a Produce with what it has. */
  answerAll(): void {
    for (const op of [...this.parked]) op.forceComplete();
  }

  /** Stops both purgatories' timers. */
  shutdown(): void {
    this.producePurgatory.shutdown();
    this.fetchPurgatory.shutdown();
  }
}
