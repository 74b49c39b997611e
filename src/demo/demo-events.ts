/** How a demo child (producer or consumer process) is set up: one JSON argument. */
export interface DemoChildConfig {
  readonly name: string;
  /** The nodes to start from: the demo's own server, or the cluster of `--address`. */
  readonly bootstrap: readonly string[];
  readonly topic: string;
  readonly groupId: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly recordsPerSecond: number;
}

/** What a demo child reports, one JSON line on its stdout each. */
export type DemoChildEvent =
  | { readonly event: 'ready' }
  | {
      readonly event: 'assigned';
      readonly generationId: number;
      readonly memberId: string;
      readonly isLeader: boolean;
      readonly partitions: readonly number[];
      readonly added: readonly number[];
    }
  | { readonly event: 'revoked' | 'lost'; readonly reason: string; readonly partitions: readonly number[] }
  | { readonly event: 'consumed' | 'produced'; readonly total: number }
  | { readonly event: 'failed'; readonly message: string };

/** Writes one event for the demo's orchestrator. */
export function report(event: DemoChildEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}
