/**
 * A history of what clients did to a cohort cluster and saw of it, recorded Jepsen-style so that
 * `checkLogHistory` (log-history-checker.ts) can judge it afterwards instead of a test asserting as it
 * goes.
 *
 * Each operation is two events: `invoke` when the client sends it, then exactly one completion:
 * - `ok`: it happened, with its result (a produce's offset, a fetch's records);
 * - `fail`: it certainly did not happen (a produce refused before anything was appended);
 * - `info`: the outcome is unknown (a timeout, a lost connection, an answer that may follow an append:
 *   Kafka's NOT_LEADER_OR_FOLLOWER for a parked acks=-1 produce is one). An operation still pending when
 *   the history is closed counts as `info`.
 * Metadata answers are observations (instantaneous): which node said which leader and leader epoch.
 * At the end, the final log of each replica is added: its records, high watermark and log end offset.
 *
 * Every event gets the next `index`: the history is a total order consistent with real time (the clients
 * run on the recording process's event loop), which the order checks rely on. `atMs` is the monotonic
 * time of the recording, for the messages only.
 *
 * Worked example: producer p1 sends "p1-0" to node 2 (invoke #0); node 2 answers offset 0 (ok #1); a
 * consumer fetches from offset 0 (invoke #2) and reads (0, "p1-0") (ok #3); p1 sends "p1-1" (#4) and its
 * connection drops (info #5). The final log of the leader may hold "p1-1" at offset 1 or not: both are
 * correct, since #5 is unknown; but it must hold "p1-0" at offset 0.
 */

/** A topic partition as the history names it. */
export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** One record as a client saw it. */
export interface SeenRecord {
  readonly offset: number;
  readonly value: string;
  /** The epoch of the leader that wrote it, where the reader was told (a Fetch answer's record). */
  readonly leaderEpoch?: number;
}

interface EventBase {
  readonly index: number;
  readonly atMs: number;
  /** The client that issued the operation ("producer-1", "consumer-2"). */
  readonly process: string;
  readonly opId: number;
}

export type ProduceEvent = EventBase &
  PartitionRef & { readonly f: 'produce'; readonly value: string; readonly nodeId: number } & (
    | { readonly type: 'invoke' }
    | { readonly type: 'ok'; readonly offset: number }
    | { readonly type: 'fail' | 'info'; readonly reason: string }
  );

export type FetchEvent = EventBase &
  PartitionRef & { readonly f: 'fetch'; readonly fetchOffset: number; readonly nodeId: number } & (
    | { readonly type: 'invoke' }
    | { readonly type: 'ok'; readonly records: readonly SeenRecord[]; readonly highWatermark: number }
    | { readonly type: 'fail' | 'info'; readonly reason: string }
  );

export type HistoryEvent = ProduceEvent | FetchEvent;

/** A node's answer to Metadata about one partition. */
export interface MetadataObservation extends PartitionRef {
  /** When the answer arrived. */
  readonly index: number;
  readonly atMs: number;
  /**
   * When the Metadata request was sent. The node answered somewhere between the two: answers on
   * different connections may arrive in another order than the node gave them, so an order between two
   * observations holds only when one arrived before the other was sent.
   */
  readonly sentIndex: number;
  /** The node that answered. */
  readonly nodeId: number;
  /** -1 when the node knows no leader. */
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
}

/** One replica's log at the end of the run. */
export interface FinalReplicaLog extends PartitionRef {
  readonly nodeId: number;
  /** Whether this replica is the partition's leader at the end (exactly one per partition). */
  readonly isLeader: boolean;
  /** Every record the replica holds, in offset order (compaction may leave gaps). */
  readonly records: readonly SeenRecord[];
  readonly highWatermark: number;
  readonly logEndOffset: number;
  /** Where the records came from: a consumer Fetch, or the replica's data directory read after its stop. */
  readonly source: 'fetch' | 'data-dir';
}

/** Everything the checker reads; plain data (JSON-serializable), so a failed run can be dumped and replayed. */
export interface LogHistorySnapshot {
  readonly events: readonly HistoryEvent[];
  readonly metadata: readonly MetadataObservation[];
  readonly finalLogs: readonly FinalReplicaLog[];
}

/** The pending half of a produce: complete it exactly once. */
export interface PendingProduce {
  ok(offset: number): void;
  fail(reason: string): void;
  info(reason: string): void;
}

