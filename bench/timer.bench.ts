/**
 * bench:timer — cohort's SystemTimer (real time, SYSTEM_TIME) against Node's own timers, in one process.
 *
 * Five measurements, each run for several rounds with the two sides one after the other in every round
 * (the side that goes first alternates), and reported as medians over rounds with the cohort ÷ baseline
 * ratio taken round by round:
 *
 * - add: 1,000,000 timers with delays drawn from 1..30,000 ms (every one of those 30,000 delays occurs),
 *   ns per add. Both sides allocate their timer object inside the timed loop (setTimeout allocates its
 *   Timeout; cohort's caller allocates its TimerTask), so the figure is what a caller pays.
 * - cancel: the same timers cancelled in a random order, ns per cancel.
 * - churn (a heartbeat re-arming a session timeout): 100,000 keys, 2,000,000 operations on a random key;
 *   cohort re-adds the key's pending TimerTask (Timer.add on a pending task is cohort's re-arm: it cancels
 *   the old deadline and sets the new one); baseline A does clearTimeout + setTimeout, baseline B calls
 *   Timeout#refresh(). `--churn=cancel-add` makes cohort call cancel() before add() instead, for comparison
 *   with the two-call idiom. The keys' timeouts take 100 values between 6 and
 *   45 s, as sessions of different groups would. V8 collections inside the loop are counted (a
 *   PerformanceObserver on 'gc' entries): re-arming must not allocate, so cohort should cause none.
 * - heap: bytes per pending timer, from heapUsed after a full GC before and after 1,000,000 pending timers
 *   (delays 1..30,000 ms). Both sides fire the same shared function: setTimeout(sharedCallback) against a
 *   TimerTask subclass whose run() calls sharedCallback (the way cohort code subclasses TimerTask, e.g.
 *   DelayedOperation). The array holding the references is allocated before the first reading.
 * - expiry: 100,000 timers with delays 1..2,000 ms, added 1,000 per event-loop turn, left to fire for
 *   real; the sides run one after the other, never together. "Early" is judged by the clock each timer
 *   uses: for setTimeout, performance.now() at firing against performance.now() at scheduling + delay
 *   (Node anchors a timeout to the event loop's cached millisecond clock, so it can fire up to about a
 *   millisecond early by this measure); for cohort, SYSTEM_TIME.monotonicMs() at firing against
 *   SYSTEM_TIME.monotonicMs() just before add + delay. Lateness is measured the same way. CPU is process.cpuUsage() from the
 *   first add to the last firing.
 *
 * Run with `npm run bench:timer` (node --expose-gc). `--rounds=N` changes the number of rounds (default 5);
 * `--only=add,churn,heap,expiry` runs some of the measurements (add includes cancel).
 * The last line of output is a JSON object of the figures.
 */
import { performance } from 'node:perf_hooks';
import { SYSTEM_TIME } from '../src/time';
import { SystemTimer, TimerTask } from '../src/timer';
import { collectGarbage, GcRecorder } from './support/gc-recorder';
import { describeMachine } from './support/machine';
import { Random } from './support/random';
import { line, printFigures, round, table, verdict } from './support/report';
import { RoundSet } from './support/round-set';
import { percentileOfSorted, sortedSample } from './support/stats';
import { readOnly, readRounds } from './support/bench-args';

const ROUNDS = readRounds(5);
const CHURN_CANCELS_FIRST = process.argv.includes('--churn=cancel-add');
const ONLY = readOnly(['add', 'churn', 'heap', 'expiry']);
const ADD_TIMERS = 1_000_000;
const ADD_MAX_DELAY_MS = 30_000;
const CHURN_KEYS = 100_000;
const CHURN_OPS = 2_000_000;
const EXPIRY_TIMERS = 100_000;
const EXPIRY_MAX_DELAY_MS = 2_000;
const EXPIRY_BATCH = 1_000;
/** How long past the last deadline a timer may still fire before it counts as lost. */
const EXPIRY_GRACE_MS = 3_000;

