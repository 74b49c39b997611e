import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../../src/errors';
import {
  clusterBrokerClient,
  describeCallError,
  seenRecords,
  fetchOne,
  produceOne,
  type ClusterBrokerClient,
} from './cluster-broker-client';
import type { LogHistory, PartitionRef } from './log-history';

/**
 * Clients of a cohort cluster that follow leadership as Kafka's do, and record everything they send and
 * see into a LogHistory: a LeaderFinder (Metadata to every node, the answer with the highest leader
 * epoch wins), a producer and a consumer. On NOT_LEADER_OR_FOLLOWER, a fenced or unknown epoch, or a
 * failed call, they forget the leader and find it again. Nothing here waits without a deadline.
 */

/** The clock of every history and client here: monotonic, in ms. */
export const monotonicMs = (): number => performance.now();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Where a client finds the nodes: their ids and broker addresses (a restarted node keeps its address). */
export type NodeTargets = () => ReadonlyMap<number, string>;

/** One channel per node for one client, made when first used. */
class NodeChannels {
  private readonly clients = new Map<number, ClusterBrokerClient>();

  constructor(private readonly targets: NodeTargets) {}

  ids(): number[] {
    return [...this.targets().keys()];
  }

  get(nodeId: number): ClusterBrokerClient {
    const target = this.targets().get(nodeId);
    if (target === undefined) throw new Error(`no node ${nodeId} in the cluster`);
    let client = this.clients.get(nodeId);
    if (client === undefined || client.target !== target) {
      client?.close();
      client = clusterBrokerClient(target);
      this.clients.set(nodeId, client);
    }
    return client;
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

export interface LeaderInfo {
  readonly nodeId: number;
  /** Undefined when the cluster's Metadata carries no leader epoch. */
  readonly leaderEpoch: number | undefined;
}

/** How long one Metadata call may take, and how long to wait for more answers once one names a leader. */
const METADATA_DEADLINE_MS = 800;
const METADATA_GRACE_MS = 150;

/**
 * Asks every node for the partition's metadata, records each answer as an observation, and resolves with
 * the leader named at the highest leader epoch: once every node answered or failed, or soon after the
 * first answer naming a leader (a SIGSTOPped node must not slow every lookup to the call deadline).
 */
export class LeaderFinder {
  constructor(
    private readonly channels: NodeChannels,
    private readonly history: LogHistory | undefined,
    private readonly partition: PartitionRef,
  ) {}

  find(): Promise<LeaderInfo | undefined> {
    const ids = this.channels.ids();
    return new Promise((resolve) => {
      let best: LeaderInfo | undefined;
      let settled = 0;
      let isDone = false;
      let grace: NodeJS.Timeout | undefined;
      const finish = (): void => {
        if (isDone) return;
        isDone = true;
        clearTimeout(grace);
        resolve(best);
      };
      for (const nodeId of ids) {
        const observe = this.history?.invokeMetadata(nodeId);
        this.channels
          .get(nodeId)
          .metadata({ topics: [this.partition.topic] }, METADATA_DEADLINE_MS)
          .then((answer) => {
            const topic = answer.topics.find((t) => t.name === this.partition.topic);
            const p = topic?.partitions.find((q) => q.partitionIndex === this.partition.partition);
            if (topic?.errorCode !== ErrorCode.NONE || p === undefined || p.errorCode !== ErrorCode.NONE)
              return;
            if (p.leaderEpoch !== undefined) {
              observe?.({
                ...this.partition,
                leader: p.leaderId,
                leaderEpoch: p.leaderEpoch,
                isr: p.isrNodes,
              });
            }
            if (p.leaderId < 0) return;
            if (best === undefined || (p.leaderEpoch ?? -1) > (best.leaderEpoch ?? -1)) {
              best = { nodeId: p.leaderId, leaderEpoch: p.leaderEpoch };
            }
            grace ??= setTimeout(finish, METADATA_GRACE_MS);
          })
          .catch(() => undefined)
          .finally(() => {
            if (++settled === ids.length) finish();
          });
      }
      if (ids.length === 0) finish();
    });
  }
}

/** Produce answers that certainly appended nothing (refused before the append). Any other is unknown. */
const DEFINITE_PRODUCE_FAILURES: ReadonlySet<number> = new Set([
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.NOT_ENOUGH_REPLICAS,
]);

/** Fetch answers after which the consumer looks for the leader again. */
const LEADERSHIP_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  74, // FENCED_LEADER_EPOCH
  75, // UNKNOWN_LEADER_EPOCH
]);

