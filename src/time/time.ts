/**
 * The clocks cohort reads. Everything that waits takes a `Time` so tests (and `--manual-clock`) can
 * replace real time with a clock that only moves when told.
 *
 * - `monotonicMs()` is for deadlines: it never goes backwards and is not affected by wall-clock steps.
 *   Values are whole milliseconds.
 * - `nowMs()` is the wall clock (milliseconds since the epoch), for timestamps that leave the process.
 */
export interface Time {
  monotonicMs(): number;
  nowMs(): number;
  /**
   * Present only on clocks that move by hand. A timer driven by such a clock subscribes here instead of
   * arming a real timeout, and runs what became due synchronously inside `advance`. Returns an unsubscribe.
   */
  onAdvance?(listener: (monotonicMs: number) => void): () => void;
  /**
   * Present only on clocks that follow real time and can also jump ahead (`RunningManualTime`). A timer
   * driven by such a clock arms real timeouts as on the system clock and, on each jump, also runs what
   * the jump made due, synchronously inside the jump. Returns an unsubscribe.
   */
  onJump?(listener: (monotonicMs: number) => void): () => void;
}
