import fc from 'fast-check';
import { ManualTime } from '../../../src/time';
import { SystemTimer } from '../../../src/timer';
import { DelayedOperation, DelayedOperationPurgatory } from '../../../src/purgatory';

/**
 * Two purgatories (each with its own timer, both on one ManualTime) under random interleavings of
 * tryCompleteElseWatch, events that make operations completable, checkAndComplete, clock advances,
 * cancelForKey, forceComplete and shutdown, while onComplete callbacks re-enter either purgatory (check
 * keys, complete others, watch new operations, cancel keys).
 *
 * A model follows every operation (watched or not, in the timer or not, completed how) and every watcher
 * entry (an operation once per key it was watched on). Checked at every step AND inside every onComplete:
 * - onComplete runs at most once per operation; onExpiration exactly when the timer completed it, never
 *   before its deadline, never for an operation cancelled by cancelForKey (which, as in Kafka, may still
 *   complete by an event on another of its keys);
 * - completion by an event only for a completable operation; nothing completes after its purgatory shut
 *   down;
 * - numDelayed equals the operations neither completed nor cancelled; live entries <= watched <= entries
 *   not cancelled, and keys with live entries <= watchedKeys <= keys with entries: so a purge never drops
 *   an operation that is not completed;
 * - after a step, no operation is still in the timer past its deadline (it expired in the advance that
 *   reached it); checkAndComplete completes every completable operation watched on the key and returns
 *   their number (when no callback interfered); cancelForKey returns exactly the key's uncompleted entries.
 * Finally every remaining operation is force-completed and every key checked: watched, watchedKeys and
 * numDelayed must all be 0, and a far advance must complete nothing more.
 *
 * Shutting a purgatory down from inside a callback is covered by
 * delayed-operation-purgatory-shutdown.prop.test.ts.
 */

const KEYS = ['a', 'b', 'c', 'd'];
const PURGATORIES = 2;

interface OpSpec {
  purgatory: number;
  keys: string[];
  timeoutMs: number;
  /** Completable already when watched: tryCompleteElseWatch completes it at once. */
  completable: boolean;
  /** What its onComplete does (once). */
  reactions: Reaction[];
}

type Reaction =
  | { kind: 'check'; purgatory: number; key: string }
  /** Makes an operation completable, then checks its first key: completion from inside a callback. */
  | { kind: 'enable'; op: number; check: boolean }
  | { kind: 'watch'; op: OpSpec }
  | { kind: 'forceComplete'; op: number }
  | { kind: 'cancelForKey'; purgatory: number; key: string }
  /**
   * Cancels the completing operation's first key, then watches a new operation on that key: the key's
   * watcher list is replaced while it may be being iterated.
   */
  | { kind: 'cancelAndWatch'; op: OpSpec };

type Step =
  | Reaction
  | { kind: 'advance'; ms: number }
  /** Advances to just before, at or just after the earliest pending deadline. */
  | { kind: 'advanceToNext'; offsetMs: number }
  | { kind: 'shutdown'; purgatory: number };

interface PurgatorySettings {
  purgeInterval: number;
  purgeWorkPerCall: number;
}

interface Schedule {
  startMs: number;
  settings: PurgatorySettings[];
  steps: Step[];
}

/** What the test knows about an operation; `id` is its index in `Harness.ops`. */
interface ModelOp {
  spec: OpSpec;
  op: TestOp;
  deadlineMs: number;
  inTimer: boolean;
  cancelled: boolean;
  completedBy: 'timer' | 'event' | 'forced' | undefined;
  /** The test is calling forceComplete on it right now. */
  forcing: boolean;
}

class TestOp extends DelayedOperation {
  completable = false;
  completions = 0;
  expirations = 0;
  private inRun = false;

  constructor(
    readonly id: number,
    delayMs: number,
    private readonly harness: Harness,
  ) {
    super(delayMs);
  }

  tryComplete(): boolean {
    return this.completable ? this.forceComplete() : false;
  }

  /** The timer's entry point: remember that completion came from here. */
  override run(): void {
    this.inRun = true;
    try {
      super.run();
    } finally {
      this.inRun = false;
    }
  }

  onComplete(): void {
    this.completions++;
    this.harness.onComplete(this, this.inRun);
  }

