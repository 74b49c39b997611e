import { CohortClient, type CohortAdmin, type GroupMember } from '../../src/client';
import { CohortError } from '../../src/errors';
import type { GroupHistory } from './group-history';

/**
 * Group members that commit offsets continuously while faults happen, recording every commit, every
 * offset read and every assignment in a GroupHistory (group-history.ts) for the checker.
 *
 * All members share one CohortClient (one connection per node) started from every node's address, so
 * they find their coordinator the way users' members do. Each member commits, every `commitIntervalMs`,
 * one fresh offset (the history's counter) for each partition it owns, one commit at a time; a reader
 * fetches the group's committed offsets every `readIntervalMs`. A commit that rejects is recorded as of
 * unknown outcome: the SDK retries retriable codes inside one call, so an attempt before the one that
 * failed may have been appended.
 */
export interface GroupCommitWorkloadOptions {
  readonly bootstrap: readonly string[];
  readonly groupId: string;
  readonly topic: string;
  readonly partitions: number;
  readonly members: number;
  /** Static members (KIP-345) when set: `${prefix}-${i}`. */
  readonly groupInstanceIdPrefix?: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly commitIntervalMs?: number;
  readonly readIntervalMs?: number;
  /** False: members hold their partitions without committing (a membership-only workload). */
  readonly commits?: boolean;
}

const REQUEST_TIMEOUT_MS = 5_000;
const MEMBER_REQUEST_TIMEOUT_MS = 15_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface MemberSlot {
  readonly name: string;
  readonly member: GroupMember;
  owned: readonly number[];
  generationId: number;
  memberId: string;
  /** performance.now() of the latest assignment. */
  assignedAtMs: number;
  /** Every acknowledged commit of this member, in order. */
  readonly acks: MemberAck[];
}

/** One acknowledged commit of one member: when it was sent and answered, in which generation. */
export interface MemberAck {
  readonly invokedAtMs: number;
  readonly ackedAtMs: number;
  readonly generationId: number;
}

/** One commit that was not acknowledged: when it was sent and gave up, and why. */
export interface CommitFailure {
  readonly invokedAtMs: number;
  readonly failedAtMs: number;
  readonly reason: string;
}

/** What one member did since a moment (GroupCommitWorkload.membersSince). */
export interface MemberSince {
  readonly name: string;
  /** The generation it holds now (-1 before its first assignment). */
  readonly generationId: number;
  /** performance.now() of its latest assignment. */
  readonly assignedAtMs: number;
  /** Its first commit sent after the moment and acknowledged, if any. */
  readonly firstAck: MemberAck | undefined;
  /** Its first such commit in the generation it holds now, if any. */
  readonly firstAckInGeneration: MemberAck | undefined;
}

