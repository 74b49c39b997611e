/**
 * Produce, Fetch and ListOffsets sent to each partition's leader (Kafka's Sender and Fetcher: one request
 * per leader node), from the client's Metadata view (`PartitionLeaders`).
 *
 * One call of the SDK becomes one call per leader node; the answers are merged back into one response, so
 * the producer and the consumer keep their per-partition outcome handling:
 *
 * - a partition whose leader is offline (or not among the brokers listed) is answered LEADER_NOT_AVAILABLE
 *   without a call; a partition of a topic the view does not know goes to the bootstrap node, which says
 *   what it knows (UNKNOWN_TOPIC_OR_PARTITION, say);
 * - a node that cannot be reached answers each of its partitions with the retriable code of the failure,
 *   and its topics are refreshed; only when every node failed does the call reject as before;
 * - leader errors in an answer (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, ...)
 *   mark the topic for a Metadata refresh before the caller's retry.
 *
 * Fetch and ListOffsets carry `currentLeaderEpoch` from the view (KIP-320); Produce has no such field in
 * cohort's proto (nor in Kafka's).
 */
import { CohortError, ErrorCode } from '../errors';
import type * as b from './broker-messages';
import type { BrokerTransport } from './broker-transport';
import type { CallOptions } from './group-transport';
import { isStaleLeaderCode, type PartitionLeaders } from './partition-leaders';
import { asCohortError } from './retrying-caller';

/** What a routed call needs of the cluster transport. */
export interface LeaderRoutingContext {
  readonly leaders: PartitionLeaders;
  /** The connection to `address`. */
  node(address: string): BrokerTransport;
  /** Where partitions the view does not know go: the node that last answered a call to "any node". */
  defaultAddress(): string;
  /** Refreshes the view of `topics` with one Metadata call (errors ignored: the routing then uses what it has). */
  refresh(topics: readonly string[], options: CallOptions): Promise<void>;
}

interface Topic<P> {
  readonly name: string;
  readonly partitions: readonly P[];
}

interface Routed<P> {
  /** Per node address, the request's topics cut down to the partitions that node leads. */
  readonly byAddress: Map<string, Topic<P>[]>;
  /** Partitions answered without a call. */
  readonly unroutable: {
    readonly topic: string;
    readonly partitionIndex: number;
    readonly code: ErrorCode;
  }[];
}

async function route<P extends { partitionIndex: number }>(
  context: LeaderRoutingContext,
  topics: readonly Topic<P>[],
  options: CallOptions,
  withEpoch: (partition: P, leaderEpoch: number) => P = (p) => p,
): Promise<Routed<P>> {
  const { leaders } = context;
  const refresh = leaders.topicsToRefresh(topics.map((t) => t.name));
  if (refresh.length > 0) await context.refresh(refresh, options);
  const byAddress = new Map<string, Topic<P>[]>();
  const unroutable: Routed<P>['unroutable'][number][] = [];
  const add = (address: string, topic: string, partition: P): void => {
    let list = byAddress.get(address);
    if (list === undefined) byAddress.set(address, (list = []));
    let entry = list.find((t) => t.name === topic) as { name: string; partitions: P[] } | undefined;
    if (entry === undefined) list.push((entry = { name: topic, partitions: [] }));
    entry.partitions.push(partition);
  };
  for (const topic of topics) {
    for (const p of topic.partitions) {
      const found = leaders.leaderOf(topic.name, p.partitionIndex);
      if (found.kind === 'unknown') {
        add(context.defaultAddress(), topic.name, p);
      } else if (found.kind === 'no-leader' || found.leader.address === undefined) {
        leaders.markStale(topic.name);
        unroutable.push({
          topic: topic.name,
          partitionIndex: p.partitionIndex,
          code: ErrorCode.LEADER_NOT_AVAILABLE,
        });
      } else {
        add(found.leader.address, topic.name, withEpoch(p, found.leader.leaderEpoch));
      }
    }
  }
  return { byAddress, unroutable };
}

type NodeResult<R> =
  | { readonly address: string; readonly response: R }
  | { readonly address: string; readonly error: CohortError };

/**
 * The answers merged: one partition answer per partition asked, in the order of `answersOf` per node.
 * Rejects when every node failed (the call as a whole failed, as with one node) or one failed with a code
 * that retrying cannot fix.
 */
function mergePartitions<R, A extends { partitionIndex: number; errorCode: ErrorCode }>(
  context: LeaderRoutingContext,
  routed: Routed<unknown>,
  results: readonly NodeResult<R>[],
  answersOf: (response: R) => readonly Topic<A>[],
  failedAnswer: (partitionIndex: number, code: ErrorCode) => A,
): { name: string; partitions: A[] }[] {
  const failures = results.filter((r): r is { address: string; error: CohortError } => 'error' in r);
  if (failures.length > 0 && failures.length === results.length && routed.unroutable.length === 0) {
    for (const f of failures) context.leaders.markNodeStale(f.address);
    throw failures[0].error;
  }
  for (const f of failures) if (!f.error.retriable) throw f.error;
  const out = new Map<string, A[]>();
  const push = (topic: string, answer: A): void => {
    let list = out.get(topic);
    if (list === undefined) out.set(topic, (list = []));
    list.push(answer);
  };
  let isClean = routed.unroutable.length === 0 && failures.length === 0;
  for (const u of routed.unroutable) push(u.topic, failedAnswer(u.partitionIndex, u.code));
  for (const result of results) {
    if ('error' in result) {
      context.leaders.markNodeStale(result.address);
      for (const topic of routed.byAddress.get(result.address) ?? []) {
        for (const p of topic.partitions as readonly { partitionIndex: number }[])
          push(topic.name, failedAnswer(p.partitionIndex, result.error.code));
      }
      continue;
    }
    for (const topic of answersOf(result.response)) {
      for (const p of topic.partitions) {
        if (isStaleLeaderCode(p.errorCode)) {
          context.leaders.markStale(topic.name);
          isClean = false;
        }
        push(topic.name, p);
      }
    }
  }
  if (isClean) context.leaders.confirm();
  return [...out].map(([name, partitions]) => ({ name, partitions }));
}

