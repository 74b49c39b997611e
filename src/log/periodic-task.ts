import type { Timer } from '../timer';
import { TimerTask } from '../timer';

/**
 * Runs `action` every `periodMs` on a timer (Kafka's scheduler.schedule with a period), measured from
 * the end of each run, so a slow run never queues up runs behind it. `cancel()` stops it for good.
 */
export class PeriodicTask extends TimerTask {
  private isStopped = false;

  constructor(
    private readonly timer: Timer,
    periodMs: number,
    private readonly action: () => void,
  ) {
    super(periodMs);
  }

  start(): this {
    this.timer.add(this);
    return this;
  }

  override run(): void {
    if (this.isStopped) return;
    try {
      this.action();
    } finally {
      // Re-armed even when the action throws: one failed retention pass must not end every later one.
      if (!this.isStopped) this.timer.add(this);
    }
  }

  override cancel(): void {
    this.isStopped = true;
    super.cancel();
  }
}