  onExpiration(): void {
    this.expirations++;
    this.harness.onExpiration(this);
  }
}

class Harness {
  readonly time: ManualTime;
  readonly purgatories: DelayedOperationPurgatory<TestOp>[];
  readonly ops: ModelOp[] = [];
  /** Per purgatory, per key: op ids, once per watch; only cancelForKey and shutdown remove entries. */
  readonly entries: Map<string, number[]>[];
  readonly isShutdown: boolean[];
  /** Per purgatory and key: how many times cancelForKey ran (a check that sees it change is not judged). */
  readonly cancels: Map<string, number>[];
  /** Reactions run so far: a checkAndComplete during which none ran must return an exact count. */
  reactionsRun = 0;
  /** Off for the final sweep. */
  reactionsEnabled = true;

  constructor(schedule: Schedule) {
    this.time = new ManualTime(schedule.startMs);
    this.purgatories = schedule.settings.map(
      (s, i) =>
        new DelayedOperationPurgatory<TestOp>(
          `p${i}`,
          new SystemTimer({ time: this.time, name: `p${i}` }),
          s,
        ),
    );
    this.entries = this.purgatories.map(() => new Map());
    this.cancels = this.purgatories.map(() => new Map());
    this.isShutdown = this.purgatories.map(() => false);
  }

  fail(message: string): never {
    throw new Error(`at ${this.time.monotonicMs()}: ${message}`);
  }

  model(op: TestOp): ModelOp {
    return this.ops[op.id];
  }

  /** The uncompleted op `n` stands for (wrapping), if there is one; events for finished ops do nothing. */
  pick(n: number): ModelOp | undefined {
    const open = this.ops.filter((m) => m.completedBy === undefined);
    return open.length === 0 ? undefined : open[n % open.length];
  }

  /** Any op, completed or not (ids wrap), if any exist. */
  pickAny(n: number): ModelOp | undefined {
    return this.ops.length === 0 ? undefined : this.ops[n % this.ops.length];
  }

  onComplete(op: TestOp, byTimer: boolean): void {
    const m = this.model(op);
    const p = m.spec.purgatory;
    if (op.completions !== 1) this.fail(`op ${op.id} completed ${op.completions} times`);
    if (m.completedBy !== undefined) this.fail(`op ${op.id} completed again (was by ${m.completedBy})`);
    if (this.isShutdown[p]) this.fail(`op ${op.id} completed after p${p} shut down`);
    if (byTimer) {
      if (!m.inTimer) this.fail(`op ${op.id} expired though not in the timer (cancelled: ${m.cancelled})`);
      if (this.time.monotonicMs() < m.deadlineMs)
        this.fail(`op ${op.id} expired early, deadline ${m.deadlineMs}`);
      m.completedBy = 'timer';
    } else if (m.forcing) {
      m.completedBy = 'forced';
    } else {
      if (!op.completable) this.fail(`op ${op.id} completed by an event though not completable`);
      m.completedBy = 'event';
    }
    m.inTimer = false;
    this.checkInvariants();
    if (!this.reactionsEnabled) return;
    for (const r of m.spec.reactions) {
      this.reactionsRun++;
      this.perform(r, m);
    }
  }

  onExpiration(op: TestOp): void {
    const m = this.model(op);
    if (m.completedBy !== 'timer' || op.completions !== 1 || op.expirations !== 1) {
      this.fail(`op ${op.id} onExpiration: completed by ${m.completedBy}, expirations ${op.expirations}`);
    }
  }

