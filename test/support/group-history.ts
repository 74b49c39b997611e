/**
 * A history of what group members did to a cohort cluster and saw of it, recorded Jepsen-style so that
 * `checkGroupHistory` (group-history-checker.ts) judges it after the run, as log-history.ts does for
 * the log.
 *
 * - Commits are operations: `invoke` when a member sends an OffsetCommit, then exactly one completion:
 *   `ok` (acknowledged), `fail` (certainly not stored: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
 *   REBALANCE_IN_PROGRESS are refused before anything is appended), `info` (unknown: a timeout, a lost
 *   connection, NOT_COORDINATOR after the append may have happened). Still pending at the end = `info`.
 * - Offset reads are operations too (OffsetFetch): `ok` carries the committed offset (-1 for none).
 * - Assignments are observations: a member's SyncGroup answer for a generation.
 * - At the end, `final` holds each (group, partition)'s committed offset read from the final coordinator.
 *
 * The workload makes offsets identify commits: every commit sends the next value of one counter shared
 * by all members of the run, so a commit invoked after another completed has the larger offset, and no
 * two commits share an offset. Every event gets the next `index`: the history is a total order consistent
 * with real time (the members run on the recording process's event loop).
 */

export interface GroupPartitionRef {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
}

interface OperationBase extends GroupPartitionRef {
  readonly index: number;
  readonly opId: number;
  /** The member (or reader) that issued it. */
  readonly process: string;
  /** The node the request went to. */
  readonly nodeId: number;
}

export type CommitEvent = OperationBase & { readonly f: 'commit'; readonly offset: number } & (
    | { readonly type: 'invoke'; readonly generationId: number }
    | { readonly type: 'ok' }
    | { readonly type: 'fail' | 'info'; readonly reason: string }
  );

export type OffsetReadEvent = OperationBase & { readonly f: 'read' } & (
    | { readonly type: 'invoke' }
    | { readonly type: 'ok'; readonly offset: number }
    | { readonly type: 'fail' | 'info'; readonly reason: string }
  );

export type GroupHistoryEvent = CommitEvent | OffsetReadEvent;

/** What one member was handed by SyncGroup for one generation. */
export interface AssignmentObservation {
  readonly index: number;
  readonly groupId: string;
  readonly memberId: string;
  readonly generationId: number;
  /** The partitions, as "topic-partition", in any order. */
  readonly partitions: readonly string[];
  readonly nodeId: number;
}

export interface FinalOffset extends GroupPartitionRef {
  /** -1 when the group has no offset for the partition. */
  readonly offset: number;
}

export interface GroupHistorySnapshot {
  readonly events: readonly GroupHistoryEvent[];
  readonly assignments: readonly AssignmentObservation[];
  readonly final: readonly FinalOffset[];
}

type Completion<E> = E extends { type: 'invoke' } ? never : E;
/** Omit over each member of a union (the built-in Omit merges the union first). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Records a group history; not thread-safe (it needs none: one event loop). */
export class GroupHistory {
  private readonly events: GroupHistoryEvent[] = [];
  private readonly assignments: AssignmentObservation[] = [];
  private readonly final: FinalOffset[] = [];
  private readonly pending = new Map<number, GroupHistoryEvent>();
  private nextIndex = 0;
  private nextOpId = 0;
  private nextOffset = 0;
  private isClosed = false;

  /** The offset the next commit sends: one counter for the whole run. */
  takeCommitOffset(): number {
    return this.nextOffset++;
  }

  invokeCommit(
    ref: GroupPartitionRef,
    process: string,
    nodeId: number,
    offset: number,
    generationId: number,
  ): number {
    return this.invoke({ f: 'commit', type: 'invoke', ...ref, process, nodeId, offset, generationId });
  }

  invokeRead(ref: GroupPartitionRef, process: string, nodeId: number): number {
    return this.invoke({ f: 'read', type: 'invoke', ...ref, process, nodeId });
  }

  commitOk(opId: number): void {
    this.complete(opId, { type: 'ok' });
  }

  readOk(opId: number, offset: number): void {
    this.complete(opId, { type: 'ok', offset });
  }

  /** `fail` only when the commit certainly was not stored; anything unsure is `info`. */
  completeWithError(opId: number, type: 'fail' | 'info', reason: string): void {
    this.complete(opId, { type, reason });
  }

  observeAssignment(observation: Omit<AssignmentObservation, 'index'>): void {
    this.assignments.push({ ...observation, index: this.nextIndex++ });
  }

  addFinal(offset: FinalOffset): void {
    this.final.push(offset);
  }

  /** Closes the history: every pending operation becomes `info`. */
  close(): GroupHistorySnapshot {
    if (!this.isClosed) {
      this.isClosed = true;
      for (const opId of [...this.pending.keys()]) this.completeWithError(opId, 'info', 'pending at the end');
    }
    return { events: [...this.events], assignments: [...this.assignments], final: [...this.final] };
  }

  private invoke(event: DistributiveOmit<GroupHistoryEvent, 'index' | 'opId'>): number {
    const opId = this.nextOpId++;
    const recorded = { ...event, index: this.nextIndex++, opId } as GroupHistoryEvent;
    this.events.push(recorded);
    this.pending.set(opId, recorded);
    return opId;
  }

  private complete(opId: number, completion: Record<string, unknown>): void {
    const invoked = this.pending.get(opId);
    if (invoked === undefined) throw new Error(`operation ${opId} is not pending`);
    this.pending.delete(opId);
    const {
      type: _type,
      generationId: _generationId,
      ...base
    } = invoked as GroupHistoryEvent & {
      generationId?: number;
    };
    const completed = { ...base, ...completion, index: this.nextIndex++ } as Completion<GroupHistoryEvent>;
    this.events.push(completed);
  }
}
