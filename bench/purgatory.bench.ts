/**
 * bench:purgatory — cohort's DelayedOperationPurgatory on a SystemTimer against a naive purgatory
 * (bench/baseline/naive-purgatory.ts: a setTimeout per operation + Map<key, Set<op>>), in one process.
 *
 * The workload follows Kafka's jmh TestPurgatoryPerformance:
 * - operations arrive as a Poisson process at a target rate (exponential gaps);
 * - each watches 3 distinct keys out of 100. Kafka's tool draws one set of keys for the whole run; here
 *   each operation draws its own (from a pool of 4,096 pre-drawn triples), which spreads the watchers over
 *   the keys the way partitions spread produce requests;
 * - its completion latency is log-normal with p50 = 20 ms and p75 = 60 ms; when the latency is below the
 *   200 ms timeout (about 92% of operations) a completion event is scheduled for enqueue time + latency,
 *   which completes the operation as Kafka's tool does (its CompletionQueue calls forceComplete on the
 *   operation); the others expire. `--completion=checkAndComplete` makes the event mark the operation
 *   completable and call checkAndComplete on each of its keys instead: that adds the scans of the watcher
 *   lists, which cost both designs about the same (docs/performance.md, finding 5).
 *
 * Both sides share one load generator, so it costs them the same: a driver that, on each event-loop turn,
 * first fires the completion events that are due (a binary heap of (time, op) in parallel arrays,
 * bench/support/event-heap.ts), then enqueues the arrivals that are due (at most 4 ms worth per turn), then
 * yields with setImmediate when it is behind and with setTimeout until the next event or arrival when it is
 * not. The same seed gives both sides the same arrival gaps, latencies and keys at a given rate.
 *
 * A step runs one side at one target rate for STEP_MS, then lets every operation finish and checks that
 * each completed exactly once. A step is sustained when the achieved enqueue rate is >= 95% of the target
 * and the completion events' lag (firing time − scheduled time, while arrivals run) stays bounded: its
 * median over the last quarter of the step is <= 10 ms and its p99 over the whole step is <= 100 ms (half
 * the timeout). An overloaded loop falls behind steadily, so its lag at the end of a step is large; a
 * neighbour's burst on this shared machine causes a spike that the median of the last quarter ignores.
 *
 * Each round measures, for each side (the first side alternates between rounds):
 * - at a fixed rate (FIXED_RATE) for FIXED_MS: CPU µs per operation (process.cpuUsage from the first
 *   arrival until every operation has finished, ÷ operations) and the heap retained by the pending
 *   operations (heapUsed after a full GC at the end of the arrivals − after a full GC before the first);
 *   a third, "harness" side runs the same generator with no purgatory (events complete operations
 *   directly, operations due to expire complete at enqueue) to show what the generator itself costs;
 * - the highest sustained rate: round 1 steps the rate up ×1.25 from 25,000/s until a step fails; later
 *   rounds step up ×1.1 from 0.85× the side's previous result (down ÷1.1 if that first step fails).
 *
 * Run with `npm run bench:purgatory`; `taskset -c 0 npm run bench:purgatory` pins the process (and V8's
 * helper threads) to one core. `--rounds=N` changes the number of rounds (default 5).
 * `--completion=checkAndComplete` (see above; the default is `forceComplete`, Kafka's model, which measures
 * the purgatory's own work: watching, the timeout, removing completed operations). The last line of
 * output is a JSON object of the figures.
 */
import { performance } from 'node:perf_hooks';
import { DelayedOperation, DelayedOperationPurgatory } from '../src/purgatory';
import { SystemTimer } from '../src/timer';
import { NaiveOperation, NaivePurgatory } from './baseline/naive-purgatory';
import { EventHeap } from './support/event-heap';
import { collectGarbage, GcRecorder } from './support/gc-recorder';
import { describeMachine } from './support/machine';
import { Random } from './support/random';
import { line, printFigures, round, table, verdict } from './support/report';
import { RoundSet } from './support/round-set';
import { median, percentileOfSorted, sortedSample } from './support/stats';
import { readRounds } from './support/bench-args';

const ROUNDS = readRounds(5);
const COMPLETION = readCompletion();
const KEY_SPACE = 100;
const KEYS_PER_OP = 3;
const KEY_POOL = 4_096;
const TIMEOUT_MS = 200;
const LATENCY_P50_MS = 20;
const LATENCY_P75_MS = 60;
const LATENCY_SAMPLES = 1 << 20;
/** The 75th percentile of the standard normal distribution. */
const Z75 = 0.67449;