  /** `completing`: the operation whose onComplete performs `step`, if any. */
  perform(step: Step, completing?: ModelOp): void {
    switch (step.kind) {
      case 'watch':
        return this.watch(step.op);
      case 'check':
        return this.check(step.purgatory, step.key);
      case 'enable': {
        const m = this.pick(step.op);
        if (m === undefined) return;
        m.op.completable = true;
        if (step.check && m.spec.keys.length > 0) this.check(m.spec.purgatory, m.spec.keys[0]);
        return;
      }
      case 'forceComplete': {
        // Odd refs pick any op, so forcing a finished one (which must return false) happens too.
        const m = step.op % 2 === 0 ? this.pick(step.op >> 1) : this.pickAny(step.op >> 1);
        if (m !== undefined) this.forceComplete(m);
        return;
      }
      case 'cancelForKey':
        return this.cancelForKey(step.purgatory, step.key);
      case 'cancelAndWatch': {
        if (completing === undefined || completing.spec.keys.length === 0) return;
        const { purgatory, keys } = completing.spec;
        this.cancelForKey(purgatory, keys[0]);
        return this.watch({ ...step.op, purgatory, keys: [keys[0], ...step.op.keys] });
      }
      case 'advance':
        this.time.advance(step.ms);
        return;
      case 'advanceToNext': {
        let next = Infinity;
        for (const m of this.ops) if (m.inTimer && m.deadlineMs < next) next = m.deadlineMs;
        if (next !== Infinity) this.time.advance(Math.max(0, next + step.offsetMs - this.time.monotonicMs()));
        return;
      }
      case 'shutdown':
        return this.shutdown(step.purgatory);
    }
  }

  watch(spec: OpSpec): void {
    const p = spec.purgatory;
    const purgatory = this.purgatories[p];
    const id = this.ops.length;
    const op = new TestOp(id, spec.timeoutMs, this);
    op.completable = spec.completable;
    if (this.isShutdown[p]) {
      let threw = false;
      try {
        purgatory.tryCompleteElseWatch(op, spec.keys);
      } catch {
        threw = true;
      }
      if (!threw) this.fail(`p${p} accepted an operation after shutdown`);
      return;
    }
    const nowMs = this.time.monotonicMs();
    const deadlineMs = spec.timeoutMs > 0 ? nowMs + Math.ceil(spec.timeoutMs) : nowMs;
    // The model moves first: a zero timeout expires inside tryCompleteElseWatch, and callbacks check it.
    const m: ModelOp = {
      spec,
      op,
      deadlineMs,
      inTimer: !spec.completable,
      cancelled: false,
      completedBy: undefined,
      forcing: false,
    };
    this.ops.push(m);
    if (!spec.completable) for (const key of spec.keys) this.entriesOf(p, key).push(id);
    const completedAtOnce = purgatory.tryCompleteElseWatch(op, spec.keys);
    if (completedAtOnce !== spec.completable) {
      this.fail(
        `tryCompleteElseWatch(op ${id}) returned ${completedAtOnce}, completable ${spec.completable}`,
      );
    }
  }

  check(p: number, key: string): void {
    const purgatory = this.purgatories[p];
    if (this.isShutdown[p]) {
      if (purgatory.checkAndComplete(key) !== 0) this.fail(`p${p} completed operations after shutdown`);
      return;
    }
    const completable = new Set(
      this.entriesOf(p, key).filter(
        (id) => this.ops[id].completedBy === undefined && this.ops[id].op.completable,
      ),
    );
    const cancelsBefore = this.cancels[p].get(key) ?? 0;
    const reactionsBefore = this.reactionsRun;
    const completed = purgatory.checkAndComplete(key);
    // A callback that cancelled this key or shut the purgatory down legitimately cut the check short.
    if (this.isShutdown[p] || (this.cancels[p].get(key) ?? 0) !== cancelsBefore) return;
    for (const id of completable) {
      if (this.ops[id].completedBy === undefined) this.fail(`check(p${p}, ${key}) left completable op ${id}`);
    }
    if (this.reactionsRun === reactionsBefore && completed !== completable.size) {
      this.fail(`check(p${p}, ${key}) returned ${completed}, completed ${completable.size}`);
    }
  }

  forceComplete(m: ModelOp): void {
    if (this.isShutdown[m.spec.purgatory]) return; // the owner's business, not the purgatory's
    const wasCompleted = m.completedBy !== undefined;
    m.forcing = true;
    const result = m.op.forceComplete();
    m.forcing = false;
    if (result === wasCompleted) this.fail(`forceComplete(op ${m.op.id}) returned ${result}`);
  }

