/** A command line that cannot be run as written: the CLI prints the message and the usage, and exits 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The usage of the command concerned, printed after the message. */
    readonly usage: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}
