import { TimerTask } from './timer-task';

/** A timer task that calls a function: retries, renewals, wake-ups and deadlines. */
export class TimerAction extends TimerTask {
  constructor(private readonly action: () => void) {
    super(0);
  }

  override run(): void {
    this.action();
  }
}