  cancelForKey(p: number, key: string): void {
    const cancelled = this.purgatories[p].cancelForKey(key);
    if (this.isShutdown[p]) {
      if (cancelled.length !== 0) this.fail(`p${p} cancelled operations after shutdown`);
      return;
    }
    // Each uncompleted operation once, even when it was watched several times on the key.
    const expected = [...new Set(this.entriesOf(p, key))].filter(
      (id) => this.ops[id].completedBy === undefined,
    );
    const actual = cancelled.map((op) => op.id);
    if (JSON.stringify([...actual].sort()) !== JSON.stringify([...expected].sort())) {
      this.fail(`cancelForKey(p${p}, ${key}) returned ops ${actual}, expected ${expected}`);
    }
    for (const id of expected) {
      this.ops[id].inTimer = false;
      this.ops[id].cancelled = true;
    }
    this.entries[p].delete(key);
    this.cancels[p].set(key, (this.cancels[p].get(key) ?? 0) + 1);
  }

  shutdown(p: number): void {
    this.purgatories[p].shutdown();
    this.isShutdown[p] = true;
    this.entries[p].clear();
    for (const m of this.ops) if (m.spec.purgatory === p) m.inTimer = false;
    const purgatory = this.purgatories[p];
    if (purgatory.numDelayed !== 0 || purgatory.watched !== 0 || purgatory.watchedKeys !== 0) {
      this.fail(`p${p} after shutdown: numDelayed ${purgatory.numDelayed}, watched ${purgatory.watched}`);
    }
  }

  entriesOf(p: number, key: string): number[] {
    let list = this.entries[p].get(key);
    if (list === undefined) {
      list = [];
      this.entries[p].set(key, list);
    }
    return list;
  }

  /** Holds at any moment user code runs, inside callbacks included. */
  checkInvariants(): void {
    for (let p = 0; p < PURGATORIES; p++) {
      const purgatory = this.purgatories[p];
      let delayed = 0;
      for (const m of this.ops) if (m.spec.purgatory === p && m.inTimer) delayed++;
      if (purgatory.numDelayed !== delayed)
        this.fail(`p${p} numDelayed ${purgatory.numDelayed}, expected ${delayed}`);
      let live = 0;
      let upper = 0;
      for (const ids of this.entries[p].values()) {
        upper += ids.length;
        for (const id of ids) if (this.ops[id].completedBy === undefined) live++;
      }
      const watched = purgatory.watched;
      if (watched < 0 || watched < live || watched > upper) {
        this.fail(`p${p} watched ${watched}, expected between ${live} (live entries) and ${upper}`);
      }
      // A key has a watcher list while it has live entries, and never once cancelled without new ones.
      let liveKeys = 0;
      let keysWithEntries = 0;
      for (const ids of this.entries[p].values()) {
        if (ids.length > 0) keysWithEntries++;
        if (ids.some((id) => this.ops[id].completedBy === undefined)) liveKeys++;
      }
      const watchedKeys = purgatory.watchedKeys;
      if (watchedKeys < liveKeys || watchedKeys > keysWithEntries) {
        this.fail(`p${p} watchedKeys ${watchedKeys}, expected between ${liveKeys} and ${keysWithEntries}`);
      }
    }
  }

  /** Holds between steps. */
  checkStep(step: Step): void {
    this.checkInvariants();
    const nowMs = this.time.monotonicMs();
    for (const m of this.ops) {
      if (m.inTimer && m.deadlineMs <= nowMs) {
        this.fail(`after ${JSON.stringify(step)}: op ${m.op.id} not expired, deadline ${m.deadlineMs}`);
      }
      if (m.op.isCompleted !== (m.completedBy !== undefined))
        this.fail(`op ${m.op.id} isCompleted disagrees`);
    }
  }

  /** Completes what is left, checks every key, and expects nothing to remain anywhere. */
  finish(): void {
    this.reactionsEnabled = false;
    for (const m of this.ops) if (m.completedBy === undefined) this.forceComplete(m);
    for (let p = 0; p < PURGATORIES; p++) {
      const purgatory = this.purgatories[p];
      if (this.isShutdown[p]) continue;
      for (const key of KEYS) this.check(p, key);
      expect({
        watched: purgatory.watched,
        watchedKeys: purgatory.watchedKeys,
        numDelayed: purgatory.numDelayed,
      }).toEqual({ watched: 0, watchedKeys: 0, numDelayed: 0 });
    }
    const completions = this.ops.map((m) => m.op.completions);
    this.time.advance(2_000_000_000);
    expect(this.ops.map((m) => m.op.completions)).toEqual(completions);
    for (const m of this.ops) {
      const ofShutdown = this.isShutdown[m.spec.purgatory];
      expect(m.op.completions).toBe(m.completedBy === undefined ? 0 : 1);
      if (!ofShutdown) expect(m.op.completions).toBe(1);
      expect(m.op.expirations).toBe(m.completedBy === 'timer' ? 1 : 0);
    }
  }
}