export class GroupCommitWorkload {
  readonly client: CohortClient;
  readonly admin: CohortAdmin;
  /** performance.now() of the latest acknowledged commit, and when it was sent. */
  lastAck: { readonly invokedAtMs: number; readonly ackedAtMs: number } | undefined;
  /** Assignments observed, in order: one per member per generation it was handed. */
  assignments = 0;
  private readonly slots: MemberSlot[] = [];
  /** Every commit that rejected, in order. */
  private readonly failures: CommitFailure[] = [];
  /** performance.now() of every revocation or loss a member was told of. */
  private readonly rebalanceNotices: number[] = [];
  private isRunning = true;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly history: GroupHistory,
    private readonly options: GroupCommitWorkloadOptions,
  ) {
    this.client = new CohortClient({ bootstrap: [...options.bootstrap], clientId: 'group-faults' });
    // A coordinator paused mid-call answers nothing: calls give up after 5 s (not 30) and find it again.
    this.admin = this.client.admin({ requestTimeoutMs: REQUEST_TIMEOUT_MS });
  }

  start(): void {
    const { options } = this;
    for (let i = 0; i < options.members; i++) {
      const name = `member-${i}`;
      const member = this.client.join({
        groupId: options.groupId,
        topics: [options.topic],
        partitionsPerTopic: new Map([[options.topic, options.partitions]]),
        sessionTimeoutMs: options.sessionTimeoutMs,
        heartbeatIntervalMs: options.heartbeatIntervalMs,
        rebalanceTimeoutMs: options.rebalanceTimeoutMs,
        // Long enough for 50 members to form on a loaded machine; a paused coordinator's heartbeats give up
        // after it, and the member finds the new coordinator.
        requestTimeoutMs: MEMBER_REQUEST_TIMEOUT_MS,
        retryBackoffMs: 100,
        retryBackoffMaxMs: 1_000,
        ...(options.groupInstanceIdPrefix === undefined
          ? {}
          : { groupInstanceId: `${options.groupInstanceIdPrefix}-${i}` }),
      });
      const slot: MemberSlot = {
        name,
        member,
        owned: [],
        generationId: -1,
        memberId: '',
        assignedAtMs: 0,
        acks: [],
      };
      member.on('assigned', ({ generationId, memberId, partitions }) => {
        slot.generationId = generationId;
        slot.assignedAtMs = performance.now();
        slot.memberId = memberId;
        slot.owned = partitions.filter((p) => p.topic === options.topic).map((p) => p.partition);
        this.assignments++;
        this.history.observeAssignment({
          groupId: options.groupId,
          memberId,
          generationId,
          partitions: partitions.map((p) => `${p.topic}-${p.partition}`),
          nodeId: -1,
        });
      });
      const drop = (): void => {
        slot.owned = [];
        this.rebalanceNotices.push(performance.now());
      };
      member.on('revoked', drop);
      member.on('lost', drop);
      member.on('error', () => undefined);
      this.slots.push(slot);
      if (options.commits !== false) this.loops.push(this.commitLoop(slot));
    }
    if (options.commits !== false) this.loops.push(this.readLoop());
  }

  /** A member's id and generation as it was last assigned (for raw requests to a deposed coordinator). */
  memberIdentity(): { memberId: string; generationId: number; groupInstanceId: string } | undefined {
    const slot = this.slots.find((s) => s.memberId !== '');
    if (slot === undefined) return undefined;
    const prefix = this.options.groupInstanceIdPrefix;
    const index = this.slots.indexOf(slot);
    return {
      memberId: slot.memberId,
      generationId: slot.generationId,
      groupInstanceId: prefix === undefined ? '' : `${prefix}-${index}`,
    };
  }

  /**
   * Every member holds an assignment of one generation, and the group says Stable with all of them.
   * Otherwise throws what is missing (waitFor reports the last one when it gives up).
   */
  async isStable(): Promise<{ generationId: number }> {
    const generations = new Set(this.slots.map((s) => s.generationId));
    const states = new Map<string, number>();
    for (const slot of this.slots) states.set(slot.member.state, (states.get(slot.member.state) ?? 0) + 1);
    const members = `members in generations [${[...generations].join(', ')}], states ${JSON.stringify(Object.fromEntries(states))}`;
    if (generations.size !== 1 || generations.has(-1)) throw new Error(members);
    const [described] = await this.admin.describeGroups([this.options.groupId]);
    const generationId = [...generations][0]!;
    if (
      described === undefined ||
      described.state !== 'Stable' ||
      described.members.length !== this.options.members ||
      described.generationId !== generationId
    ) {
      throw new Error(
        `${members}; the group is ${described?.state} in generation ${described?.generationId} with ${described?.members.length} members`,
      );
    }
    return { generationId };
  }

  /** Per member: its generation now and its first acknowledged commits sent after `sinceMs`. */
  membersSince(sinceMs: number): MemberSince[] {
    return this.slots.map((slot) => ({
      name: slot.name,
      generationId: slot.generationId,
      assignedAtMs: slot.assignedAtMs,
      firstAck: slot.acks.find((a) => a.invokedAtMs > sinceMs),
      firstAckInGeneration: slot.acks.find(
        (a) => a.invokedAtMs > sinceMs && a.generationId === slot.generationId,
      ),
    }));
  }

  /** Every acknowledged commit of every member, in no particular order. */
  acknowledgedCommits(): MemberAck[] {
    return this.slots.flatMap((slot) => slot.acks);
  }

  /** The commits that rejected after `sinceMs` (by when they gave up). */
  commitFailuresSince(sinceMs: number): CommitFailure[] {
    return this.failures.filter((f) => f.failedAtMs > sinceMs);
  }

  /** When members were told of a revocation or a loss, since `sinceMs`. */
  rebalanceNoticesSince(sinceMs: number): number[] {
    return this.rebalanceNotices.filter((atMs) => atMs > sinceMs);
  }

  /** Stops committing and reading, and waits for the calls in flight. */
  async stopTraffic(): Promise<void> {
    this.isRunning = false;
    await Promise.all(this.loops);
  }

  /** Reads the final committed offset of every partition (once the cluster is quiet) into the history. */
  async recordFinalOffsets(): Promise<void> {
    const { groupId, topic, partitions } = this.options;
    const read = await this.admin.fetchCommittedOffsets(
      groupId,
      Array.from({ length: partitions }, (_, partition) => ({ topic, partition })),
    );
    for (let partition = 0; partition < partitions; partition++) {
      const found = read.find((o) => o.topic === topic && o.partition === partition);
      this.history.addFinal({
        groupId,
        topic,
        partition,
        offset: found === undefined ? -1 : Number(found.offset),
      });
    }
  }

  async close(): Promise<void> {
    this.isRunning = false;
    await Promise.all(this.loops);
    await Promise.all(this.slots.map((s) => s.member.close({ timeoutMs: 10_000 }).catch(() => undefined)));
    await this.client.close();
  }

  private async commitLoop(slot: MemberSlot): Promise<void> {
    const { groupId, topic } = this.options;
    const intervalMs = this.options.commitIntervalMs ?? 100;
    while (this.isRunning) {
      const owned = slot.owned;
      if (owned.length === 0 || slot.member.state !== 'stable') {
        await sleep(intervalMs);
        continue;
      }
      const commits = owned.map((partition) => {
        const offset = this.history.takeCommitOffset();
        const op = this.history.invokeCommit(
          { groupId, topic, partition },
          slot.name,
          -1,
          offset,
          slot.generationId,
        );
        return { op, partition, offset };
      });
      const invokedAtMs = performance.now();
      const generationId = slot.generationId;
      try {
        await slot.member.commitOffsets(
          commits.map(({ partition, offset }) => ({ topic, partition, offset: BigInt(offset) })),
          { timeoutMs: 10_000 },
        );
        for (const { op } of commits) this.history.commitOk(op);
        this.lastAck = { invokedAtMs, ackedAtMs: performance.now() };
        slot.acks.push({ invokedAtMs, ackedAtMs: this.lastAck.ackedAtMs, generationId });
      } catch (error) {
        const reason = error instanceof CohortError ? `${error.code}` : String(error);
        for (const { op } of commits) this.history.completeWithError(op, 'info', reason);
        this.failures.push({ invokedAtMs, failedAtMs: performance.now(), reason });
      }
      await sleep(intervalMs);
    }
  }

  private async readLoop(): Promise<void> {
    const { groupId, topic, partitions } = this.options;
    const intervalMs = this.options.readIntervalMs ?? 250;
    const all = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
    while (this.isRunning) {
      const ops = all.map(({ partition }) => ({
        partition,
        op: this.history.invokeRead({ groupId, topic, partition }, 'reader', -1),
      }));
      try {
        const read = await this.admin.fetchCommittedOffsets(groupId, all);
        for (const { partition, op } of ops) {
          const found = read.find((o) => o.topic === topic && o.partition === partition);
          this.history.readOk(op, found === undefined ? -1 : Number(found.offset));
        }
      } catch (error) {
        for (const { op } of ops) this.history.completeWithError(op, 'info', String(error));
      }
      await sleep(intervalMs);
    }
  }
}
