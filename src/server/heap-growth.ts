import { setFlagsFromString } from 'node:v8';

/**
 * Sets V8's heap growing factor for this process: after a full collection, the old generation may grow to
 * (1 + percent/100) × what survived before the next one starts. 0 leaves V8's own choice, which it derives
 * from how fast it collects and goes up to 4×.
 *
 * Why cohort sets it: the longest event-loop task of a large rebalance is a full collection's atomic pause,
 * and that pause grows with the dead objects it finds (each call's HTTP/2 header values are external
 * strings V8 finalises one by one in the pause, and a parked call's ~7 KB of grpc-js and HTTP/2 objects is
 * old by the time it is answered). Growing up to 4×, one collection met a 5,000-member rebalance's garbage
 * all at once (a 46–67 ms pause); at 2× collections come sooner and each finds less (26–45 ms in the worst
 * round; docs/performance.md, G11). Kafka ships pause-oriented JVM settings in its start script for the same
 * reason (G1 with MaxGCPauseMillis=20).
 *
 * Process-wide, so only the server program calls it, once, before the server starts. The `setFlags`
 * parameter is for tests.
 */
export function applyHeapGrowingPercent(
  percent: number,
  setFlags: (flags: string) => void = setFlagsFromString,
): void {
  if (percent === 0) return;
  setFlags(`--heap-growing-percent=${percent}`);
}
