/**
 * Keeps `inFlight` requests outstanding until stopped: each answer sends the next request, for the next
 * item of a fixed order (a member, an offset window). It counts answers, so a bench reads how many were
 * answered inside a window it opened and closed around them.
 */
export class ClosedLoopDriver {
  answered = 0;
  failure: Error | undefined;
  private next = 0;
  private isRunning = false;
  private outstanding = 0;
  private drained: (() => void) | undefined;

  /**
   * `send(item, onAnswer)` sends one request for item `item` (0 ≤ item < items) and calls `onAnswer` once
   * it is answered, after checking the answer (a wrong one goes to `fail`).
   */
  constructor(
    private readonly send: (item: number, onAnswer: () => void) => void,
    private readonly items: number,
    private readonly inFlight: number,
  ) {}

  start(): void {
    this.isRunning = true;
    for (let i = 0; i < this.inFlight; i++) this.issue();
  }

  /** Stops issuing; resolves once every request in flight is answered. */
  stop(): Promise<void> {
    this.isRunning = false;
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }

  fail(error: Error): void {
    this.failure ??= error;
  }

  private issue(): void {
    const item = this.next;
    this.next = (this.next + 1) % this.items;
    this.outstanding++;
    this.send(item, this.onAnswer);
  }

  private readonly onAnswer = (): void => {
    this.outstanding--;
    this.answered++;
    if (this.isRunning && this.failure === undefined) this.issue();
    else if (this.outstanding === 0) this.drained?.();
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface MeasuredWindow {
  readonly answered: number;
  readonly wallUs: number;
  readonly cpuUs: number;
  readonly eventLoopUtilization: number;
  /** Kernel CPU, minor page faults and collections' pauses, when the server reports them (bench:kafka's do). */
  readonly systemUs?: number;
  readonly minorFaults?: number;
  readonly gcPauseUs?: number;
}

/**
 * Runs `driver` for a warm-up, then a window in which the server measures its own CPU and the driver
 * counts what was answered; stops the driver and fails on anything it saw.
 */
export async function measureWindow(
  server: {
    windowStart(): Promise<void>;
    windowStop(): Promise<Omit<MeasuredWindow, 'answered'>>;
  },
  driver: ClosedLoopDriver,
  warmupMs: number,
  windowMs: number,
): Promise<MeasuredWindow> {
  driver.start();
  await sleep(warmupMs);
  await server.windowStart();
  const before = driver.answered;
  await sleep(windowMs);
  const answered = driver.answered - before;
  const window = await server.windowStop();
  await driver.stop();
  if (driver.failure !== undefined) throw driver.failure;
  return { answered, ...window };
}
