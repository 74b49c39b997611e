/**
 * What the demo tells of the cluster under it (`npm run demo -- --address ...`): a node that leaves or
 * joins, the demo topic's partitions changing leader, the group's coordinator that stops answering and the
 * node that coordinates the group after it, and the producer waiting for acknowledgements and resuming.
 * The demo's own lines say what its consumers see; these say why, when someone kills a node meanwhile.
 *
 * Once started it looks, as any client can, every `pollMs`: Metadata (the live nodes, which Metadata lists
 * until a node's session in etcd expires, and each partition's leader) from any node, and DescribeGroups at the
 * group's coordinator, which FindCoordinator names (the client forgets a coordinator that stops answering,
 * so the next look asks again). Each look is compared with the one before and only the changes are told.
 * The group is told as its coordinator holds it: whether a member gave its partitions up meanwhile (its
 * session ran out first) is the member's to say, and the demo prints that from the consumers' own events.
 * The producer's totals come from the demo (`produced`): once records are acknowledged, no growth for
 * `stallMs` is a stall, and the next growth ends it.
 *
 * A kill -9 of node 1, which coordinated the group, 12.3 s into a run (times from the demo's start; the
 * demo's own producer lines left out):
 *
 *     [ 12.9s] group      demo-group's coordinator, node 1, does not answer (COORDINATOR_NOT_AVAILABLE): the
 *                         members keep their partitions for their 20s session, the time the cluster has ...
 *     [ 14.3s] producer   no record acknowledged for 3.0s: acks=-1 waits for every in-sync replica, ...
 *     [ 20.0s] cluster    node 1 left the cluster (its session in etcd expired): live nodes 2 and 3
 *     [ 20.0s] cluster    new leaders: demo-orders-2 on node 2, demo-orders-5 on node 3
 *     [ 20.0s] group      demo-group moved to node 3: Stable, generation 1 and the same 3 members as before
 *     [ 20.3s] producer   acknowledgements resumed after 9.0s: 274 records acknowledged
 */
import { CohortClient } from '../client/cohort-client';
import type { BrokerDescription, CohortAdmin } from '../client/cohort-admin';
import { CohortError, ErrorCode } from '../errors';

/** How the group stood at one look, or why it could not be seen. */
export type GroupSample =
  | {
      readonly coordinatorId: number;
      readonly state: string;
      readonly generationId: number;
      readonly memberIds: readonly string[];
    }
  | { readonly error: string };

/** One look at the cluster; null where that part of it could not be seen. */
export interface ClusterSample {
  readonly brokers: readonly BrokerDescription[] | null;
  /** The demo topic's partitions → their leaders' node ids. */
  readonly leaders: ReadonlyMap<number, number> | null;
  readonly group: GroupSample;
}

export interface ClusterNarratorOptions {
  /** The cluster's nodes to start from; the narrator has a client of its own. */
  readonly bootstrap: readonly string[];
  readonly topic: string;
  readonly groupId: string;
  /** The members' session timeout: how long they wait for a coordinator before giving up their partitions. */
  readonly sessionTimeoutMs: number;
  /** Prints one line of the story: who it is about, and what. */
  readonly say: (who: string, text: string) => void;
  /** Default 500. */
  readonly pollMs?: number;
  /** How long without an acknowledgement is told as a stall. Default 3,000. */
  readonly stallMs?: number;
  /** The bound of each call of a look. Default 2,000. */
  readonly requestTimeoutMs?: number;
}

/** An error's code name (COORDINATOR_NOT_AVAILABLE): the whole message would drown the line. */
const reasonOf = (error: unknown): string =>
  error instanceof CohortError
    ? (ErrorCode[error.code] ?? String(error.code))
    : error instanceof Error
      ? error.message
      : String(error);

const nodeList = (ids: readonly number[]): string =>
  ids.length <= 1 ? ids.join('') : `${ids.slice(0, -1).join(', ')} and ${ids[ids.length - 1]}`;