const STEP_MS = 2_000;
const FIXED_RATE = 50_000;
const FIXED_MS = 3_000;
const FIRST_RATE = 25_000;
const FIRST_FACTOR = 1.25;
const LATER_START = 0.85;
const LATER_FACTOR = 1.1;
const MIN_RATE = 2_000;
const MAX_STEPS_PER_SEARCH = 16;
/** Arrivals enqueued per turn at most, in milliseconds of the target rate, so one turn never runs long. */
const MAX_ARRIVALS_PER_TURN_MS = 4;
const SUSTAINED_ACHIEVED_FRACTION = 0.95;
const SUSTAINED_LAG_P99_MS = 100;
const SUSTAINED_LATE_LAG_MEDIAN_MS = 10;
/** How long after the last arrival every operation must have finished (the timeout, plus room for a busy loop). */
const DRAIN_LIMIT_MS = TIMEOUT_MS + 5_000;

const TARGET_RATE_RATIO = 2;
const TARGET_RATE = 100_000;

function readCompletion(): 'checkAndComplete' | 'forceComplete' {
  const arg = process.argv.find((a) => a.startsWith('--completion='));
  // Kafka's TestPurgatoryPerformance completes through forceComplete (its CompletionQueue).
  const value = arg === undefined ? 'forceComplete' : arg.slice('--completion='.length);
  if (value !== 'checkAndComplete' && value !== 'forceComplete') {
    throw new RangeError(`--completion must be checkAndComplete or forceComplete, got ${value}`);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------- workload

interface Workload {
  /** Latency samples in ms, drawn once; a step reads them in order from the start. */
  latenciesMs: Float64Array;
  keyTriples: string[][];
}

function makeWorkload(): Workload {
  const random = new Random(0x5eed);
  const mu = Math.log(LATENCY_P50_MS);
  const sigma = (Math.log(LATENCY_P75_MS) - mu) / Z75;
  const latenciesMs = new Float64Array(LATENCY_SAMPLES);
  for (let i = 0; i < LATENCY_SAMPLES; i++) latenciesMs[i] = Math.exp(mu + sigma * random.gaussian());
  const keys: string[] = [];
  for (let k = 0; k < KEY_SPACE; k++) keys.push(`key-${k}`);
  const keyTriples: string[][] = [];
  for (let i = 0; i < KEY_POOL; i++) {
    const chosen = new Set<string>();
    while (chosen.size < KEYS_PER_OP) chosen.add(keys[random.int(0, KEY_SPACE - 1)]);
    keyTriples.push([...chosen]);
  }
  return { latenciesMs, keyTriples };
}

/** What every side's operations report to; exactly-once is checked from these counts. */
class StepCounters {
  completed = 0;
  expired = 0;
  duplicate = 0;
}

/** A purgatory under test, fresh for each step. */
interface SideInstance<Op> {
  /** Creates an operation watching `keys` and hands it to the purgatory (tryCompleteElseWatch). */
  enqueue(keys: readonly string[]): Op;
  /** The completion event: marks `op` completable and checks its keys. */
  complete(op: Op): void;
  close(): void;
}

interface Side {
  readonly name: string;
  open(counters: StepCounters): SideInstance<unknown>;
}

// ---------------------------------------------------------------------------------------------- cohort

class CohortOperation extends DelayedOperation {
  isCompletable = false;
  private completions = 0;

  constructor(
    readonly keys: readonly string[],
    private readonly counters: StepCounters,
  ) {
    super(TIMEOUT_MS);
  }

  tryComplete(): boolean {
    return this.isCompletable && this.forceComplete();
  }

  onComplete(): void {
    if (++this.completions > 1) this.counters.duplicate++;
    this.counters.completed++;
  }

  onExpiration(): void {
    this.counters.expired++;
  }
}

const COHORT: Side = {
  name: 'cohort',
  open(counters: StepCounters): SideInstance<CohortOperation> {
    const timer = new SystemTimer({ name: 'bench-purgatory' });
    const purgatory = new DelayedOperationPurgatory<CohortOperation>('bench', timer);
    return {
      enqueue(keys) {
        const op = new CohortOperation(keys, counters);
        purgatory.tryCompleteElseWatch(op, keys);
        return op;
      },
      complete(op) {
        op.isCompletable = true;
        if (COMPLETION === 'forceComplete') {
          op.forceComplete();
          return;
        }
        const keys = op.keys;
        for (let i = 0; i < keys.length; i++) purgatory.checkAndComplete(keys[i]);
      },
      close() {
        purgatory.shutdown();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------- naive

class NaiveBenchOperation extends NaiveOperation {
  isCompletable = false;
  private completions = 0;

  constructor(
    readonly keys: readonly string[],
    private readonly counters: StepCounters,
  ) {
    super(TIMEOUT_MS);
  }

  tryComplete(): boolean {
    return this.isCompletable && this.forceComplete();
  }

  onComplete(): void {
    if (++this.completions > 1) this.counters.duplicate++;
    this.counters.completed++;
  }

  onExpiration(): void {
    this.counters.expired++;
  }
}

const NAIVE: Side = {
  name: 'naive',
  open(counters: StepCounters): SideInstance<NaiveBenchOperation> {
    const purgatory = new NaivePurgatory<NaiveBenchOperation>();
    return {
      enqueue(keys) {
        const op = new NaiveBenchOperation(keys, counters);
        purgatory.tryCompleteElseWatch(op, keys);
        return op;
      },
      complete(op) {
        op.isCompletable = true;
        if (COMPLETION === 'forceComplete') {
          op.forceComplete();
          return;
        }
        const keys = op.keys;
        for (let i = 0; i < keys.length; i++) purgatory.checkAndComplete(keys[i]);
      },
      close() {
        purgatory.shutdown();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------- harness

/** The generator alone: no watching, no timeouts. Operations that would expire complete at enqueue. */
class HarnessOperation {
  constructor(readonly keys: readonly string[]) {}
}

const HARNESS: Side = {
  name: 'harness',
  open(counters: StepCounters): SideInstance<HarnessOperation> {
    return {
      enqueue(keys) {
        return new HarnessOperation(keys);
      },
      complete() {
        counters.completed++;
      },
      close() {},
    };
  },
};

// ---------------------------------------------------------------------------------------------- driver

interface StepOptions {
  rate: number;
  durationMs: number;
  /** Take a heap reading (full GC) when the arrivals end, with pending operations live. */
  measureHeap: boolean;
}

interface StepResult {
  side: string;
  targetRate: number;
  achievedRate: number;
  enqueued: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  /** Median lag of the events fired in the last quarter of the arrivals. */
  lateLagMedianMs: number;
  cpuUsPerOp: number;
  /** Heap retained at the end of the arrivals, in bytes (NaN unless measured). */
  heapRetainedBytes: number;
  /** Operations not finished when the heap was read. */
  pendingAtHeapReading: number;
  lost: number;
  duplicate: number;
  expiredFraction: number;
  gcCount: number;
  gcPauseMs: number;
  isSustained: boolean;
}

async function runStep(
  side: Side,
  workload: Workload,
  gc: GcRecorder,
  options: StepOptions,
): Promise<StepResult> {
  const { rate, durationMs } = options;
  const random = new Random(0xa771 ^ Math.round(rate));
  const meanGapMs = 1_000 / rate;
  const maxPerTurn = Math.max(64, Math.ceil((rate * MAX_ARRIVALS_PER_TURN_MS) / 1_000));
  const lagMs = new Float64Array(Math.ceil(rate * (durationMs / 1_000) * 1.1) + 1_024);
  const events = new EventHeap<unknown>();
  const counters = new StepCounters();
  const { latenciesMs, keyTriples } = workload;
  const instance = side.open(counters);
  // The harness finishes an operation when its event fires or, for one that would expire, at once.
  const isHarness = side === HARNESS;

  collectGarbage();
  await gc.settle();
  gc.clear();
  const heapBefore = process.memoryUsage().heapUsed;

  let enqueued = 0;
  let lagCount = 0;
  let lateLagFrom = -1;
  let heapRetainedBytes = NaN;
  let pendingAtHeapReading = 0;
  let gcCpuUs = 0;
  const startMs = performance.now();
  const endMs = startMs + durationMs;
  const lateFromMs = startMs + 0.75 * durationMs;
  const cpuStart = process.cpuUsage();
  let nextArrivalMs = startMs + random.exponential(meanGapMs);
  let isArriving = true;
  let arrivalsEndedMs = endMs;

  await new Promise<void>((resolve, reject) => {
    const tick = (): void => {
      try {
        const nowMs = performance.now();
        if (lateLagFrom < 0 && nowMs >= lateFromMs) lateLagFrom = lagCount;
        while (events.peekTime() <= nowMs) {
          const dueMs = events.peekTime();
          const op = events.pop();
          if (isArriving && lagCount < lagMs.length) lagMs[lagCount++] = nowMs - dueMs;
          instance.complete(op);
        }
        if (isArriving) {
          if (nowMs >= endMs) {
            isArriving = false;
            arrivalsEndedMs = nowMs;
            if (options.measureHeap) {
              const cpuBeforeGc = process.cpuUsage();
              collectGarbage();
              heapRetainedBytes = process.memoryUsage().heapUsed - heapBefore;
              pendingAtHeapReading = enqueued - counters.completed;
              const gcCpu = process.cpuUsage(cpuBeforeGc);
              gcCpuUs = gcCpu.user + gcCpu.system;
            }
          } else {
            let budget = maxPerTurn;
            while (nextArrivalMs <= nowMs && budget-- > 0) {
              const latency = latenciesMs[enqueued & (LATENCY_SAMPLES - 1)];
              const op = instance.enqueue(keyTriples[enqueued % KEY_POOL]);
              enqueued++;
              if (latency < TIMEOUT_MS) events.push(nowMs + latency, op);
              else if (isHarness) counters.completed++;
              nextArrivalMs += random.exponential(meanGapMs);
            }
          }
        }
        const afterMs = performance.now();
        if (!isArriving && counters.completed >= enqueued && events.size === 0) {
          resolve();
          return;
        }
        if (!isArriving && afterMs - arrivalsEndedMs > DRAIN_LIMIT_MS) {
          resolve();
          return;
        }
        const nextMs = Math.min(events.peekTime(), isArriving ? Math.min(nextArrivalMs, endMs) : Infinity);
        // While operations wait only for their timeouts, poll every millisecond to see them finish.
        const waitMs = nextMs === Infinity ? 1 : nextMs - afterMs;
        if (waitMs <= 0) setImmediate(tick);
        else setTimeout(tick, Math.max(1, Math.floor(waitMs)));
      } catch (error) {
        reject(error);
      }
    };
    setTimeout(tick, 0);
  });

  const cpu = process.cpuUsage(cpuStart);
  const windowEndMs = performance.now();
  instance.close();
  await gc.settle();
  const gcFigures = gc.between(startMs, windowEndMs);
  const lag = sortedSample(lagMs, lagCount);
  const achievedRate = enqueued / (durationMs / 1_000);
  const lagP99Ms = percentileOfSorted(lag, 99);
  const lateLagMedianMs = median(Array.from(lagMs.subarray(Math.max(0, lateLagFrom), lagCount)));
  const lost = enqueued - counters.completed;
  return {
    side: side.name,
    targetRate: rate,
    achievedRate,
    enqueued,
    lagP50Ms: percentileOfSorted(lag, 50),
    lagP99Ms,
    lagMaxMs: lag.length > 0 ? lag[lag.length - 1] : NaN,
    lateLagMedianMs,
    cpuUsPerOp: (cpu.user + cpu.system - gcCpuUs) / enqueued,
    heapRetainedBytes,
    pendingAtHeapReading,
    lost,
    duplicate: counters.duplicate,
    expiredFraction: counters.expired / Math.max(1, enqueued),
    gcCount: gcFigures.count,
    gcPauseMs: gcFigures.pauseMs,
    isSustained:
      achievedRate >= SUSTAINED_ACHIEVED_FRACTION * rate &&
      lagP99Ms <= SUSTAINED_LAG_P99_MS &&
      lateLagMedianMs <= SUSTAINED_LATE_LAG_MEDIAN_MS &&
      lost === 0 &&
      counters.duplicate === 0,
  };
}

function describeStep(s: StepResult): (string | number)[] {
  return [
    s.side,
    Math.round(s.targetRate),
    Math.round(s.achievedRate),
    s.lagP50Ms,
    s.lagP99Ms,
    s.lagMaxMs,
    s.lateLagMedianMs,
    s.cpuUsPerOp,
    `${s.gcCount} (${round(s.gcPauseMs, 1)} ms)`,
    s.lost,
    s.duplicate,
    s.isSustained ? 'yes' : 'no',
  ];
}

const STEP_HEADER = [
  'side',
  'target/s',
  'achieved/s',
  'lag p50',
  'p99',
  'max',
  'last¼ p50 ms',
  'cpu µs/op',
  'gc',
  'lost',
  'dup',
  'sustained',
];

/** Steps the rate from `startRate` by `factor` and returns the highest sustained rate (0 if none). */
async function findSustainedRate(
  side: Side,
  workload: Workload,
  gc: GcRecorder,
  startRate: number,
  factor: number,
  failures: string[],
): Promise<number> {
  const rows: (string | number)[][] = [STEP_HEADER];
  let rate = startRate;
  let best = 0;
  for (let step = 0; step < MAX_STEPS_PER_SEARCH && rate >= MIN_RATE; step++) {
    const result = await runStep(side, workload, gc, { rate, durationMs: STEP_MS, measureHeap: false });
    rows.push(describeStep(result));
    if (result.lost > 0 || result.duplicate > 0) {
      failures.push(
        `${side.name} at ${Math.round(rate)}/s: ${result.lost} lost, ${result.duplicate} completed twice`,
      );
    }
    if (result.isSustained) {
      best = rate;
      rate *= factor;
    } else if (best > 0) {
      break;
    } else {
      rate /= factor;
    }
  }
  table(rows);
  return Math.round(best);
}

// ---------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const machine = describeMachine();
  const startedAt = new Date().toISOString();
  line(`bench:purgatory  ${startedAt}  node ${machine.node}  ${machine.cpu} x${machine.cores}`);
  line(
    `cpus allowed: ${machine.cpusAllowed}  rounds: ${ROUNDS}  step: ${STEP_MS} ms  fixed rate: ${FIXED_RATE}/s`,
  );
  const workload = makeWorkload();
  const gc = new GcRecorder();
  gc.start();
  const rounds = new RoundSet();
  const failures: string[] = [];

  // Warm-up: optimise both sides (and the generator) before anything is recorded.
  for (const side of [COHORT, NAIVE, HARNESS]) {
    await runStep(side, workload, gc, { rate: 20_000, durationMs: 700, measureHeap: false });
  }

  const previous = new Map<string, number>();
  for (let r = 0; r < ROUNDS; r++) {
    const sides = r % 2 === 0 ? [COHORT, NAIVE] : [NAIVE, COHORT];
    line();
    line(`round ${r + 1}: fixed rate ${FIXED_RATE}/s for ${FIXED_MS} ms`);
    const fixedRows: (string | number)[][] = [[...STEP_HEADER, 'heap MB', 'pending', 'B/pending']];
    for (const side of [...sides, HARNESS]) {
      const result = await runStep(side, workload, gc, {
        rate: FIXED_RATE,
        durationMs: FIXED_MS,
        measureHeap: true,
      });
      rounds.record(`fixed.${side.name}.cpu`, result.cpuUsPerOp);
      rounds.record(`fixed.${side.name}.heap`, result.heapRetainedBytes);
      rounds.record(`fixed.${side.name}.pending`, result.pendingAtHeapReading);
      rounds.record(`fixed.${side.name}.lagP99`, result.lagP99Ms);
      rounds.record(`fixed.${side.name}.expired`, result.expiredFraction);
      if (side !== HARNESS && (result.lost > 0 || result.duplicate > 0)) {
        failures.push(
          `${side.name} at ${FIXED_RATE}/s: ${result.lost} lost, ${result.duplicate} completed twice`,
        );
      }
      fixedRows.push([
        ...describeStep(result),
        result.heapRetainedBytes / 2 ** 20,
        result.pendingAtHeapReading,
        result.heapRetainedBytes / Math.max(1, result.pendingAtHeapReading),
      ]);
    }
    table(fixedRows);
    for (const side of sides) {
      const last = previous.get(side.name);
      const start = last === undefined ? FIRST_RATE : Math.max(MIN_RATE, last * LATER_START);
      const factor = last === undefined ? FIRST_FACTOR : LATER_FACTOR;
      line();
      line(`round ${r + 1}: highest sustained rate, ${side.name} (from ${Math.round(start)}/s, ×${factor})`);
      const best = await findSustainedRate(side, workload, gc, start, factor, failures);
      line(`round ${r + 1}: ${side.name} sustained ${best.toLocaleString('en-US')} ops/s`);
      rounds.record(`rate.${side.name}`, best);
      if (best > 0) previous.set(side.name, best);
    }
  }
  gc.stop();

  const cohortRate = rounds.median('rate.cohort');
  const naiveRate = rounds.median('rate.naive');
  const rateRatio = rounds.medianRatio('rate.cohort', 'rate.naive');
  const cpuRatio = rounds.medianRatio('fixed.cohort.cpu', 'fixed.naive.cpu');
  const heapRatio = rounds.medianRatio('fixed.cohort.heap', 'fixed.naive.heap');
  const sustained = {
    cohort_ops_per_s: cohortRate,
    naive_ops_per_s: naiveRate,
    ratio: round(rateRatio, 3),
    cohort_rounds_ops_per_s: rounds.values('rate.cohort'),
    naive_rounds_ops_per_s: rounds.values('rate.naive'),
    ratio_target_min: TARGET_RATE_RATIO,
    cohort_target_min_ops_per_s: TARGET_RATE,
    met: rateRatio >= TARGET_RATE_RATIO && cohortRate >= TARGET_RATE && failures.length === 0,
  };
  const fixed = {
    rate_ops_per_s: FIXED_RATE,
    duration_ms: FIXED_MS,
    cohort_cpu_us_per_op: round(rounds.median('fixed.cohort.cpu'), 3),
    naive_cpu_us_per_op: round(rounds.median('fixed.naive.cpu'), 3),
    harness_cpu_us_per_op: round(rounds.median('fixed.harness.cpu'), 3),
    cpu_ratio: round(cpuRatio, 3),
    cohort_heap_retained_bytes: Math.round(rounds.median('fixed.cohort.heap')),
    naive_heap_retained_bytes: Math.round(rounds.median('fixed.naive.heap')),
    harness_heap_retained_bytes: Math.round(rounds.median('fixed.harness.heap')),
    heap_ratio: round(heapRatio, 3),
    cohort_pending_ops: Math.round(rounds.median('fixed.cohort.pending')),
    naive_pending_ops: Math.round(rounds.median('fixed.naive.pending')),
    cohort_lag_p99_ms: round(rounds.median('fixed.cohort.lagP99'), 2),
    naive_lag_p99_ms: round(rounds.median('fixed.naive.lagP99'), 2),
    expired_fraction: round(rounds.median('fixed.cohort.expired'), 4),
  };

  line();
  line(`medians over ${ROUNDS} rounds (ratio = median of the per-round cohort ÷ naive ratios)`);
  table([
    ['figure', 'cohort', 'naive', 'ratio', 'target', 'met?'],
    [
      'sustained ops/s',
      cohortRate,
      naiveRate,
      rateRatio,
      `>= ${TARGET_RATE_RATIO}x`,
      verdict(rateRatio >= TARGET_RATE_RATIO),
    ],
    [
      'sustained ops/s (absolute)',
      cohortRate,
      '',
      '',
      `>= ${TARGET_RATE}`,
      verdict(cohortRate >= TARGET_RATE),
    ],
    [
      `cpu µs/op at ${FIXED_RATE}/s`,
      fixed.cohort_cpu_us_per_op,
      fixed.naive_cpu_us_per_op,
      cpuRatio,
      `(harness ${fixed.harness_cpu_us_per_op})`,
      '',
    ],
    [
      `heap MB at ${FIXED_RATE}/s`,
      fixed.cohort_heap_retained_bytes / 2 ** 20,
      fixed.naive_heap_retained_bytes / 2 ** 20,
      heapRatio,
      '',
      '',
    ],
    [
      'exactly once (lost/duplicate)',
      failures.length === 0 ? 'yes' : 'NO',
      '',
      '',
      'yes',
      verdict(failures.length === 0),
    ],
  ]);
  for (const failure of failures) line(`FAILURE: ${failure}`);
  line(
    `rounds: cohort ${rounds.values('rate.cohort').join(', ')}; naive ${rounds.values('rate.naive').join(', ')} (median ${median(rounds.values('rate.cohort'))})`,
  );
  printFigures({
    bench: 'purgatory',
    date: startedAt,
    node: machine.node,
    cpu: machine.cpu,
    cores: machine.cores,
    cpus_allowed: machine.cpusAllowed,
    rounds: ROUNDS,
    completion: COMPLETION,
    step_ms: STEP_MS,
    sustained,
    fixed,
    exactly_once_failures: failures.length,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
