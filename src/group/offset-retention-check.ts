import { TimerTask } from '../timer';

/** What an OffsetRetentionCheck calls when it fires; the coordinator implements it. */
export interface OffsetRetentionHandler {
  onOffsetRetentionCheck(): void;
}

/**
 * Kafka's `delete-expired-group-metadata` task: the coordinator's one periodic task, re-armed after each run
 * (offsets.retention.check.interval.ms), that removes expired offsets and the Empty groups they leave.
 */
export class OffsetRetentionCheck extends TimerTask {
  private readonly handler: OffsetRetentionHandler;

  constructor(handler: OffsetRetentionHandler, intervalMs: number) {
    super(intervalMs);
    this.handler = handler;
  }

  run(): void {
    this.handler.onOffsetRetentionCheck();
  }
}