/** Tells the cluster's changes as the demo's group and producer meet them; `start`, then `stop`. */
export class ClusterNarrator {
  /** Its own client, made by `start`: the demo's calls and the narrator's never wait on each other. */
  private client: CohortClient | null = null;
  private readonly pollMs: number;
  private readonly stallMs: number;
  private isStopped = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;

  private brokers: Map<number, BrokerDescription> | null = null;
  private leaders: ReadonlyMap<number, number> | null = null;
  /** The group as last seen at its coordinator. */
  private group: Exclude<GroupSample, { error: string }> | null = null;
  /** The group as last seen Stable (the first sample the narrator takes of the group is one). */
  private stableGroup: Exclude<GroupSample, { error: string }> | null = null;
  /** The coordinator that stopped answering, told once per outage. */
  private silentCoordinatorId: number | null = null;

  private acknowledged = -1;
  private lastGrowthMs = 0;
  private stalledSinceMs: number | null = null;

  constructor(private readonly options: ClusterNarratorOptions) {
    this.pollMs = options.pollMs ?? 500;
    this.stallMs = options.stallMs ?? 3_000;
  }

  /** Starts looking (once); the first look only notes where things stand, and names the coordinator. */
  start(): void {
    if (this.client !== null || this.isStopped) return;
    const client = new CohortClient({ bootstrap: this.options.bootstrap, clientId: 'demo-narrator' });
    this.client = client;
    this.loop = this.run(client, client.admin({ requestTimeoutMs: this.options.requestTimeoutMs ?? 2_000 }));
  }

  /** Stops looking and closes its client; resolves once the look in flight, if any, is over. */
  async stop(): Promise<void> {
    this.isStopped = true;
    this.wake?.();
    await this.loop;
    await this.client?.close();
  }

  /** The producer's total of acknowledged records, as it reports it (about once a second). */
  produced(total: number, nowMs: number = Date.now()): void {
    if (total > this.acknowledged) {
      if (this.stalledSinceMs !== null && this.acknowledged >= 0) {
        this.say(
          'producer',
          `acknowledgements resumed after ${((nowMs - this.lastGrowthMs) / 1_000).toFixed(1)}s: ` +
            `${total} records acknowledged`,
        );
      }
      this.acknowledged = total;
      this.lastGrowthMs = nowMs;
      this.stalledSinceMs = null;
    } else if (
      // Not before the first acknowledgement: the producer is still finding the partitions' leaders.
      this.acknowledged > 0 &&
      this.stalledSinceMs === null &&
      nowMs - this.lastGrowthMs >= this.stallMs
    ) {
      this.stalledSinceMs = nowMs;
      this.say(
        'producer',
        `no record acknowledged for ${((nowMs - this.lastGrowthMs) / 1_000).toFixed(1)}s: acks=-1 ` +
          'waits for every in-sync replica, and a dead one holds records up until the controller has ' +
          'moved its partitions',
      );
    }
  }

  /** Tells what changed since the last sample. */
  observe(sample: ClusterSample): void {
    this.observeBrokers(sample.brokers);
    this.observeLeaders(sample.leaders);
    this.observeGroup(sample.group);
  }

  private say(who: string, text: string): void {
    this.options.say(who, text);
  }

  private observeBrokers(brokers: readonly BrokerDescription[] | null): void {
    if (brokers === null || brokers.length === 0) return;
    const now = new Map(brokers.map((b) => [b.nodeId, b]));
    const before = this.brokers;
    this.brokers = now;
    if (before === null) return; // the demo's start has already listed them
    const live = nodeList([...now.keys()].sort((x, y) => x - y));
    for (const id of [...before.keys()].sort((x, y) => x - y)) {
      if (!now.has(id)) {
        this.say('cluster', `node ${id} left the cluster (its session in etcd expired): live nodes ${live}`);
      }
    }
    for (const [id, b] of [...now].sort(([x], [y]) => x - y)) {
      if (!before.has(id)) {
        this.say('cluster', `node ${id} joined the cluster at ${b.host}:${b.port}: live nodes ${live}`);
      }
    }
  }

