import type { Time } from '../time';
import type { ScheduledTask, Scheduler } from './scheduler';

/** One piece of work run under the guard (`GroupMember.process`); its signal aborts when it must stop. */
export interface GuardedWork {
  readonly startedMs: number;
  readonly controller: AbortController;
}

/** What the guard needs of the member it watches over. */
export interface StallGuardOwner {
  /** Whether a stall would mean anything now: the member is neither stalled already nor shutting down. */
  isGuarding(): boolean;
  /** Some work has run longer than `maxProcessingIntervalMs`: the member leaves the group. */
  onStall(): void;
}

/**
 * The stall guard (Kafka's max.poll.interval.ms). Heartbeats run on their own timer, whatever the user's
 * work does, so the coordinator keeps a member whose work is stuck, and its partitions with it, for ever.
 * The guard is the member's own check: it tracks the work started with `GroupMember.process` and, when the
 * oldest has run for `maxProcessingIntervalMs`, tells the member, which leaves so its partitions move to
 * members that make progress. Without `maxProcessingIntervalMs` it only tracks the work, so that the
 * member can abort it when the assignment is lost.
 *
 * One timer, for the oldest work only (a Set iterates in insertion order): it is re-armed whenever work
 * starts with none running, ends, or the member becomes stable again.
 */
export class StallGuard {
  private readonly running = new Set<GuardedWork>();
  private task: ScheduledTask | null = null;

  constructor(
    private readonly time: Time,
    private readonly scheduler: Scheduler,
    private readonly maxProcessingIntervalMs: number | undefined,
    private readonly owner: StallGuardOwner,
  ) {}

  /** No work is running. */
  get isIdle(): boolean {
    return this.running.size === 0;
  }

  /** Starts watching one piece of work; hand `end` the same object when it ends, however it ends. */
  begin(): GuardedWork {
    const work: GuardedWork = { startedMs: this.time.monotonicMs(), controller: new AbortController() };
    this.running.add(work);
    if (this.running.size === 1) this.arm();
    return work;
  }

  end(work: GuardedWork): void {
    this.running.delete(work);
    this.arm();
  }

  /** (Re)starts the timer for the oldest work running, if the guard is on and the member guarded. */
  arm(): void {
    this.task?.cancel();
    this.task = null;
    const max = this.maxProcessingIntervalMs;
    if (max === undefined || this.running.size === 0 || !this.owner.isGuarding()) return;
    const oldest = this.running.values().next().value as GuardedWork;
    const dueInMs = Math.max(0, oldest.startedMs + max - this.time.monotonicMs());
    this.task = this.scheduler.schedule(dueInMs, () => this.onTimer());
  }

  /** Stops the timer until the next `arm` (the member is closing or has failed). */
  disarm(): void {
    this.task?.cancel();
  }

  /** Aborts the signal of every work running, with `reason`. */
  abortAll(reason: Error): void {
    for (const work of this.running) work.controller.abort(reason);
  }

  private onTimer(): void {
    this.task = null;
    if (!this.owner.isGuarding()) return;
    this.owner.onStall();
  }
}
