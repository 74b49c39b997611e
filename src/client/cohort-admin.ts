/**
 * The operator's view of a cohort server: topics (create, list, describe, offsets) and groups (list,
 * describe with lag, delete), as Kafka's AdminClient and kafka-consumer-groups offer them. The `cohort` CLI
 * is built on it.
 *
 * Outcomes that concern one item (a topic that already exists, a group that is not empty) are values: each
 * result carries `error: CohortError | null`. A call rejects only when no usable answer came back within
 * `requestTimeoutMs` — the server unreachable, or still loading its group state — after retrying retriable
 * failures with jittered backoff.
 */
import { CohortError, ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type * as b from './broker-messages';
import type { BrokerTransport } from './broker-transport';
import { CONSUMER_PROTOCOL_TYPE, decodeAssignment } from './consumer-protocol';
import type * as m from '../protocol/group-messages';
import { groupPartitionFor } from '../protocol/group-placement';
import { lagPartitions, partitionLags, type PartitionLag } from '../protocol/partition-lag';
import { errorFromCode } from './error-from-code';
import { ExponentialBackoff } from './exponential-backoff';
import type { GroupAdminTransport } from './group-admin-transport';
import type { GroupDescription } from './group-description';
import { GroupWatch, type WatchGroupsOptions } from './group-watch';
import { RetryingCaller } from './retrying-caller';
import { TimeScheduler } from './time-scheduler';
import { compareTopicPartitions, topicPartitionKey, type TopicPartition } from './topic-partition';

/** Settings of a `CohortAdmin`. Durations in milliseconds. */
export interface CohortAdminOptions {
  /** How long each operation may take, retries included. Default 30,000. */
  readonly requestTimeoutMs?: number;
  /** First wait before retrying a retriable failure; it doubles per attempt. Default 100. */
  readonly retryBackoffMs?: number;
  /** Longest wait between retries. Default 1,000. */
  readonly retryBackoffMaxMs?: number;
}

/** What a `CohortAdmin` runs on. */
export interface CohortAdminDependencies {
  readonly groupTransport: GroupAdminTransport;
  readonly brokerTransport: BrokerTransport;
  /** Default: the system clock. */
  readonly time?: Time;
  /** Source of jitter for backoffs, numbers in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

/** A topic to create. */
export interface NewTopic {
  readonly name: string;
  /** Default: the server's (1). */
  readonly numPartitions?: number;
  /** Default: the server's (1). */
  readonly replicationFactor?: number;
}

/** The outcome for one topic of `createTopics`. */
export interface TopicCreation {
  readonly name: string;
  /** Null when created; TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, ... otherwise (the server's reason in the message). */
  readonly error: CohortError | null;
}

/** One partition of a described topic. */
export interface PartitionDescription {
  readonly partition: number;
  /** The node id of the leader. */
  readonly leaderId: number;
  readonly replicas: readonly number[];
  /** The in-sync replicas. */
  readonly isr: readonly number[];
  readonly error: CohortError | null;
}

/** A described topic; `error` is UNKNOWN_TOPIC_OR_PARTITION for a name that is no topic. */
export interface TopicDescription {
  readonly name: string;
  readonly partitions: readonly PartitionDescription[];
  readonly error: CohortError | null;
}

/** A cohort process, as Metadata lists it. */
export interface BrokerDescription {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/** What Metadata answers: the brokers and the topics. */
export interface ClusterDescription {
  readonly brokers: readonly BrokerDescription[];
  readonly topics: readonly TopicDescription[];
}

/** The internal topic whose partition leaders coordinate the groups (Kafka's name). */
export const GROUP_METADATA_TOPIC = '__consumer_offsets';

/** One `__consumer_offsets` partition: its leader (the coordinator of its groups) and how many groups it holds. */
export interface OffsetsPartitionDescription {
  readonly partition: number;
  /** The node id of the leader; -1 when it has none. */
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  /** The groups of the cluster that belong to this partition (`abs(hashCode(groupId)) % partitions`). */
  readonly groups: number;
  readonly error: CohortError | null;
}

/** Where everything is: `CohortAdmin.describeCluster`. */
export interface ClusterLayout {
  readonly nodes: readonly BrokerDescription[];
  /** The controller's node id, as Metadata names it; null while none is elected (or a single node). */
  readonly controllerId: number | null;
  /** The partitions of `__consumer_offsets`; null when the cluster has no such topic (yet). */
  readonly offsetsPartitions: readonly OffsetsPartitionDescription[] | null;
  /** How many groups the cluster lists (ListGroups on every node that answered). */
  readonly groups: number;
  /**
   * The nodes Metadata lists that did not answer their ListGroups within `NODE_ANSWER_TIMEOUT_MS`: killed
   * or stopped, and listed until their session expires. Their groups are not counted in `groups`.
   */
  readonly unansweredNodes: readonly { readonly nodeId: number | null; readonly address: string }[];
}

/**
 * How long `describeCluster` gives each node to answer its ListGroups: well under a node session (10 s by
 * default), the time a killed node stays in Metadata, so that it is reported rather than waited for.
 */
export const NODE_ANSWER_TIMEOUT_MS = 2_000;

/**
 * Which offset `listOffsets` looks up: `earliest` (the log start), `latest` (the high watermark: the offset
 * the next record a consumer can read will get), or the first record at or after `timestampMs`.
 */
export type OffsetSpec = 'earliest' | 'latest' | { readonly timestampMs: number };

/** One partition's offset from `listOffsets`. */
export interface ListedOffset {
  readonly topic: string;
  readonly partition: number;
  /** Null when a timestamp matched no record, or on error. */
  readonly offset: bigint | null;
  /** The matched record's timestamp for a timestamp spec; null otherwise. */
  readonly timestampMs: number | null;
  readonly error: CohortError | null;
}

/** A group in `listGroups`. */
export interface GroupListing {
  readonly groupId: string;
  /** `consumer` for groups of consumers; empty for a group that has only committed offsets. */
  readonly protocolType: string;
  /** Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead. */
  readonly state: string;
}

export type { GroupDescription, GroupMemberDescription } from './group-description';

/** The outcome for one group of `deleteGroups` (NON_EMPTY_GROUP while it has members). */
export interface GroupDeletion {
  readonly groupId: string;
  readonly error: CohortError | null;
}

/** A committed offset read by `fetchCommittedOffsets`. */
export interface GroupCommittedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly metadata: string;
}

export type { PartitionLag } from '../protocol/partition-lag';

/** A consumer group with its members and, per partition, committed offset, high watermark and lag. */
export interface ConsumerGroupDescription extends GroupDescription {
  /** Partitions assigned to a member or with a committed offset, by topic then partition. */
  readonly partitions: readonly PartitionLag[];
}

/** The defaults of `CohortAdminOptions`. */
export const COHORT_ADMIN_DEFAULTS = Object.freeze({
  requestTimeoutMs: 30_000,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1_000,
});

const LATEST_TIMESTAMP = -1;
const EARLIEST_TIMESTAMP = -2;
const DEFAULT_TOPIC_SETTING = -1;

/** Group-level codes that mean "ask again shortly": the coordinator is starting or loading. */
const COORDINATOR_BUSY = new Set([
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.NOT_COORDINATOR,
]);

/**
 * Administration of a cohort server. Get one from `client.admin()`; it shares the client's channel and
 * needs no closing of its own.
 *
 * ```ts
 * const admin = client.admin();
 * await admin.createTopics([{ name: 'orders', numPartitions: 6 }]);
 * const group = await admin.describeConsumerGroup('billing');
 * for (const p of group.partitions) console.log(p.topic, p.partition, p.lag);
 * ```
 */
export class CohortAdmin {
  private readonly groups: GroupAdminTransport;
  private readonly broker: BrokerTransport;
  private readonly caller: RetryingCaller;
  private readonly timeoutMs: number;

  constructor(options: CohortAdminOptions, dependencies: CohortAdminDependencies) {
    const d = COHORT_ADMIN_DEFAULTS;
    this.timeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs ?? d.requestTimeoutMs);
    const time = dependencies.time ?? SYSTEM_TIME;
    this.groups = dependencies.groupTransport;
    this.broker = dependencies.brokerTransport;
    this.caller = new RetryingCaller(
      time,
      new TimeScheduler(time),
      new ExponentialBackoff({
        initialMs: options.retryBackoffMs ?? d.retryBackoffMs,
        maxMs: options.retryBackoffMaxMs ?? d.retryBackoffMaxMs,
        ...(dependencies.random ? { random: dependencies.random } : {}),
      }),
    );
  }

  /** Creates topics; each result says whether its topic was created. */
  async createTopics(topics: readonly NewTopic[]): Promise<TopicCreation[]> {
    const request: b.CreateTopicsRequest = {
      topics: topics.map((t) => ({
        name: t.name,
        numPartitions: t.numPartitions ?? DEFAULT_TOPIC_SETTING,
        replicationFactor: t.replicationFactor ?? DEFAULT_TOPIC_SETTING,
      })),
    };
    const what = 'CreateTopics';
    const response = await this.caller.retry(
      what,
      (o) => this.broker.createTopics(request, o),
      this.timeoutMs,
    );
    return response.topics.map((t) => ({
      name: t.name,
      error:
        t.errorCode === ErrorCode.NONE
          ? null
          : topicError(t.errorCode, `${what} "${t.name}"`, t.errorMessage),
    }));
  }

  /** The brokers and the given topics (every topic when `topics` is omitted or empty). */
  async metadata(topics: readonly string[] = []): Promise<ClusterDescription> {
    const response = await this.caller.retry(
      'Metadata',
      (o) => this.broker.metadata({ topics: [...topics] }, o),
      this.timeoutMs,
    );
    return {
      brokers: response.brokers.map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port })),
      topics: response.topics
        .map(describedTopic)
        .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)),
    };
  }

  /**
   * The cluster's nodes, and each `__consumer_offsets` partition with its leader, epoch, ISR and how many
   * of the cluster's groups (ListGroups on every node) it holds.
   */
  async describeCluster(): Promise<ClusterLayout> {
    const [response, { groups, unansweredNodes }] = await Promise.all([
      this.caller.retry(
        'Metadata',
        (o) => this.broker.metadata({ topics: [GROUP_METADATA_TOPIC] }, o),
        this.timeoutMs,
      ),
      this.groupsOfEachNode(),
    ]);
    const nodes = response.brokers
      .map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port }))
      .sort((x, y) => x.nodeId - y.nodeId);
    const topic = response.topics.find((t) => t.name === GROUP_METADATA_TOPIC);
    if (topic === undefined || topic.errorCode !== ErrorCode.NONE || topic.partitions.length === 0) {
      return {
        nodes,
        controllerId: controllerOf(response),
        offsetsPartitions: null,
        groups: groups.length,
        unansweredNodes,
      };
    }
    const counts = new Map<number, number>();
    for (const groupId of groups) {
      const partition = groupPartitionFor(groupId, topic.partitions.length);
      counts.set(partition, (counts.get(partition) ?? 0) + 1);
    }
    const offsetsPartitions = topic.partitions
      .map((p) => ({
        partition: p.partitionIndex,
        leaderId: p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        groups: counts.get(p.partitionIndex) ?? 0,
        error:
          p.errorCode === ErrorCode.NONE
            ? null
            : errorFromCode(p.errorCode, `${GROUP_METADATA_TOPIC}-${p.partitionIndex}`),
      }))
      .sort((x, y) => x.partition - y.partition);
    return {
      nodes,
      controllerId: controllerOf(response),
      offsetsPartitions,
      groups: groups.length,
      unansweredNodes,
    };
  }

  /**
   * Every group id of the cluster, from each node that answers, and the nodes that did not. A node that
   * answers with a code (COORDINATOR_LOAD_IN_PROGRESS while a partition loads) is asked again; one that
   * does not answer within `NODE_ANSWER_TIMEOUT_MS` is asked once and reported.
   */
  private async groupsOfEachNode(): Promise<{
    groups: string[];
    unansweredNodes: ClusterLayout['unansweredNodes'];
  }> {
    const transport = this.groups;
    if (transport.listGroupsOnEachNode === undefined) {
      return { groups: (await this.listGroups()).map((g) => g.groupId), unansweredNodes: [] };
    }
    const request: m.ListGroupsRequest = { statesFilter: [] };
    const listings = await this.caller.retry(
      'ListGroups',
      (o) => transport.listGroupsOnEachNode!(request, o, NODE_ANSWER_TIMEOUT_MS),
      this.timeoutMs,
      (all) => {
        for (const l of all)
          if ('response' in l && l.response.errorCode !== ErrorCode.NONE) return l.response.errorCode;
        return ErrorCode.NONE;
      },
    );
    const groups = new Set<string>();
    const unansweredNodes: { nodeId: number | null; address: string }[] = [];
    let noAnswer: CohortError | undefined;
    for (const listing of listings) {
      if ('response' in listing) {
        for (const g of listing.response.groups) groups.add(g.groupId);
      } else if (isNoAnswer(listing.error)) {
        unansweredNodes.push({ nodeId: listing.nodeId, address: listing.address });
        noAnswer ??= listing.error;
      } else {
        throw listing.error;
      }
    }
    // No node answered: the cluster is not there to describe.
    if (noAnswer !== undefined && unansweredNodes.length === listings.length) throw noAnswer;
    return { groups: [...groups], unansweredNodes };
  }

  /** The names of every topic, sorted. */
  async listTopics(): Promise<string[]> {
    return (await this.metadata()).topics.map((t) => t.name);
  }

  /** The given topics (every topic when omitted), with their partitions' leaders, replicas and ISR. */
  async describeTopics(topics: readonly string[] = []): Promise<TopicDescription[]> {
    return [...(await this.metadata(topics)).topics];
  }

  /** The offset `spec` names for each partition, in the order asked. */
  async listOffsets(partitions: readonly TopicPartition[], spec: OffsetSpec): Promise<ListedOffset[]> {
    if (partitions.length === 0) return [];
    const timestamp =
      spec === 'latest' ? LATEST_TIMESTAMP : spec === 'earliest' ? EARLIEST_TIMESTAMP : spec.timestampMs;
    if (!Number.isSafeInteger(timestamp) || (timestamp < 0 && typeof spec === 'object')) {
      throw new RangeError(`timestampMs must be a non-negative whole number, got ${timestamp}`);
    }
    const byTopic = new Map<string, b.ListOffsetsPartition[]>();
    for (const tp of partitions) {
      let list = byTopic.get(tp.topic);
      if (list === undefined) byTopic.set(tp.topic, (list = []));
      list.push({ partitionIndex: tp.partition, timestamp });
    }
    const request: b.ListOffsetsRequest = {
      topics: [...byTopic].map(([name, list]) => ({ name, partitions: list })),
    };
    const response = await this.caller.retry(
      'ListOffsets',
      (o) => this.broker.listOffsets(request, o),
      this.timeoutMs,
    );
    const found = new Map<string, b.ListOffsetsPartitionResponse>();
    for (const t of response.topics) {
      for (const p of t.partitions)
        found.set(topicPartitionKey({ topic: t.name, partition: p.partitionIndex }), p);
    }
    return partitions.map((tp) => {
      const p = found.get(topicPartitionKey(tp));
      const what = `ListOffsets of ${tp.topic}-${tp.partition}`;
      if (p === undefined) {
        return {
          ...tp,
          offset: null,
          timestampMs: null,
          error: errorFromCode(ErrorCode.UNKNOWN_SERVER_ERROR, `${what}: no answer for the partition`),
        };
      }
      if (p.errorCode !== ErrorCode.NONE) {
        return { ...tp, offset: null, timestampMs: null, error: errorFromCode(p.errorCode, what) };
      }
      return {
        topic: tp.topic,
        partition: tp.partition,
        offset: p.offset < 0n ? null : p.offset,
        timestampMs: typeof spec === 'object' && p.timestamp >= 0 ? p.timestamp : null,
        error: null,
      };
    });
  }

  /** Every group, optionally only those in `states` (Kafka's state names, case-insensitive). */
  async listGroups(options: { states?: readonly string[] } = {}): Promise<GroupListing[]> {
    const request: m.ListGroupsRequest = { statesFilter: [...(options.states ?? [])] };
    const response = await this.caller.retry(
      'ListGroups',
      (o) => this.groups.listGroups(request, o),
      this.timeoutMs,
      (r) => r.errorCode,
    );
    return response.groups
      .map((g) => ({ groupId: g.groupId, protocolType: g.protocolType, state: g.groupState }))
      .sort((x, y) => (x.groupId < y.groupId ? -1 : x.groupId > y.groupId ? 1 : 0));
  }

  /** The groups' states, protocols and members, in the order asked. */
  async describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]> {
    if (groupIds.length === 0) return [];
    const request: m.DescribeGroupsRequest = { groups: [...groupIds] };
    const response = await this.caller.retry(
      'DescribeGroups',
      (o) => this.groups.describeGroups(request, o),
      this.timeoutMs,
      (r) => r.groups.find((g) => COORDINATOR_BUSY.has(g.errorCode))?.errorCode ?? ErrorCode.NONE,
    );
    return response.groups.map(describedGroup);
  }

  /**
   * Watches groups (every group when `groupIds` is omitted or empty): first a snapshot of each (`isSnapshot`;
   * an id that names no group comes with GROUP_ID_NOT_FOUND and state Dead), then one event per change —
   * a member joins, leaves or expires, a rebalance starts or completes, the group is deleted — as it
   * happens. A loop slower than the changes gets each group's latest state (the server coalesces what it
   * could not send); one that falls behind every bound is ended by the server (a `CohortError`).
   *
   * `break` (or `return`) ends the watch, as does aborting `options.signal`: the iteration then just
   * finishes. A named group whose coordinator moves (NOT_COORDINATOR, cluster mode) is followed: the event
   * that says so is passed on, and after a backoff the group is watched at its new coordinator, from a new
   * snapshot (docs/sdk.md, "Watching groups"). The iteration throws a `CohortError` when the watch ends
   * otherwise: the server unreachable or shutting down (COORDINATOR_NOT_AVAILABLE), a refusal, or a watch
   * ended for lagging. Those are not retried: watch again.
   *
   * ```ts
   * for await (const event of admin.watchGroups(['billing'])) {
   *   console.log(event.reason, event.group.state, event.group.generationId, event.group.members.length);
   * }
   * ```
   */
  watchGroups(groupIds: readonly string[] = [], options: WatchGroupsOptions = {}): GroupWatch {
    const transport = this.groups;
    if (transport.watchGroups === undefined) {
      throw new TypeError('watchGroups() needs a transport with WatchGroups');
    }
    return new GroupWatch(
      { watchGroups: transport.watchGroups.bind(transport) },
      { groupIds: [...groupIds] },
      describedGroup,
      options.signal,
    );
  }

  /** Deletes groups that have no members (and their committed offsets). */
  async deleteGroups(groupIds: readonly string[]): Promise<GroupDeletion[]> {
    if (groupIds.length === 0) return [];
    const request: m.DeleteGroupsRequest = { groupsNames: [...groupIds] };
    const response = await this.caller.retry(
      'DeleteGroups',
      (o) => this.groups.deleteGroups(request, o),
      this.timeoutMs,
      (r) => r.results.find((g) => COORDINATOR_BUSY.has(g.errorCode))?.errorCode ?? ErrorCode.NONE,
    );
    return response.results.map((r) => ({
      groupId: r.groupId,
      error:
        r.errorCode === ErrorCode.NONE ? null : errorFromCode(r.errorCode, `DeleteGroups "${r.groupId}"`),
    }));
  }

  /**
   * A group's committed offsets, read without joining it (every partition it committed when `partitions` is
   * omitted), sorted by topic and partition. Partitions without a commit are left out.
   */
  async fetchCommittedOffsets(
    groupId: string,
    partitions?: readonly TopicPartition[],
  ): Promise<GroupCommittedOffset[]> {
    const byTopic = new Map<string, number[]>();
    for (const tp of partitions ?? []) {
      let list = byTopic.get(tp.topic);
      if (list === undefined) byTopic.set(tp.topic, (list = []));
      list.push(tp.partition);
    }
    const request: m.OffsetFetchRequest = {
      groupId,
      topics: [...byTopic].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
      // An operator's look: report what is committed now, even with a commit of a rebalance in flight.
      requireStable: false,
    };
    const response = await this.caller.retry(
      `OffsetFetch for group "${groupId}"`,
      (o) => this.groups.offsetFetch(request, o),
      this.timeoutMs,
      (r) => {
        if (r.errorCode !== ErrorCode.NONE) return r.errorCode;
        for (const t of r.topics)
          for (const p of t.partitions) if (p.errorCode !== ErrorCode.NONE) return p.errorCode;
        return ErrorCode.NONE;
      },
    );
    const out: GroupCommittedOffset[] = [];
    for (const t of response.topics) {
      for (const p of t.partitions) {
        if (p.committedOffset < 0) continue;
        out.push({
          topic: t.name,
          partition: p.partitionIndex,
          offset: BigInt(p.committedOffset),
          metadata: p.metadata,
        });
      }
    }
    return out.sort(compareTopicPartitions);
  }

  /**
   * A consumer group as `kafka-consumer-groups --describe` shows it: state, protocol, members, and for each
   * partition that is assigned or has a commit, the committed offset, the high watermark and the lag
   * between them. A group the coordinator does not hold comes back with GROUP_ID_NOT_FOUND in `error`.
   */
  async describeConsumerGroup(groupId: string): Promise<ConsumerGroupDescription> {
    const [group] = await this.describeGroups([groupId]);
    if (group.error !== null) return { ...group, partitions: [] };
    const committed = await this.fetchCommittedOffsets(groupId);
    const partitions = lagPartitions(group.members, committed);
    const latest = await this.listOffsets(partitions, 'latest');
    const rows = partitionLags(
      partitions,
      group.members,
      committed,
      latest.map((o) => o.offset),
    );
    return { ...group, partitions: rows };
  }
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a whole number of milliseconds of at least 1, got ${value}`);
  }
  return value;
}

/** A topic-level error; the broker's own text (which names the limit that was hit) rides as the cause. */
function topicError(code: ErrorCode, what: string, message: string): CohortError {
  return errorFromCode(code, what, message === '' ? undefined : new Error(message));
}

function describedTopic(t: b.TopicMetadata): TopicDescription {
  return {
    name: t.name,
    error:
      t.errorCode === ErrorCode.NONE
        ? null
        : topicError(t.errorCode, `Metadata of "${t.name}"`, t.errorMessage),
    partitions: t.partitions
      .map((p) => ({
        partition: p.partitionIndex,
        leaderId: p.leaderId,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        error:
          p.errorCode === ErrorCode.NONE
            ? null
            : errorFromCode(p.errorCode, `Metadata of ${t.name}-${p.partitionIndex}`),
      }))
      .sort((x, y) => x.partition - y.partition),
  };
}

function describedGroup(g: m.DescribedGroup): GroupDescription {
  const isConsumer = g.protocolType === CONSUMER_PROTOCOL_TYPE;
  return {
    groupId: g.groupId,
    state: g.groupState,
    generationId: g.generationId,
    protocolType: g.protocolType,
    protocol: g.protocolData,
    error:
      g.errorCode === ErrorCode.NONE ? null : errorFromCode(g.errorCode, `DescribeGroups "${g.groupId}"`),
    members: g.members.map((member) => ({
      memberId: member.memberId,
      groupInstanceId: member.groupInstanceId === '' ? null : member.groupInstanceId,
      clientId: member.clientId,
      clientHost: member.clientHost,
      assignment: isConsumer ? decodedOrNull(member.memberAssignment) : null,
      assignmentBytes: member.memberAssignment,
    })),
  };
}

function decodedOrNull(bytes: Buffer): TopicPartition[] | null {
  try {
    return decodeAssignment(bytes).partitions;
  } catch {
    return null;
  }
}

/** A call that got no answer: the node unreachable (COORDINATOR_NOT_AVAILABLE) or silent past its deadline. */
function isNoAnswer(error: CohortError): boolean {
  return error.code === ErrorCode.COORDINATOR_NOT_AVAILABLE || error.code === ErrorCode.REQUEST_TIMED_OUT;
}

/** The controller a Metadata answer names, or null while it names none. */
function controllerOf(response: { readonly controllerId: number }): number | null {
  return response.controllerId >= 0 ? response.controllerId : null;
}