const TARGET_ADD_RATIO = 0.35;
const TARGET_CANCEL_RATIO = 0.5;
const TARGET_CHURN_VS_SETTIMEOUT_RATIO = 0.15;
const TARGET_CHURN_VS_REFRESH_RATIO = 0.5;
const TARGET_HEAP_RATIO = 0.5;
const TARGET_EXPIRY_P99_MS = 3;

let sharedFired = 0;
/** The one callback every add/cancel/churn/heap timer would run, on both sides. */
function sharedCallback(): void {
  sharedFired++;
}

/** A timer task the way cohort code writes one: a subclass whose run() does the work. */
class SharedCallbackTask extends TimerTask {
  run(): void {
    sharedCallback();
  }
}

function nsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start);
}

// ---------------------------------------------------------------------------------------------- add/cancel

interface AddCancel {
  addNs: number;
  cancelNs: number;
}

function cohortAddCancel(delays: Int32Array, order: Int32Array, n: number): AddCancel {
  const timer = new SystemTimer({ name: 'bench-add' });
  const tasks = new Array<SharedCallbackTask | null>(n).fill(null);
  collectGarbage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const task = new SharedCallbackTask(delays[i]);
    timer.add(task);
    tasks[i] = task;
  }
  const addNs = nsSince(t0);
  if (timer.size !== n) throw new Error(`cohort holds ${timer.size} timers, expected ${n}`);
  const t1 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) (tasks[order[i]] as SharedCallbackTask).cancel();
  const cancelNs = nsSince(t1);
  if (timer.size !== 0) throw new Error(`cohort holds ${timer.size} timers after cancelling all`);
  timer.shutdown();
  return { addNs: addNs / n, cancelNs: cancelNs / n };
}

function baselineAddCancel(delays: Int32Array, order: Int32Array, n: number): AddCancel {
  const handles = new Array<NodeJS.Timeout | null>(n).fill(null);
  collectGarbage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) handles[i] = setTimeout(sharedCallback, delays[i]);
  const addNs = nsSince(t0);
  const t1 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) clearTimeout(handles[order[i]] as NodeJS.Timeout);
  const cancelNs = nsSince(t1);
  return { addNs: addNs / n, cancelNs: cancelNs / n };
}

// ---------------------------------------------------------------------------------------------- churn

interface Churn {
  nsPerOp: number;
  gcCount: number;
  gcPauseMs: number;
}

async function measureChurn(gc: GcRecorder, loop: () => void, ops: number): Promise<Churn> {
  collectGarbage();
  await gc.settle();
  gc.clear();
  const from = performance.now();
  const t0 = process.hrtime.bigint();
  loop();
  // Counted too: work a side leaves for the end of the synchronous run (cohort fixes the exact deadlines
  // of the tasks it re-armed in one pass there). Microtasks queued by the loop run before this await ends.
  await Promise.resolve();
  const ns = nsSince(t0);
  const to = performance.now();
  await gc.settle();
  const figures = gc.between(from, to);
  return { nsPerOp: ns / ops, gcCount: figures.count, gcPauseMs: figures.pauseMs };
}

async function cohortChurn(gc: GcRecorder, timeouts: Int32Array, keys: Int32Array): Promise<Churn> {
  const timer = new SystemTimer({ name: 'bench-churn' });
  const tasks: SharedCallbackTask[] = [];
  for (let k = 0; k < timeouts.length; k++) {
    const task = new SharedCallbackTask(timeouts[k]);
    timer.add(task);
    tasks.push(task);
  }
  const result = await measureChurn(
    gc,
    () => {
      if (CHURN_CANCELS_FIRST) {
        for (let i = 0; i < keys.length; i++) {
          const task = tasks[keys[i]];
          task.cancel();
          timer.add(task);
        }
      } else {
        for (let i = 0; i < keys.length; i++) timer.add(tasks[keys[i]]);
      }
    },
    keys.length,
  );
  if (timer.size !== timeouts.length) throw new Error(`cohort holds ${timer.size} timers after churn`);
  timer.shutdown();
  return result;
}