async function settle<R>(address: string, call: () => Promise<R>): Promise<NodeResult<R>> {
  try {
    return { address, response: await call() };
  } catch (error) {
    return { address, error: asCohortError(error, `call to ${address}`) };
  }
}

/** Produce, one request per leader node. */
export async function produceToLeaders(
  context: LeaderRoutingContext,
  request: b.ProduceRequest,
  options: CallOptions,
): Promise<b.ProduceResponse> {
  const routed = await route(context, request.topics, options);
  const results = await Promise.all(
    [...routed.byAddress].map(([address, topics]) =>
      settle(address, () =>
        context.node(address).produce({ ...request, topics: topics as b.ProduceTopicData[] }, options),
      ),
    ),
  );
  return {
    topics: mergePartitions(
      context,
      routed,
      results,
      (r: b.ProduceResponse) => r.topics,
      (partitionIndex, errorCode) => ({
        partitionIndex,
        errorCode,
        baseOffset: -1n,
        logAppendTimeMs: -1,
        logStartOffset: -1n,
      }),
    ),
  };
}

/** ListOffsets, one request per leader node, each partition with the leader epoch the client knows. */
export async function listOffsetsAtLeaders(
  context: LeaderRoutingContext,
  request: b.ListOffsetsRequest,
  options: CallOptions,
): Promise<b.ListOffsetsResponse> {
  const routed = await route(context, request.topics, options, (p, leaderEpoch) =>
    p.currentLeaderEpoch === undefined ? { ...p, currentLeaderEpoch: leaderEpoch } : p,
  );
  const results = await Promise.all(
    [...routed.byAddress].map(([address, topics]) =>
      settle(address, () =>
        context.node(address).listOffsets({ topics: topics as b.ListOffsetsTopic[] }, options),
      ),
    ),
  );
  return {
    topics: mergePartitions(
      context,
      routed,
      results,
      (r: b.ListOffsetsResponse) => r.topics,
      (partitionIndex, errorCode) => ({
        partitionIndex,
        errorCode,
        offset: -1n,
        timestamp: -1,
      }),
    ),
  };
}

/**
 * Fetch, one request per leader node, each partition with the leader epoch the client knows. The first
 * node to answer with records or an error ends the others' long polls (they are cancelled, which a Fetch
 * allows: it reads, it does not write), so data on one node is not held back by another's `maxWaitMs`;
 * the partitions whose answer was cut short are simply absent, and the consumer fetches them again.
 */
export async function fetchFromLeaders(
  context: LeaderRoutingContext,
  request: b.FetchRequest,
  options: CallOptions,
): Promise<b.FetchResponse> {
  const routed = await route(context, request.topics, options, (p, leaderEpoch) =>
    p.currentLeaderEpoch === undefined ? { ...p, currentLeaderEpoch: leaderEpoch } : p,
  );
  const entries = [...routed.byAddress];
  if (entries.length === 1 && routed.unroutable.length === 0) {
    // The common case, one leader for everything asked: the call as it was.
    const [address, topics] = entries[0];
    const result = await settle(address, () =>
      context.node(address).fetch({ ...request, topics: topics as b.FetchTopic[] }, options),
    );
    if ('error' in result) {
      context.leaders.markNodeStale(address);
      throw result.error;
    }
    return mergedFetch(context, routed, [result]);
  }
  const cutShort = new AbortController();
  const onAbort = (): void => cutShort.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const results: NodeResult<b.FetchResponse>[] = [];
  const hasNews = (r: b.FetchResponse): boolean =>
    r.errorCode !== ErrorCode.NONE ||
    r.responses.some((t) => t.partitions.some((p) => p.records.length > 0 || p.errorCode !== ErrorCode.NONE));
  try {
    await Promise.all(
      entries.map(async ([address, topics]) => {
        const result = await settle(address, () =>
          context
            .node(address)
            .fetch(
              { ...request, topics: topics as b.FetchTopic[] },
              { timeoutMs: options.timeoutMs, signal: cutShort.signal },
            ),
        );
        if (cutShort.signal.aborted && !options.signal?.aborted && 'error' in result) return; // we cut it short
        results.push(result);
        if ('error' in result || hasNews(result.response) || routed.unroutable.length > 0) cutShort.abort();
      }),
    );
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  if (options.signal?.aborted) throw abortError();
  return mergedFetch(context, routed, results);
}

function mergedFetch(
  context: LeaderRoutingContext,
  routed: Routed<unknown>,
  results: readonly NodeResult<b.FetchResponse>[],
): b.FetchResponse {
  const requestError =
    results.find(
      (r): r is { address: string; response: b.FetchResponse } =>
        'response' in r && r.response.errorCode !== ErrorCode.NONE,
    )?.response.errorCode ?? ErrorCode.NONE;
  const responses = mergePartitions(
    context,
    routed,
    results,
    (r: b.FetchResponse) => r.responses,
    (partitionIndex, errorCode) => ({
      partitionIndex,
      errorCode,
      highWatermark: -1n,
      logStartOffset: -1n,
      records: [],
    }),
  );
  return { errorCode: requestError, responses };
}

function abortError(): CohortError {
  return new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'Fetch was cancelled');
}