const errorName = (code: number): string => ErrorCode[code] ?? `error ${code}`;

/** One completed client operation, for a test to wait on ("the first ack from another node"). */
export interface ClientOutcome {
  readonly atMs: number;
  readonly nodeId: number;
  readonly kind: 'ok' | 'fail' | 'info';
  readonly reason: string;
  readonly offset?: number;
}

export interface ClusterClientOptions {
  /** Names the client in the history and in its values ("producer-1" writes "producer-1-0", ...). */
  readonly name: string;
  readonly partition: PartitionRef;
  readonly nodeTargets: NodeTargets;
  readonly history?: LogHistory;
  /** Each call's gRPC deadline (default 3,000 ms). */
  readonly callDeadlineMs?: number;
  /** Pause after a failed call before the next (default 50 ms). */
  readonly backoffMs?: number;
}

abstract class ClusterClient {
  readonly outcomes: ClientOutcome[] = [];
  protected readonly channels: NodeChannels;
  protected readonly finder: LeaderFinder;
  protected leader: LeaderInfo | undefined;
  protected readonly callDeadlineMs: number;
  protected readonly backoffMs: number;
  private isStopped = false;
  private loop: Promise<void> | undefined;

  constructor(protected readonly options: ClusterClientOptions) {
    this.channels = new NodeChannels(options.nodeTargets);
    this.finder = new LeaderFinder(this.channels, options.history, options.partition);
    this.callDeadlineMs = options.callDeadlineMs ?? 3_000;
    this.backoffMs = options.backoffMs ?? 50;
  }

  start(): this {
    this.loop ??= this.run();
    return this;
  }

  /** Ends the loop after the call in flight (bounded by its deadline) and closes the channels. */
  async stop(): Promise<void> {
    this.isStopped = true;
    await this.loop;
    this.channels.close();
  }

  /** Outcomes at or after `sinceMs` matching `predicate`. */
  outcomesSince(sinceMs: number, predicate: (o: ClientOutcome) => boolean = () => true): ClientOutcome[] {
    return this.outcomes.filter((o) => o.atMs >= sinceMs && predicate(o));
  }

  protected abstract step(leader: LeaderInfo): Promise<void>;

  protected record(outcome: Omit<ClientOutcome, 'atMs'>): void {
    this.outcomes.push({ ...outcome, atMs: monotonicMs() });
    if (outcome.kind !== 'ok') this.leader = undefined;
  }

  private async run(): Promise<void> {
    while (!this.isStopped) {
      this.leader ??= await this.finder.find();
      if (this.leader === undefined) {
        await sleep(this.backoffMs);
        continue;
      }
      await this.step(this.leader);
      const last = this.outcomes[this.outcomes.length - 1];
      if (last !== undefined && last.kind !== 'ok' && !this.isStopped) await sleep(this.backoffMs);
    }
  }
}

export interface ClusterProducerOptions extends ClusterClientOptions {
  /** 1 or -1 (default -1: all in-sync replicas). */
  readonly acks?: number;
  /** The Produce's timeout_ms, how long the leader waits for the ISR (default 2,000 ms). */
  readonly produceTimeoutMs?: number;
  /** Times a value is sent again after an unknown outcome, as a producer without idempotence does (default 2). */
  readonly resendsOfUnknown?: number;
}

/**
 * Produces one record per request, each value unique ("<name>-<n>") except when it is sent again after
 * an unknown outcome. Each request is an operation in the history: ok with its offset; fail for answers
 * that refuse before appending; info for a failed call and every other error (NOT_LEADER_OR_FOLLOWER
 * may answer a produce the deposed leader had appended).
 */
export class ClusterProducer extends ClusterClient {
  private sequence = 0;
  private resend: { value: string; times: number } | undefined;

  constructor(private readonly producerOptions: ClusterProducerOptions) {
    super(producerOptions);
  }

  /** Acknowledged writes so far. */
  get ackCount(): number {
    return this.outcomes.filter((o) => o.kind === 'ok').length;
  }