async function setTimeoutChurn(gc: GcRecorder, timeouts: Int32Array, keys: Int32Array): Promise<Churn> {
  const handles: NodeJS.Timeout[] = [];
  for (let k = 0; k < timeouts.length; k++) handles.push(setTimeout(sharedCallback, timeouts[k]));
  const result = await measureChurn(
    gc,
    () => {
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        clearTimeout(handles[k]);
        handles[k] = setTimeout(sharedCallback, timeouts[k]);
      }
    },
    keys.length,
  );
  for (const handle of handles) clearTimeout(handle);
  return result;
}

async function refreshChurn(gc: GcRecorder, timeouts: Int32Array, keys: Int32Array): Promise<Churn> {
  const handles: NodeJS.Timeout[] = [];
  for (let k = 0; k < timeouts.length; k++) handles.push(setTimeout(sharedCallback, timeouts[k]));
  const result = await measureChurn(
    gc,
    () => {
      for (let i = 0; i < keys.length; i++) handles[keys[i]].refresh();
    },
    keys.length,
  );
  for (const handle of handles) clearTimeout(handle);
  return result;
}

// ---------------------------------------------------------------------------------------------- heap

function cohortHeapBytesPerTimer(delays: Int32Array): number {
  const n = delays.length;
  const tasks = new Array<SharedCallbackTask | null>(n).fill(null);
  const timer = new SystemTimer({ name: 'bench-heap' });
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) {
    const task = new SharedCallbackTask(delays[i]);
    timer.add(task);
    tasks[i] = task;
  }
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  if (timer.size !== n) throw new Error(`cohort holds ${timer.size} timers, expected ${n}`);
  timer.shutdown();
  return (after - before) / n;
}

function baselineHeapBytesPerTimer(delays: Int32Array): number {
  const n = delays.length;
  const handles = new Array<NodeJS.Timeout | null>(n).fill(null);
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) handles[i] = setTimeout(sharedCallback, delays[i]);
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) clearTimeout(handles[i] as NodeJS.Timeout);
  return (after - before) / n;
}

// ---------------------------------------------------------------------------------------------- expiry

interface Expiry {
  early: number;
  lost: number;
  duplicate: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpuMs: number;
}

/** Where the firing times of one expiry run are written; both sides record the same way. */
class FiringLog {
  readonly firedAtMs: Float64Array;
  fired = 0;
  duplicate = 0;
  cpuAtLastFiring: NodeJS.CpuUsage | null = null;
  private cpuStart: NodeJS.CpuUsage = process.cpuUsage();
  private onAllFired: () => void = () => undefined;

  constructor(readonly n: number) {
    this.firedAtMs = new Float64Array(n);
  }

  start(onAllFired: () => void): void {
    this.onAllFired = onAllFired;
    this.cpuStart = process.cpuUsage();
  }

  record(index: number): void {
    const nowMs = performance.now();
    if (this.firedAtMs[index] !== 0) {
      this.duplicate++;
      return;
    }
    this.firedAtMs[index] = nowMs;
    if (++this.fired === this.n) {
      this.cpuAtLastFiring = process.cpuUsage(this.cpuStart);
      this.onAllFired();
    }
  }

  cpuMsNow(): number {
    const cpu = this.cpuAtLastFiring ?? process.cpuUsage(this.cpuStart);
    return (cpu.user + cpu.system) / 1000;
  }
}

class RecordingTask extends TimerTask {
  constructor(
    delayMs: number,
    private readonly index: number,
    private readonly log: FiringLog,
  ) {
    super(delayMs);
  }

  run(): void {
    this.log.record(this.index);
  }
}

