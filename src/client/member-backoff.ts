import { ErrorCode } from '../errors';
import type { ExponentialBackoff } from './exponential-backoff';
import type { GroupTransport } from './group-transport';
import { memberErrorAction } from './member-error-actions';
import type { ScheduledTask, Scheduler } from './scheduler';

/**
 * COORDINATOR_LOAD_IN_PROGRESS answers in a row retried at the first backoff (about 2 s of loading at the
 * default 100 ms) before the backoff grows as for any retriable code (see MemberBackoff.retryWaitMs).
 */
export const LOAD_RETRIES_AT_FIRST_BACKOFF = 20;

/** A wait on the member's clock; `cancel` ends it at once (the promise resolves). */
export interface MemberSleep {
  readonly promise: Promise<void>;
  readonly cancel: () => void;
}

/**
 * A group member's waits: how long it backs off before trying again, and the waits themselves, which end
 * early when there is no point in waiting any more. Every wait ends when the member abandons the attempt it
 * belongs to (`wakeAll`: a lost generation, the stall guard, close), so an abandoned loop returns at once
 * instead of sleeping out a backoff for nothing; a backoff after a code that says the coordinator moved also
 * ends when the transport knows another coordinator.
 */
export class MemberBackoff {
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly backoff: ExponentialBackoff,
    private readonly transport: Pick<GroupTransport, 'onCoordinatorFound'>,
    private readonly groupId: string,
  ) {}

  /** A wait that also ends when the attempt is abandoned. */
  sleep(ms: number): MemberSleep {
    let wake = (): void => {};
    const promise = new Promise<void>((resolve) => {
      const task = this.scheduler.schedule(ms, () => wake());
      wake = () => {
        task.cancel();
        this.sleepers.delete(wake);
        resolve();
      };
      this.sleepers.add(wake);
    });
    return { promise, cancel: wake };
  }

  /** Ends every wait in progress: the attempt they belong to was abandoned, or the member closed. */
  wakeAll(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  /**
   * The wait before retrying after `code`, the `failures`-th failure in a row (from 0): the jittered
   * exponential backoff, except that the first LOAD_RETRIES_AT_FIRST_BACKOFF failures in a row, while they
   * are COORDINATOR_LOAD_IN_PROGRESS, do not grow it. That coordinator is found and serves once its
   * partition is loaded, a few hundred ms after its election; doubled waits would hold members back for up
   * to as long again after it (a takeover's last members confirmed 1.4 s after the load). Each retry costs
   * it one answer from memory. A load that lasts longer than that gets the usual growing backoff, so a
   * stuck one is not asked ten times a second by every member for ever.
   */
  retryWaitMs(code: ErrorCode, failures: number): number {
    const isEarlyLoad =
      code === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS && failures < LOAD_RETRIES_AT_FIRST_BACKOFF;
    return this.backoff.backoffMs(isEarlyLoad ? 0 : failures);
  }

  /**
   * The backoff after a retriable `code`: `ms`, or, when the code says the coordinator moved or went away,
   * until the transport knows another one if that is sooner (the member can do nothing before; see
   * CoordinatorCache.onCoordinatorFound). Resolves whether a new coordinator ended it: the retry then
   * goes to a node that was not failing, so the caller starts its backoff over.
   */
  async backOffFrom(code: ErrorCode, ms: number): Promise<boolean> {
    let isFound = false;
    const sleep = this.sleep(ms);
    const stop = this.watchCoordinator(code, () => {
      isFound = true;
      sleep.cancel();
    });
    await sleep.promise;
    stop();
    return isFound;
  }

  /** `run` after `ms`, or as soon as a new coordinator is known (see `backOffFrom`); cancellable. */
  retryTask(code: ErrorCode, ms: number, run: (isFound: boolean) => void): ScheduledTask {
    const stop = this.watchCoordinator(code, () => {
      if (!task.isPending) return;
      task.cancel();
      run(true);
    });
    const task = this.scheduler.schedule(ms, () => {
      stop();
      run(false);
    });
    return {
      cancel: () => {
        task.cancel();
        stop();
      },
      get isPending() {
        return task.isPending;
      },
    };
  }

  private watchCoordinator(code: ErrorCode, onFound: () => void): () => void {
    const transport = this.transport;
    const action = memberErrorAction(code);
    if (transport.onCoordinatorFound === undefined || action.kind !== 'retry' || !action.coordinatorMoved) {
      return () => {};
    }
    return transport.onCoordinatorFound(this.groupId, onFound);
  }
}
