import type { Partitioner } from './partitioner';

/** How many replicas must have a record before its send resolves: 0 (none), 1 (the leader), -1 (every in-sync replica). */
export type Acks = 0 | 1 | -1;

/** How to produce. Durations in milliseconds. */
export interface ProducerOptions {
  /** Default -1 (every in-sync replica, Kafka's `acks=all`). */
  readonly acks?: Acks;
  /**
   * How long a record may wait for more records to share its batch (linger.ms): a little latency for far
   * fewer requests. Default 5.
   */
  readonly lingerMs?: number;
  /** A partition's batch is sent once it holds this many bytes, lingering or not (batch.size). Default 16,384. */
  readonly batchSizeBytes?: number;
  /** How long the server may wait for the acks, and (plus a second) the deadline of each Produce. Default 30,000. */
  readonly requestTimeoutMs?: number;
  /**
   * How long a send may take in all, retries included, before it rejects (delivery.timeout.ms). Default
   * 120,000.
   */
  readonly deliveryTimeoutMs?: number;
  /** First wait before retrying a retriable failure; it doubles per attempt. Default 100. */
  readonly retryBackoffMs?: number;
  /** Longest wait between retries. Default 1,000. */
  readonly retryBackoffMaxMs?: number;
  /** Chooses partitions for records that name none. Default: `createDefaultPartitioner()`. */
  readonly partitioner?: Partitioner;
}

/** The defaults of `ProducerOptions`. */
export const PRODUCER_DEFAULTS = Object.freeze({
  acks: -1 as Acks,
  lingerMs: 5,
  batchSizeBytes: 16_384,
  requestTimeoutMs: 30_000,
  deliveryTimeoutMs: 120_000,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1_000,
});

/** `ProducerOptions` with the defaults filled in (the partitioner aside), checked and frozen. */
export interface ResolvedProducerOptions {
  readonly acks: Acks;
  readonly lingerMs: number;
  readonly batchSizeBytes: number;
  readonly requestTimeoutMs: number;
  readonly deliveryTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
}

const INT32_MAX = 2_147_483_647;

/** Fills in the defaults and checks everything at once; throws a RangeError listing every problem. */
export function resolveProducerOptions(options: ProducerOptions): ResolvedProducerOptions {
  const problems: string[] = [];
  const d = PRODUCER_DEFAULTS;
  const whole = (name: string, value: number | undefined, fallback: number, min: number): number => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min || v > INT32_MAX) {
      problems.push(`${name} must be a whole number between ${min} and ${INT32_MAX}, got ${v}`);
    }
    return v;
  };
  const acks = options.acks ?? d.acks;
  if (acks !== 0 && acks !== 1 && acks !== -1) problems.push(`acks must be 0, 1 or -1, got ${String(acks)}`);
  const resolved: ResolvedProducerOptions = {
    acks,
    lingerMs: whole('lingerMs', options.lingerMs, d.lingerMs, 0),
    batchSizeBytes: whole('batchSizeBytes', options.batchSizeBytes, d.batchSizeBytes, 1),
    requestTimeoutMs: whole('requestTimeoutMs', options.requestTimeoutMs, d.requestTimeoutMs, 1),
    deliveryTimeoutMs: whole('deliveryTimeoutMs', options.deliveryTimeoutMs, d.deliveryTimeoutMs, 1),
    retryBackoffMs: whole('retryBackoffMs', options.retryBackoffMs, d.retryBackoffMs, 0),
    retryBackoffMaxMs: whole('retryBackoffMaxMs', options.retryBackoffMaxMs, d.retryBackoffMaxMs, 0),
  };
  if (resolved.retryBackoffMaxMs < resolved.retryBackoffMs) {
    problems.push(
      `retryBackoffMaxMs (${resolved.retryBackoffMaxMs}) must not be lower than retryBackoffMs (${resolved.retryBackoffMs})`,
    );
  }
  if (resolved.deliveryTimeoutMs < resolved.lingerMs + resolved.requestTimeoutMs) {
    problems.push(
      `deliveryTimeoutMs (${resolved.deliveryTimeoutMs}) must be at least lingerMs + requestTimeoutMs ` +
        `(${resolved.lingerMs + resolved.requestTimeoutMs}), or a send could expire before its first attempt ends`,
    );
  }
  if (options.partitioner !== undefined && typeof options.partitioner !== 'function') {
    problems.push('partitioner must be a function (record, partitionCount) => partition');
  }
  if (problems.length > 0) throw new RangeError(`invalid producer options:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze(resolved);
}
