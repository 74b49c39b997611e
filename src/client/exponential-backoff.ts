/** Settings of `ExponentialBackoff`. */
export interface ExponentialBackoffOptions {
  /** The first wait. */
  readonly initialMs: number;
  /** No wait grows beyond this (before jitter). */
  readonly maxMs: number;
  /** Growth per attempt; default 2. */
  readonly multiplier?: number;
  /** Each wait is scaled by a random factor in [1 - jitter, 1 + jitter); default 0.2. */
  readonly jitter?: number;
  /** A source of numbers in [0, 1); default `Math.random`. Tests pass a fixed one. */
  readonly random?: () => number;
}

/**
 * Kafka's `ExponentialBackoff`: wait `initialMs · multiplier^attempts`, capped at `maxMs`, times a random
 * factor so that many clients failing together do not retry in lockstep.
 */
export class ExponentialBackoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly multiplier: number;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(options: ExponentialBackoffOptions) {
    const { initialMs, maxMs, multiplier = 2, jitter = 0.2, random = Math.random } = options;
    if (!(initialMs >= 0) || !(maxMs >= initialMs)) {
      throw new RangeError(`backoff needs 0 <= initialMs <= maxMs, got ${initialMs} and ${maxMs}`);
    }
    if (!(multiplier >= 1)) throw new RangeError(`backoff multiplier must be >= 1, got ${multiplier}`);
    if (!(jitter >= 0 && jitter < 1)) throw new RangeError(`backoff jitter must be in [0, 1), got ${jitter}`);
    this.initialMs = initialMs;
    this.maxMs = maxMs;
    this.multiplier = multiplier;
    this.jitter = jitter;
    this.random = random;
  }

  /** The wait before retry number `attempts + 1` (`attempts` failures so far, counting from 0), whole ms. */
  backoffMs(attempts: number): number {
    const term = Math.min(this.initialMs * this.multiplier ** Math.max(0, attempts), this.maxMs);
    const factor = 1 - this.jitter + 2 * this.jitter * this.random();
    return Math.round(term * factor);
  }
}
