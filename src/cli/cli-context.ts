/** What a command runs with: its streams, the environment, and a signal for Ctrl-C. Tests pass their own. */
export interface CliContext {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Aborted on the first SIGINT or SIGTERM (its reason is the signal's name): long-running commands
   * (consume, produce) stop cleanly. A second signal ends the process at once.
   */
  readonly signal: AbortSignal;
  /**
   * Hands every SIGINT and SIGTERM from now on to `listener` instead (`serve` passes them to its server);
   * call the function returned to give them back.
   */
  takeOverSignals(listener: (signal: NodeJS.Signals) => void): () => void;
}

/** A top-level command (`groups`, `topics`, `produce`, ...): one file each under src/cli. */
export interface CliCommand {
  readonly name: string;
  /** One line for `cohort --help`. */
  readonly summary: string;
  /** Runs with the arguments after the command's name; resolves with the exit status. */
  run(args: readonly string[], context: CliContext): Promise<number>;
}