  protected async step(leader: LeaderInfo): Promise<void> {
    const { topic, partition } = this.options.partition;
    const value = this.resend?.value ?? `${this.options.name}-${this.sequence++}`;
    const pending = this.options.history?.invokeProduce(
      this.options.name,
      { topic, partition, nodeId: leader.nodeId },
      value,
    );
    const acks = this.producerOptions.acks ?? -1;
    const request = produceOne(topic, partition, value, acks, this.producerOptions.produceTimeoutMs ?? 2_000);
    let code: number;
    let offset = -1;
    try {
      const answer = await this.channels.get(leader.nodeId).produce(request, this.callDeadlineMs);
      const p = answer.topics[0]?.partitions[0];
      code = p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      offset = p?.baseOffset ?? -1;
    } catch (error) {
      const reason = describeCallError(error);
      pending?.info(reason);
      this.unknown(value, leader.nodeId, reason);
      return;
    }
    if (code === ErrorCode.NONE) {
      pending?.ok(offset);
      this.resend = undefined;
      this.record({ kind: 'ok', nodeId: leader.nodeId, reason: 'NONE', offset });
    } else if (DEFINITE_PRODUCE_FAILURES.has(code)) {
      pending?.fail(errorName(code));
      this.resend = undefined;
      this.record({ kind: 'fail', nodeId: leader.nodeId, reason: errorName(code) });
    } else {
      pending?.info(errorName(code));
      this.unknown(value, leader.nodeId, errorName(code));
    }
  }

  private unknown(value: string, nodeId: number, reason: string): void {
    const times = this.resend?.value === value ? this.resend.times + 1 : 1;
    this.resend = times <= (this.producerOptions.resendsOfUnknown ?? 2) ? { value, times } : undefined;
    this.record({ kind: 'info', nodeId, reason });
  }
}

/**
 * Reads the partition from offset 0 on from its leader with long polls, sending the leader epoch it
 * learned from Metadata; every answer is a fetch operation in the history with the records it held.
 */
export class ClusterConsumer extends ClusterClient {
  /** The next offset to read. */
  nextOffset = 0;

  protected async step(leader: LeaderInfo): Promise<void> {
    const { topic, partition } = this.options.partition;
    const pending = this.options.history?.invokeFetch(
      this.options.name,
      { topic, partition, nodeId: leader.nodeId },
      this.nextOffset,
    );
    const request = fetchOne(topic, partition, this.nextOffset, {
      maxWaitMs: 250,
      currentLeaderEpoch: leader.leaderEpoch,
    });
    let answer;
    try {
      answer = await this.channels.get(leader.nodeId).fetch(request, this.callDeadlineMs);
    } catch (error) {
      const reason = describeCallError(error);
      pending?.info(reason);
      this.record({ kind: 'info', nodeId: leader.nodeId, reason });
      return;
    }
    const p = answer.responses[0]?.partitions[0];
    const code = answer.errorCode !== ErrorCode.NONE ? answer.errorCode : (p?.errorCode ?? -1);
    if (code !== ErrorCode.NONE || p === undefined) {
      // A refused fetch read nothing: its outcome is known.
      pending?.fail(errorName(code));
      this.record({ kind: 'fail', nodeId: leader.nodeId, reason: errorName(code) });
      if (!LEADERSHIP_ERRORS.has(code)) this.leader = leader; // e.g. OFFSET_OUT_OF_RANGE: retry, same leader
      return;
    }
    const records = seenRecords(p.records);
    pending?.ok(records, p.highWatermark);
    if (records.length > 0) this.nextOffset = records[records.length - 1]!.offset + 1;
    this.record({ kind: 'ok', nodeId: leader.nodeId, reason: 'NONE' });
  }
}

/** A LeaderFinder over its own channels, for one-off lookups by a test (close it after). */
export function leaderFinder(
  nodeTargets: NodeTargets,
  partition: PartitionRef,
  history?: LogHistory,
): { find(): Promise<LeaderInfo | undefined>; close(): void } {
  const channels = new NodeChannels(nodeTargets);
  const finder = new LeaderFinder(channels, history, partition);
  return { find: () => finder.find(), close: () => channels.close() };
}