  private observeLeaders(leaders: ReadonlyMap<number, number> | null): void {
    if (leaders === null || leaders.size === 0) return;
    const before = this.leaders;
    this.leaders = leaders;
    if (before === null) return;
    const moved = [...leaders]
      .filter(([partition, leader]) => leader >= 0 && (before.get(partition) ?? leader) !== leader)
      .sort(([x], [y]) => x - y)
      .map(([partition, leader]) => `${this.options.topic}-${partition} on node ${leader}`);
    if (moved.length > 0) this.say('cluster', `new leaders: ${moved.join(', ')}`);
  }

  private observeGroup(sample: GroupSample): void {
    const groupId = this.options.groupId;
    if ('error' in sample) {
      const silent = this.group?.coordinatorId;
      if (silent !== undefined && this.silentCoordinatorId !== silent) {
        this.silentCoordinatorId = silent;
        this.say(
          'group',
          `${groupId}'s coordinator, node ${silent}, does not answer (${sample.error}): the members keep ` +
            `their partitions for their ${this.options.sessionTimeoutMs / 1_000}s session, the time the ` +
            'cluster has to elect the next coordinator',
        );
      }
      return;
    }
    const before = this.group;
    // Named once the group has formed: a move is told against a generation its members hold, never
    // against a look taken in the middle of its first rebalance.
    if (before === null && sample.state !== 'Stable') return;
    this.group = sample;
    const stableBefore = this.stableGroup;
    if (sample.state === 'Stable') this.stableGroup = sample;
    if (before === null || stableBefore === null) {
      this.say('group', `${groupId} is coordinated by node ${sample.coordinatorId}`);
      return;
    }
    if (before.coordinatorId !== sample.coordinatorId) {
      this.silentCoordinatorId = null;
      // What the members held before the move: the last generation seen Stable.
      const held = stableBefore;
      const isSameMembers =
        held.memberIds.length === sample.memberIds.length &&
        held.memberIds.every((id) => sample.memberIds.includes(id));
      const kept =
        sample.generationId === held.generationId && isSameMembers
          ? `generation ${sample.generationId} and the same ${sample.memberIds.length} members as before`
          : `generation ${sample.generationId} (was ${held.generationId}), ${sample.memberIds.length} ` +
            `members (were ${held.memberIds.length})`;
      this.say('group', `${groupId} moved to node ${sample.coordinatorId}: ${sample.state}, ${kept}`);
    } else if (this.silentCoordinatorId !== null) {
      // The same node answers again (it was slow, not dead).
      this.silentCoordinatorId = null;
      this.say('group', `${groupId}'s coordinator, node ${sample.coordinatorId}, answers again`);
    }
  }

  private async run(client: CohortClient, admin: CohortAdmin): Promise<void> {
    while (!this.isStopped) {
      const sample = await this.look(client, admin);
      if (this.isStopped) break;
      this.observe(sample);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  private async look(client: CohortClient, admin: CohortAdmin): Promise<ClusterSample> {
    const { topic } = this.options;
    const [metadata, group] = await Promise.all([
      admin.metadata([topic]).catch(() => null),
      this.lookAtGroup(client, admin),
    ]);
    const partitions = metadata?.topics.find((t) => t.name === topic)?.partitions;
    return {
      brokers: metadata?.brokers ?? null,
      leaders: partitions === undefined ? null : new Map(partitions.map((p) => [p.partition, p.leaderId])),
      group,
    };
  }

  private async lookAtGroup(client: CohortClient, admin: CohortAdmin): Promise<GroupSample> {
    const { groupId } = this.options;
    try {
      const [described] = await admin.describeGroups([groupId]);
      if (described.error !== null) return { error: reasonOf(described.error) };
      // Cached by the DescribeGroups just answered: the node that answered it.
      const coordinator = await client.findCoordinator(groupId, 1_000);
      return {
        coordinatorId: coordinator?.nodeId ?? -1,
        state: described.state,
        generationId: described.generationId,
        memberIds: described.members.map((m) => m.memberId),
      };
    } catch (error) {
      return { error: reasonOf(error) };
    }
  }
}
