import { TimerTask } from '../timer';

/** What one retention check did, when its pass over the groups ends. */
export interface OffsetRetentionCheckSummary {
  /** Empty groups it looked at (groups with members are passed over). */
  readonly groupsChecked: number;
  /** Offsets it listed: only groups where something could be due are listed. */
  readonly offsetsListed: number;
  /** Offsets it found expired and wrote tombstones for (groups removed included). */
  readonly offsetsExpired: number;
  /** Empty groups it removed, having no offsets left. */
  readonly groupsExpired: number;
  /** Event-loop turns the pass took (it yields every RETENTION_CHECK_OFFSETS_PER_TURN offsets). */
  readonly turns: number;
  /** From the check's start to the end of its pass, on the coordinator's monotonic clock. */
  readonly durationMs: number;
}

/** What one pass has done so far (OffsetRetentionCheckSummary without its duration). */
export interface RetentionTally {
  startedMs: number;
  groupsChecked: number;
  offsetsListed: number;
  offsetsExpired: number;
  groupsExpired: number;
  turns: number;
}

export function newRetentionTally(startedMs: number): RetentionTally {
  return { startedMs, groupsChecked: 0, offsetsListed: 0, offsetsExpired: 0, groupsExpired: 0, turns: 0 };
}

/** What an OffsetRetentionCheck calls when it fires; the coordinator implements it. */
export interface OffsetRetentionHandler {
  onOffsetRetentionCheck(): void;
}

/**
 * Kafka's `delete-expired-group-metadata` task: the coordinator's one periodic task, armed again one interval
 * (offsets.retention.check.interval.ms) after each pass ends, that removes expired offsets and the Empty
 * groups they leave.
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