/** The pending half of a fetch: complete it exactly once. */
export interface PendingFetch {
  ok(records: readonly SeenRecord[], highWatermark: number): void;
  fail(reason: string): void;
  info(reason: string): void;
}

export class LogHistory {
  private readonly events: HistoryEvent[] = [];
  private readonly observations: MetadataObservation[] = [];
  private readonly finalLogs: FinalReplicaLog[] = [];
  private nextIndex = 0;
  private nextOpId = 0;
  private readonly pending = new Map<number, () => void>();
  private isClosed = false;

  /** `nowMs` is a monotonic clock (performance.now in tests of real processes, a counter in unit tests). */
  constructor(private readonly nowMs: () => number) {}

  invokeProduce(
    process: string,
    target: PartitionRef & { readonly nodeId: number },
    value: string,
  ): PendingProduce {
    const base = {
      process,
      opId: this.nextOpId++,
      f: 'produce' as const,
      topic: target.topic,
      partition: target.partition,
      nodeId: target.nodeId,
      value,
    };
    this.append({ ...base, type: 'invoke' });
    const complete = this.completion(base.opId, (reason) => this.append({ ...base, type: 'info', reason }));
    return {
      ok: (offset) => complete(() => this.append({ ...base, type: 'ok', offset })),
      fail: (reason) => complete(() => this.append({ ...base, type: 'fail', reason })),
      info: (reason) => complete(() => this.append({ ...base, type: 'info', reason })),
    };
  }

  invokeFetch(
    process: string,
    target: PartitionRef & { readonly nodeId: number },
    fetchOffset: number,
  ): PendingFetch {
    const base = {
      process,
      opId: this.nextOpId++,
      f: 'fetch' as const,
      topic: target.topic,
      partition: target.partition,
      nodeId: target.nodeId,
      fetchOffset,
    };
    this.append({ ...base, type: 'invoke' });
    const complete = this.completion(base.opId, (reason) => this.append({ ...base, type: 'info', reason }));
    return {
      ok: (records, highWatermark) =>
        complete(() => this.append({ ...base, type: 'ok', records: [...records], highWatermark })),
      fail: (reason) => complete(() => this.append({ ...base, type: 'fail', reason })),
      info: (reason) => complete(() => this.append({ ...base, type: 'info', reason })),
    };
  }

  /**
   * Call when a Metadata request is sent to `nodeId`; call the returned function once per partition of
   * the answer the node gave (with the partition's error NONE: an answer without a leader epoch says
   * nothing to check).
   */
  invokeMetadata(
    nodeId: number,
  ): (answer: Omit<MetadataObservation, 'index' | 'atMs' | 'sentIndex' | 'nodeId'>) => void {
    const sentIndex = this.nextIndex++;
    return (answer) => {
      if (this.isClosed) return;
      this.observations.push({ ...answer, nodeId, isr: [...answer.isr], sentIndex, ...this.stamp() });
    };
  }

  addFinalLog(log: FinalReplicaLog): void {
    this.finalLogs.push({ ...log, records: [...log.records] });
  }

  /**
   * Ends recording: every operation still pending completes as `info` (its outcome is unknown), and later
   * completions and observations are dropped (a client whose call answers after the run ended).
   */
  close(): void {
    for (const closeAsInfo of [...this.pending.values()]) closeAsInfo();
    this.isClosed = true;
  }

  snapshot(): LogHistorySnapshot {
    return { events: [...this.events], metadata: [...this.observations], finalLogs: [...this.finalLogs] };
  }

  /** How many operations of each kind completed how, for a run's summary line. */
  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const event of this.events) {
      if (event.type === 'invoke') continue;
      const key = `${event.f}_${event.type}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return counts;
  }

  private completion(opId: number, asInfo: (reason: string) => void): (record: () => void) => void {
    let isDone = false;
    const finish = (record: () => void): void => {
      if (isDone) {
        // A call that answers after close() completed it as unknown: the late answer is dropped.
        if (this.isClosed) return;
        throw new Error(`operation ${opId} completed twice`);
      }
      isDone = true;
      this.pending.delete(opId);
      if (!this.isClosed) record();
    };
    this.pending.set(opId, () => finish(() => asInfo('pending when the history closed')));
    return finish;
  }

  private stamp(): { index: number; atMs: number } {
    return { index: this.nextIndex++, atMs: this.nowMs() };
  }

  private append(event: DistributiveOmit<HistoryEvent, 'index' | 'atMs'>): void {
    if (this.isClosed) return;
    this.events.push({ ...event, ...this.stamp() } as HistoryEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