/** Adds `schedule(i)` for every timer, EXPIRY_BATCH per event-loop turn, and waits for all to fire. */
async function runExpiry(log: FiringLog, schedule: (i: number) => void): Promise<void> {
  const n = log.n;
  let settle: () => void = () => undefined;
  const allFired = new Promise<void>((resolve) => (settle = resolve));
  log.start(() => settle());
  for (let start = 0; start < n; start += EXPIRY_BATCH) {
    const end = Math.min(n, start + EXPIRY_BATCH);
    for (let i = start; i < end; i++) schedule(i);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  // A ref'd guard keeps the process alive (cohort's own timeout is unref'd) and bounds the wait.
  let guard: NodeJS.Timeout | null = null;
  await Promise.race([
    allFired,
    new Promise<void>((resolve) => (guard = setTimeout(resolve, EXPIRY_MAX_DELAY_MS + EXPIRY_GRACE_MS))),
  ]);
  if (guard !== null) clearTimeout(guard);
}

function summariseExpiry(log: FiringLog, deadlineMs: Float64Array, isEarly: (i: number) => boolean): Expiry {
  const lateness = new Float64Array(log.fired);
  let count = 0;
  let early = 0;
  for (let i = 0; i < log.n; i++) {
    if (log.firedAtMs[i] === 0) continue;
    if (isEarly(i)) early++;
    lateness[count++] = log.firedAtMs[i] - deadlineMs[i];
  }
  const sorted = sortedSample(lateness, count);
  return {
    early,
    lost: log.n - log.fired,
    duplicate: log.duplicate,
    p50Ms: percentileOfSorted(sorted, 50),
    p99Ms: percentileOfSorted(sorted, 99),
    maxMs: sorted.length > 0 ? sorted[sorted.length - 1] : NaN,
    cpuMs: log.cpuMsNow(),
  };
}

async function cohortExpiry(delays: Int32Array): Promise<Expiry> {
  const n = delays.length;
  const log = new FiringLog(n);
  const deadlineMs = new Float64Array(n);
  const timer = new SystemTimer({ name: 'bench-expiry' });
  collectGarbage();
  await runExpiry(log, (i) => {
    // The nominal deadline on the timer's clock, SYSTEM_TIME.monotonicMs() = floor(performance.now()),
    // read as the baseline reads its own: the timer's expirationMs is only a lower bound until the end of
    // the run (it fixes deadlines from one clock read per batch).
    deadlineMs[i] = Math.floor(performance.now()) + delays[i];
    timer.add(new RecordingTask(delays[i], i, log));
  });
  timer.shutdown();
  return summariseExpiry(log, deadlineMs, (i) => Math.floor(log.firedAtMs[i]) < deadlineMs[i]);
}

async function baselineExpiry(delays: Int32Array): Promise<Expiry> {
  const n = delays.length;
  const log = new FiringLog(n);
  const deadlineMs = new Float64Array(n);
  const onTimeout = (i: number): void => log.record(i);
  collectGarbage();
  await runExpiry(log, (i) => {
    deadlineMs[i] = performance.now() + delays[i];
    setTimeout(onTimeout, delays[i], i);
  });
  return summariseExpiry(log, deadlineMs, (i) => log.firedAtMs[i] < deadlineMs[i]);
}

// ---------------------------------------------------------------------------------------------- main

type Row = (string | number)[];

interface Inputs {
  addDelays: Int32Array;
  cancelOrder: Int32Array;
  churnTimeouts: Int32Array;
  churnKeys: Int32Array;
  expiryDelays: Int32Array;
}

/** One measurement's result: its JSON figures and its lines of the summary table. */
interface Section {
  figures: Record<string, Record<string, unknown>>;
  summary: Row[];
}

async function addSection(inputs: Inputs, rounds: RoundSet): Promise<Section> {
  const { addDelays, cancelOrder } = inputs;
  const warmUpOrder = new Random(1).permutation(100_000);
  cohortAddCancel(addDelays, warmUpOrder, 100_000);
  baselineAddCancel(addDelays, warmUpOrder, 100_000);
  line();
  line('add / cancel: 1,000,000 timers, delays 1..30,000 ms (ns per operation)');
  const rows: Row[] = [
    ['round', 'cohort add', 'setTimeout', 'ratio', 'cohort cancel', 'clearTimeout', 'ratio'],
  ];
  for (let r = 0; r < ROUNDS; r++) {
    const cohortFirst = r % 2 === 0;
    const a = cohortFirst ? cohortAddCancel(addDelays, cancelOrder, ADD_TIMERS) : null;
    const b = baselineAddCancel(addDelays, cancelOrder, ADD_TIMERS);
    const c = a ?? cohortAddCancel(addDelays, cancelOrder, ADD_TIMERS);
    rounds.record('add.cohort', c.addNs);
    rounds.record('add.baseline', b.addNs);
    rounds.record('cancel.cohort', c.cancelNs);
    rounds.record('cancel.baseline', b.cancelNs);
    rows.push([r + 1, c.addNs, b.addNs, c.addNs / b.addNs, c.cancelNs, b.cancelNs, c.cancelNs / b.cancelNs]);
  }
  table(rows);
  const addRatio = rounds.medianRatio('add.cohort', 'add.baseline');
  const cancelRatio = rounds.medianRatio('cancel.cohort', 'cancel.baseline');
  const add = {
    cohort_ns_per_add: round(rounds.median('add.cohort'), 1),
    settimeout_ns_per_add: round(rounds.median('add.baseline'), 1),
    ratio: round(addRatio, 3),
    ratio_target_max: TARGET_ADD_RATIO,
    met: addRatio <= TARGET_ADD_RATIO,
  };
  const cancel = {
    cohort_ns_per_cancel: round(rounds.median('cancel.cohort'), 1),
    cleartimeout_ns_per_cancel: round(rounds.median('cancel.baseline'), 1),
    ratio: round(cancelRatio, 3),
    ratio_target_max: TARGET_CANCEL_RATIO,
    met: cancelRatio <= TARGET_CANCEL_RATIO,
  };
  return {
    figures: { add, cancel },
    summary: [
      [
        'add ns',
        add.cohort_ns_per_add,
        add.settimeout_ns_per_add,
        add.ratio,
        `<= ${TARGET_ADD_RATIO}`,
        verdict(add.met),
      ],
      [
        'cancel ns',
        cancel.cohort_ns_per_cancel,
        cancel.cleartimeout_ns_per_cancel,
        cancel.ratio,
        `<= ${TARGET_CANCEL_RATIO}`,
        verdict(cancel.met),
      ],
    ],
  };
}

async function churnSection(inputs: Inputs, rounds: RoundSet, gc: GcRecorder): Promise<Section> {
  const { churnTimeouts, churnKeys } = inputs;
  const warmUpKeys = churnKeys.subarray(0, 200_000);
  await cohortChurn(gc, churnTimeouts, warmUpKeys);
  await setTimeoutChurn(gc, churnTimeouts, warmUpKeys);
  await refreshChurn(gc, churnTimeouts, warmUpKeys);
  line();
  line(
    `churn: re-arm a random key, 100,000 keys, 2,000,000 operations (ns per re-arm; GCs in the loop); ` +
      `cohort: ${CHURN_CANCELS_FIRST ? 'cancel() + add()' : 'add() of the pending task'}`,
  );
  const rows: Row[] = [
    ['round', 'cohort', 'gc', 'clear+set', 'gc', 'refresh', 'gc', 'vs clear+set', 'vs refresh'],
  ];
  for (let r = 0; r < ROUNDS; r++) {
    const results: Record<string, Churn> = {};
    for (let s = 0; s < 3; s++) {
      const side = (r + s) % 3;
      if (side === 0) results.cohort = await cohortChurn(gc, churnTimeouts, churnKeys);
      else if (side === 1) results.setTimeout = await setTimeoutChurn(gc, churnTimeouts, churnKeys);
      else results.refresh = await refreshChurn(gc, churnTimeouts, churnKeys);
    }
    for (const [name, result] of Object.entries(results)) {
      rounds.record(`churn.${name}`, result.nsPerOp);
      rounds.record(`churn.${name}.gcCount`, result.gcCount);
      rounds.record(`churn.${name}.gcPauseMs`, result.gcPauseMs);
    }
    const { cohort, setTimeout: st, refresh } = results;
    const gcCell = (c: Churn): string => `${c.gcCount} (${round(c.gcPauseMs, 1)} ms)`;
    rows.push([
      r + 1,
      cohort.nsPerOp,
      gcCell(cohort),
      st.nsPerOp,
      gcCell(st),
      refresh.nsPerOp,
      gcCell(refresh),
      cohort.nsPerOp / st.nsPerOp,
      cohort.nsPerOp / refresh.nsPerOp,
    ]);
  }
  table(rows);
  const vsSet = rounds.medianRatio('churn.cohort', 'churn.setTimeout');
  const vsRefresh = rounds.medianRatio('churn.cohort', 'churn.refresh');
  const cohortGcCount = rounds.max('churn.cohort.gcCount');
  const churn = {
    cohort_ns_per_rearm: round(rounds.median('churn.cohort'), 1),
    cleartimeout_settimeout_ns_per_rearm: round(rounds.median('churn.setTimeout'), 1),
    refresh_ns_per_rearm: round(rounds.median('churn.refresh'), 1),
    ratio_vs_settimeout: round(vsSet, 3),
    ratio_vs_settimeout_target_max: TARGET_CHURN_VS_SETTIMEOUT_RATIO,
    ratio_vs_refresh: round(vsRefresh, 3),
    ratio_vs_refresh_target_max: TARGET_CHURN_VS_REFRESH_RATIO,
    cohort_gc_count_max: cohortGcCount,
    cohort_gc_pause_ms_max: round(rounds.max('churn.cohort.gcPauseMs'), 2),
    settimeout_gc_count: rounds.median('churn.setTimeout.gcCount'),
    settimeout_gc_pause_ms: round(rounds.median('churn.setTimeout.gcPauseMs'), 2),
    refresh_gc_count: rounds.median('churn.refresh.gcCount'),
    refresh_gc_pause_ms: round(rounds.median('churn.refresh.gcPauseMs'), 2),
    cohort_rearm: CHURN_CANCELS_FIRST ? 'cancel+add' : 'add',
    met:
      vsSet <= TARGET_CHURN_VS_SETTIMEOUT_RATIO &&
      vsRefresh <= TARGET_CHURN_VS_REFRESH_RATIO &&
      cohortGcCount === 0,
  };
  return {
    figures: { churn },
    summary: [
      [
        'churn ns vs clear+set',
        churn.cohort_ns_per_rearm,
        churn.cleartimeout_settimeout_ns_per_rearm,
        churn.ratio_vs_settimeout,
        `<= ${TARGET_CHURN_VS_SETTIMEOUT_RATIO}`,
        verdict(vsSet <= TARGET_CHURN_VS_SETTIMEOUT_RATIO),
      ],
      [
        'churn ns vs refresh',
        churn.cohort_ns_per_rearm,
        churn.refresh_ns_per_rearm,
        churn.ratio_vs_refresh,
        `<= ${TARGET_CHURN_VS_REFRESH_RATIO}`,
        verdict(vsRefresh <= TARGET_CHURN_VS_REFRESH_RATIO),
      ],
      [
        'churn GCs (cohort worst round; clear+set median)',
        cohortGcCount,
        churn.settimeout_gc_count,
        '',
        '0',
        verdict(cohortGcCount === 0),
      ],
    ],
  };
}

async function heapSection(inputs: Inputs, rounds: RoundSet): Promise<Section> {
  const { addDelays } = inputs;
  line();
  line('heap: bytes per pending timer, 1,000,000 pending, delays 1..30,000 ms, one shared callback');
  const rows: Row[] = [['round', 'cohort', 'setTimeout', 'ratio']];
  for (let r = 0; r < ROUNDS; r++) {
    const cohortFirst = r % 2 === 0;
    const a = cohortFirst ? cohortHeapBytesPerTimer(addDelays) : NaN;
    const b = baselineHeapBytesPerTimer(addDelays);
    const c = cohortFirst ? a : cohortHeapBytesPerTimer(addDelays);
    rounds.record('heap.cohort', c);
    rounds.record('heap.baseline', b);
    rows.push([r + 1, c, b, c / b]);
  }
  table(rows);
  const ratio = rounds.medianRatio('heap.cohort', 'heap.baseline');
  const heap = {
    cohort_bytes_per_timer: round(rounds.median('heap.cohort'), 1),
    settimeout_bytes_per_timer: round(rounds.median('heap.baseline'), 1),
    ratio: round(ratio, 3),
    ratio_target_max: TARGET_HEAP_RATIO,
    met: ratio <= TARGET_HEAP_RATIO,
  };
  return {
    figures: { heap },
    summary: [
      [
        'heap bytes/timer',
        heap.cohort_bytes_per_timer,
        heap.settimeout_bytes_per_timer,
        heap.ratio,
        `<= ${TARGET_HEAP_RATIO}`,
        verdict(heap.met),
      ],
    ],
  };
}

async function expirySection(inputs: Inputs, rounds: RoundSet): Promise<Section> {
  const { expiryDelays } = inputs;
  line();
  line('expiry: 100,000 timers, delays 1..2,000 ms, fired for real (lateness in ms; CPU ms for the run)');
  const rows: Row[] = [['round', 'side', 'early', 'lost', 'dup', 'p50', 'p99', 'max', 'cpu ms']];
  for (let r = 0; r < ROUNDS; r++) {
    const cohortFirst = r % 2 === 0;
    const a = cohortFirst ? await cohortExpiry(expiryDelays) : null;
    const b = await baselineExpiry(expiryDelays);
    const c = a ?? (await cohortExpiry(expiryDelays));
    for (const [name, e] of [
      ['cohort', c],
      ['baseline', b],
    ] as const) {
      rounds.record(`expiry.${name}.early`, e.early);
      rounds.record(`expiry.${name}.lost`, e.lost);
      rounds.record(`expiry.${name}.duplicate`, e.duplicate);
      rounds.record(`expiry.${name}.p50`, e.p50Ms);
      rounds.record(`expiry.${name}.p99`, e.p99Ms);
      rounds.record(`expiry.${name}.max`, e.maxMs);
      rounds.record(`expiry.${name}.cpu`, e.cpuMs);
      const label = name === 'cohort' ? 'cohort' : 'setTimeout';
      rows.push([r + 1, label, e.early, e.lost, e.duplicate, e.p50Ms, e.p99Ms, e.maxMs, e.cpuMs]);
    }
  }
  table(rows);
  const cpuRatio = rounds.medianRatio('expiry.cohort.cpu', 'expiry.baseline.cpu');
  const early = rounds.total('expiry.cohort.early');
  const lost = rounds.total('expiry.cohort.lost');
  const duplicate = rounds.total('expiry.cohort.duplicate');
  const p99 = rounds.median('expiry.cohort.p99');
  const expiry = {
    timers: EXPIRY_TIMERS,
    cohort_early_total: early,
    cohort_lost_total: lost,
    cohort_duplicate_total: duplicate,
    cohort_lateness_p50_ms: round(rounds.median('expiry.cohort.p50'), 3),
    cohort_lateness_p99_ms: round(p99, 3),
    cohort_lateness_max_ms: round(rounds.median('expiry.cohort.max'), 3),
    cohort_lateness_worst_ms: round(rounds.max('expiry.cohort.max'), 3),
    cohort_cpu_ms: round(rounds.median('expiry.cohort.cpu'), 1),
    settimeout_early_median: rounds.median('expiry.baseline.early'),
    settimeout_lost_total: rounds.total('expiry.baseline.lost'),
    settimeout_lateness_p50_ms: round(rounds.median('expiry.baseline.p50'), 3),
    settimeout_lateness_p99_ms: round(rounds.median('expiry.baseline.p99'), 3),
    settimeout_lateness_max_ms: round(rounds.median('expiry.baseline.max'), 3),
    settimeout_cpu_ms: round(rounds.median('expiry.baseline.cpu'), 1),
    cpu_ratio: round(cpuRatio, 3),
    p99_target_max_ms: TARGET_EXPIRY_P99_MS,
    met: early === 0 && lost === 0 && duplicate === 0 && p99 <= TARGET_EXPIRY_P99_MS && cpuRatio <= 1,
  };
  return {
    figures: { expiry },
    summary: [
      [
        'expiry early (cohort all rounds; setTimeout median)',
        early,
        expiry.settimeout_early_median,
        '',
        '0',
        verdict(early === 0),
      ],
      ['expiry lost (all rounds)', lost, expiry.settimeout_lost_total, '', '0', verdict(lost === 0)],
      [
        'expiry p99 lateness ms',
        expiry.cohort_lateness_p99_ms,
        expiry.settimeout_lateness_p99_ms,
        '',
        `<= ${TARGET_EXPIRY_P99_MS}`,
        verdict(p99 <= TARGET_EXPIRY_P99_MS),
      ],
      [
        'expiry CPU ms',
        expiry.cohort_cpu_ms,
        expiry.settimeout_cpu_ms,
        expiry.cpu_ratio,
        '<= 1',
        verdict(cpuRatio <= 1),
      ],
    ],
  };
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const startedAt = new Date().toISOString();
  line(`bench:timer  ${startedAt}  node ${machine.node}  ${machine.cpu} x${machine.cores}`);
  line(`cpus allowed: ${machine.cpusAllowed}  rounds: ${ROUNDS}  measurements: ${[...ONLY].join(', ')}`);
  if (SYSTEM_TIME.monotonicMs() < 0) throw new Error('monotonic clock is negative');

  const random = new Random(0xc0ffee);
  const addDelays = new Int32Array(ADD_TIMERS);
  for (let i = 0; i < ADD_TIMERS; i++) addDelays[i] = random.int(1, ADD_MAX_DELAY_MS);
  const cancelOrder = random.permutation(ADD_TIMERS);
  const churnTimeouts = new Int32Array(CHURN_KEYS);
  for (let k = 0; k < CHURN_KEYS; k++) churnTimeouts[k] = 6_000 + (k % 100) * 390;
  const churnKeys = new Int32Array(CHURN_OPS);
  for (let i = 0; i < CHURN_OPS; i++) churnKeys[i] = random.int(0, CHURN_KEYS - 1);
  const expiryDelays = new Int32Array(EXPIRY_TIMERS);
  for (let i = 0; i < EXPIRY_TIMERS; i++) expiryDelays[i] = random.int(1, EXPIRY_MAX_DELAY_MS);
  const inputs: Inputs = { addDelays, cancelOrder, churnTimeouts, churnKeys, expiryDelays };

  const gc = new GcRecorder();
  gc.start();
  const rounds = new RoundSet();
  const sections: Section[] = [];
  // Each section warms up its own loops before timing anything.
  if (ONLY.has('add')) sections.push(await addSection(inputs, rounds));
  if (ONLY.has('churn')) sections.push(await churnSection(inputs, rounds, gc));
  if (ONLY.has('heap')) sections.push(await heapSection(inputs, rounds));
  if (ONLY.has('expiry')) sections.push(await expirySection(inputs, rounds));
  gc.stop();
  if (sharedFired !== 0)
    throw new Error(`${sharedFired} cancelled or unexpired shared-callback timers fired`);

  line();
  line(`medians over ${ROUNDS} rounds (ratio = median of the per-round cohort ÷ baseline ratios)`);
  table([['figure', 'cohort', 'baseline', 'ratio', 'target', 'met?'], ...sections.flatMap((s) => s.summary)]);
  printFigures({
    bench: 'timer',
    date: startedAt,
    node: machine.node,
    cpu: machine.cpu,
    cores: machine.cores,
    cpus_allowed: machine.cpusAllowed,
    rounds: ROUNDS,
    ...Object.assign({}, ...sections.map((s) => s.figures)),
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
