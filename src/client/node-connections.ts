/**
 * One connection per node, by the address it is dialled at: opened on first use, all closed together.
 * Bootstrap nodes and nodes learnt from Metadata or FindCoordinator share the map, so a node listed under
 * the address it was bootstrapped with gets no second connection.
 */
export class NodeConnections<T extends { close(): void }> {
  private readonly open = new Map<string, T>();
  private isClosed = false;

  constructor(private readonly connect: (address: string) => T) {}

  /** The connection to `address`, opened now if it is the first call for it. */
  get(address: string): T {
    if (this.isClosed) throw new Error('the client is closed');
    let connection = this.open.get(address);
    if (connection === undefined) {
      connection = this.connect(address);
      this.open.set(address, connection);
    }
    return connection;
  }

  /** The addresses connected so far. */
  addresses(): string[] {
    return [...this.open.keys()];
  }

  /** Closes every connection; calls in flight end. Idempotent. */
  close(): void {
    this.isClosed = true;
    for (const connection of this.open.values()) connection.close();
    this.open.clear();
  }
}