const purgatoryIndex = fc.integer({ min: 0, max: PURGATORIES - 1 });
const key = fc.constantFrom(...KEYS);
const opRef = fc.nat(1_000);
const timeoutMs = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 1, 2, 5, 20, 21, 400) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 5_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 1_000_000_000 }) },
);
const keys = fc.array(key, { minLength: 0, maxLength: 3 });
const completable = fc.oneof(
  { weight: 1, arbitrary: fc.constant(true) },
  { weight: 4, arbitrary: fc.constant(false) },
);

const simpleReaction: fc.Arbitrary<Reaction> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('check' as const), purgatory: purgatoryIndex, key }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('enable' as const), op: opRef, check: fc.constant(true) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forceComplete' as const), op: opRef }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('cancelForKey' as const), purgatory: purgatoryIndex, key }),
  },
);
/** Operations watched from inside a callback react too, but watch nothing themselves (so runs end). */
const nestedOp: fc.Arbitrary<OpSpec> = fc.record({
  purgatory: purgatoryIndex,
  keys,
  timeoutMs,
  completable,
  reactions: fc.array(simpleReaction, { maxLength: 2 }),
});
const reaction: fc.Arbitrary<Reaction> = fc.oneof(
  { weight: 8, arbitrary: simpleReaction },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('watch' as const), op: nestedOp }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancelAndWatch' as const), op: nestedOp }) },
);
const opSpec: fc.Arbitrary<OpSpec> = fc.record({
  purgatory: purgatoryIndex,
  keys,
  timeoutMs,
  completable,
  reactions: fc.oneof(fc.constant<Reaction[]>([]), fc.array(reaction, { maxLength: 2 })),
});

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('watch' as const), op: opSpec }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('enable' as const), op: opRef, check: fc.boolean() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('check' as const), purgatory: purgatoryIndex, key }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 100 }), fc.nat(1_000_000)),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advanceToNext' as const),
      offsetMs: fc.integer({ min: -1, max: 1 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('cancelForKey' as const), purgatory: purgatoryIndex, key }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forceComplete' as const), op: opRef }) },
);

const settings: fc.Arbitrary<PurgatorySettings> = fc.record({
  purgeInterval: fc.constantFrom(0, 1, 3, 1_000),
  purgeWorkPerCall: fc.constantFrom(1, 2, 5, 1_024),
});

/** A schedule, with a shutdown of one purgatory spliced in at a random point in some of them. */
const schedule: fc.Arbitrary<Schedule> = fc
  .record({
    startMs: fc.oneof(fc.constant(0), fc.nat(10_000_000)),
    settings: fc.array(settings, { minLength: PURGATORIES, maxLength: PURGATORIES }),
    steps: fc.array(step, { minLength: 1, maxLength: 80, size: 'max' }),
    shutdown: fc.option(fc.record({ at: fc.nat(80), purgatory: purgatoryIndex }), { freq: 3 }),
  })
  .map(({ shutdown, steps, ...rest }) => {
    if (shutdown === null) return { ...rest, steps };
    const at = Math.min(shutdown.at, steps.length);
    const spliced: Step[] = [...steps.slice(0, at), { kind: 'shutdown', purgatory: shutdown.purgatory }];
    return { ...rest, steps: spliced.concat(steps.slice(at)) };
  });

function run(s: Schedule): void {
  const harness = new Harness(s);
  for (const st of s.steps) {
    harness.perform(st);
    harness.checkStep(st);
  }
  harness.finish();
}

describe('DelayedOperationPurgatory under random interleavings, with callbacks re-entering it', () => {
  it('completes each operation exactly once, expires only what the timer completed, and keeps its figures exact', () => {
    fc.assert(fc.property(schedule, run), { numRuns: 500 });
  });
});
