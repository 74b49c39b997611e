import { TimerTask } from '../timer';

/** A timer task that calls a function: the cluster layer's retries, renewals and deadlines. */
export class TimerAction extends TimerTask {
  constructor(private readonly action: () => void) {
    super(0);
  }

  override run(): void {
    this.action();
  }
}
