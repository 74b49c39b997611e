/**
 * bench:cluster — what running cohort as a cluster on etcd costs, each figure against a single node (no
 * etcd, `npm start`'s default) started in the same run, and what a failover takes:
 *
 * 1. Produce throughput, 1 KB records, 32 requests in flight for a few seconds, on the partition's leader:
 *    acks=1 on a one-replica topic (single node, and in the cluster: what etcd and membership add),
 *    acks=1 and acks=-1 on a three-replica topic in the cluster (what replication adds). With each, the
 *    leader process's CPU time per Produce (/proc/<pid>/stat, user + system, every thread). Goal: the
 *    cluster's CPU per acks=1 Produce on a one-replica topic ≤ 1.1 × the single node's (etcd is not on
 *    the produce path). The sides alternate round by round; ratios are medians of per-round ratios.
 * 2. Fetch wake latency: a consumer's parked Fetch (long poll) on the leader, one acks=1 Produce of one
 *    100-byte record from another connection; the time from sending it to the Fetch's answer. Single
 *    node against a three-replica partition in the cluster, whose HW moves only once both followers
 *    have fetched the record (replication may cost); the side that goes first alternates. Not a
 *    one-replica partition in the cluster: the cluster runs with --min-insync-replicas 2, and below the
 *    minimum the HW never advances (KAFKA-15583, docs/log.md), so its records are never readable.
 * 3. Heartbeat cost (bench/cluster/heartbeat-cost.ts): one-member groups on one coordinator, unary
 *    Heartbeats; each side warmed past its first full collection, then both paced at the same rate; the
 *    coordinator process's CPU per Heartbeat. Goal: cluster ≤ 1.1 × single node (etcd is not on the
 *    heartbeat path).
 * 4. Failover: two acks=-1 producers following leadership on a three-replica topic (min ISR 2); the
 *    leader is killed with SIGKILL; the time from the kill to the first acks=-1 success on another node.
 *    Goal ≤ node session timeout + 1 s. The killed node restarts on its data directory and rejoins the
 *    ISR before the next round. Every round's history is then checked (test/support/log-history-checker):
 *    acknowledged writes lost over the runs must be 0.
 * 5. Coordinator failover (bench/cluster/coordinator-failover.ts): kill -9 of the coordinator of a group of
 *    100 committing SDK members → the first acknowledged commit after it, and every member confirmed on the
 *    new coordinator. Goal ≤ node session timeout + the round's rebalance time + 1 s; acknowledged commits
 *    lost (test/support/group-history-checker) must be 0. Runs before 4, which stops the nodes.
 * 6. Load (bench/cluster/offsets-load.ts, in this process, before any other is started): a
 *    `__consumer_offsets` partition of 100,000 offsets of 1,000 groups loaded by a server and by a router,
 *    against the bare replay; the longest event-loop turn while loading (goal ≤ 50 ms).
 *
 * Run with `npm run bench:cluster` (`--quick`: one round, shorter runs; `--session-timeout-ms=N`, default
 * 5,000; `--offsets-topic-num-partitions=N`, default the server's 50, for the cluster side; `--only=throughput,wake,heartbeat,coordinator-failover,failover,load`). Every process is real (etcd, three
 * cohort nodes, one single node) on 127.0.0.1, started only if a section other than load runs; this
 * process is the client. The last line of output is a JSON object of the
 * figures: keys carry their unit, cluster ÷ single figures have "ratio" in their key.
 */
import { performance } from 'node:perf_hooks';
import { clusterBrokerClient, fetchOne, produceOne } from '../test/support/cluster-broker-client';
import { ClusterProducer, monotonicMs } from '../test/support/cluster-clients';
import { CohortCluster, waitFor } from '../test/support/cohort-cluster';
import { LogHistory, type PartitionRef } from '../test/support/log-history';
import { checkLogHistory } from '../test/support/log-history-checker';
import { DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS } from '../src/log';
import { benchCoordinatorFailover } from './cluster/coordinator-failover';
import {
  HEARTBEAT_GROUPS,
  HEARTBEAT_IN_FLIGHT,
  heartbeatSide,
  measureHeartbeatCost,
} from './cluster/heartbeat-cost';
import { benchOffsetsLoad } from './cluster/offsets-load';
import { describeMachine } from './support/machine';
import { processCpuUs } from './support/process-cpu';
import { line, printFigures, round, table, verdict } from './support/report';
import { RoundSet } from './support/round-set';
import { percentileOfSorted } from './support/stats';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 1 : 3;
const SECTIONS = ['throughput', 'wake', 'heartbeat', 'coordinator-failover', 'failover', 'load'] as const;
type Section = (typeof SECTIONS)[number];
const THROUGHPUT_SECONDS = QUICK ? 1 : 3;
const THROUGHPUT_WARMUP_SECONDS = 0.5;
const HEARTBEAT_WINDOW_SECONDS = QUICK ? 2 : 10;
const IN_FLIGHT = 32;
const WAKE_SAMPLES = QUICK ? 40 : 300;
const WAKE_SETTLE_MS = 15;
const CPU_TARGET_RATIO = 1.1;
const FAILOVER_SLACK_MS = 1_000;
const RECORD_1KB = Buffer.alloc(1_024, 'x');
const RECORD_100B = Buffer.alloc(100, 'w');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function numberArg(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const value = Number(arg.slice(name.length + 3));
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} takes a positive integer`);
  return value;
}

function selectedSections(): ReadonlySet<Section> {
  const only = process.argv.filter((a) => a.startsWith('--only='));
  if (only.length === 0) return new Set(SECTIONS);
  const names = only.flatMap((a) => a.slice('--only='.length).split(',')).filter((n) => n !== '');
  const unknown = names.filter((n) => !(SECTIONS as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0)
    throw new Error(`--only takes a comma-separated list of ${SECTIONS.join(', ')}; got ${only.join(' ')}`);
  return new Set(names as Section[]);
}

/** Where a partition's leader is: its broker address and its process (for CPU). */
interface LeaderSide {
  readonly target: string;
  readonly pid: number;
  readonly leaderEpoch: number | undefined;
}

// --- heartbeat cost ---

async function benchHeartbeat(
  single: CohortCluster,
  cluster: CohortCluster,
): Promise<Record<string, number>> {
  line('');
  line(
    `3. Heartbeat cost: ${HEARTBEAT_GROUPS} one-member groups on one coordinator, at most ${HEARTBEAT_IN_FLIGHT} ` +
      `unary Heartbeats in flight; each side warmed past a full collection, then both paced alike, ` +
      `${HEARTBEAT_WINDOW_SECONDS} s per window; the coordinator's CPU per call`,
  );
  const sides = [await heartbeatSide(single, 'single'), await heartbeatSide(cluster, 'cluster')];
  try {
    const { rounds, pacePerS, warmUp } = await measureHeartbeatCost(sides, ROUNDS, HEARTBEAT_WINDOW_SECONDS);
    const ratio = round(rounds.medianRatio('cluster_cpu_us', 'single_cpu_us'), 2);
    table([
      [
        'side',
        'warm-up s',
        'unpaced/s',
        'paced/s (median)',
        'full GCs per window',
        'coordinator CPU µs/heartbeat',
      ],
      ...sides.map((s) => [
        s.label,
        warmUp.get(s.label)!.seconds,
        Math.round(warmUp.get(s.label)!.perS),
        Math.round(rounds.median(`${s.label}_per_s`)),
        rounds.values(`${s.label}_major`).join(' / '),
        rounds
          .values(`${s.label}_cpu_us`)
          .map((v) => round(v, 1))
          .join(' / '),
      ]),
    ]);
    table([
      [`cluster ÷ single at ${pacePerS}/s (median of rounds)`, 'ratio', 'goal'],
      ['CPU per Heartbeat', ratio, `≤ ${CPU_TARGET_RATIO} ${verdict(ratio <= CPU_TARGET_RATIO)}`],
    ]);
    return {
      heartbeat_pace_per_s: pacePerS,
      heartbeat_single_per_s: Math.round(rounds.median('single_per_s')),
      heartbeat_cluster_per_s: Math.round(rounds.median('cluster_per_s')),
      heartbeat_single_cpu_us: round(rounds.median('single_cpu_us'), 1),
      heartbeat_cluster_cpu_us: round(rounds.median('cluster_cpu_us'), 1),
      cpu_per_heartbeat_cluster_vs_single_ratio: ratio,
    };
  } finally {
    for (const side of sides) side.client.close();
  }
}

async function leaderSide(cluster: CohortCluster, ref: PartitionRef): Promise<LeaderSide> {
  const leader = await cluster.leaderOf(ref);
  const node = cluster.node(leader.nodeId);
  return { target: node.target, pid: node.process!.child.pid!, leaderEpoch: leader.leaderEpoch };
}

// --- 1. throughput and CPU per Produce ---

async function produceLoad(
  side: LeaderSide,
  topic: string,
  acks: number,
  seconds: number,
): Promise<{ recordsPerS: number; cpuUsPerProduce: number }> {
  const client = clusterBrokerClient(side.target);
  const request = produceOne(topic, 0, RECORD_1KB, acks, 30_000);
  const run = async (runSeconds: number): Promise<{ count: number; elapsedMs: number; cpuUs: number }> => {
    let count = 0;
    const cpuBefore = processCpuUs(side.pid);
    const start = performance.now();
    const endAt = start + runSeconds * 1_000;
    const worker = async (): Promise<void> => {
      while (performance.now() < endAt) {
        const answer = await client.produce(request, 30_000);
        const code = answer.topics[0]?.partitions[0]?.errorCode;
        if (code !== 0) throw new Error(`produce to ${topic} (acks ${acks}) failed with error ${code}`);
        count++;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    return { count, elapsedMs: performance.now() - start, cpuUs: processCpuUs(side.pid) - cpuBefore };
  };
  try {
    await run(THROUGHPUT_WARMUP_SECONDS);
    const { count, elapsedMs, cpuUs } = await run(seconds);
    return { recordsPerS: (count / elapsedMs) * 1_000, cpuUsPerProduce: cpuUs / count };
  } finally {
    client.close();
  }
}

interface ThroughputCase {
  readonly key: string;
  readonly label: string;
  readonly side: LeaderSide;
  readonly topic: string;
  readonly acks: number;
}

async function benchThroughput(cases: readonly ThroughputCase[]): Promise<Record<string, number>> {
  line('');
  line(
    `1. Produce throughput, 1 KB records, ${IN_FLIGHT} in flight, ${THROUGHPUT_SECONDS} s per run; leader CPU`,
  );
  const rounds = new RoundSet();
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? cases : [...cases].reverse();
    for (const c of order) {
      const { recordsPerS, cpuUsPerProduce } = await produceLoad(c.side, c.topic, c.acks, THROUGHPUT_SECONDS);
      rounds.record(`${c.key}_records_per_s`, recordsPerS);
      rounds.record(`${c.key}_cpu_us`, cpuUsPerProduce);
    }
  }
  const rows: (string | number)[][] = [['case', 'records/s', 'leader CPU µs/produce']];
  const figures: Record<string, number> = {};
  for (const c of cases) {
    rows.push([
      c.label,
      Math.round(rounds.median(`${c.key}_records_per_s`)),
      rounds.median(`${c.key}_cpu_us`),
    ]);
    figures[`produce_${c.key}_records_per_s`] = Math.round(rounds.median(`${c.key}_records_per_s`));
    figures[`produce_${c.key}_leader_cpu_us_per_produce`] = round(rounds.median(`${c.key}_cpu_us`), 1);
  }
  table(rows);
  const ratio = (name: string, cluster: string, single: string, what: 'cpu_us' | 'records_per_s'): number =>
    (figures[name] = round(rounds.medianRatio(`${cluster}_${what}`, `${single}_${what}`), 2));
  const cpuRatio = ratio(
    'cpu_per_acks1_produce_rf1_cluster_vs_single_ratio',
    'cluster_rf1_acks1',
    'single_acks1',
    'cpu_us',
  );
  const rows2: (string | number)[][] = [
    ['cluster ÷ single (median of rounds)', 'ratio', 'goal'],
    [
      'CPU per acks=1 produce, one replica',
      cpuRatio,
      `≤ ${CPU_TARGET_RATIO} ${verdict(cpuRatio <= CPU_TARGET_RATIO)}`,
    ],
    [
      'CPU per acks=1 produce, three replicas',
      ratio(
        'cpu_per_acks1_produce_rf3_cluster_vs_single_ratio',
        'cluster_rf3_acks1',
        'single_acks1',
        'cpu_us',
      ),
      '',
    ],
    [
      'throughput acks=1, one replica',
      ratio(
        'produce_acks1_rf1_cluster_vs_single_ratio',
        'cluster_rf1_acks1',
        'single_acks1',
        'records_per_s',
      ),
      '',
    ],
    [
      'throughput acks=1, three replicas',
      ratio(
        'produce_acks1_rf3_cluster_vs_single_ratio',
        'cluster_rf3_acks1',
        'single_acks1',
        'records_per_s',
      ),
      '',
    ],
    [
      'throughput acks=-1, three replicas',
      ratio(
        'produce_acks_all_rf3_cluster_vs_single_ratio',
        'cluster_rf3_acks_all',
        'single_acks_all',
        'records_per_s',
      ),
      '',
    ],
  ];
  table(rows2);
  return figures;
}

// --- 2. fetch wake latency ---

interface WakeSide {
  sample(): Promise<number>;
  close(): void;
}

function wakeSide(side: LeaderSide, topic: string): WakeSide {
  const consumer = clusterBrokerClient(side.target);
  const producer = clusterBrokerClient(side.target);
  const request = produceOne(topic, 0, RECORD_100B, 1, 30_000);
  let offset = -1;
  const endOffset = async (): Promise<number> => {
    // The next offset: one acks=1 produce tells it (and makes the partition non-empty).
    const answer = await producer.produce(request, 30_000);
    return answer.topics[0]!.partitions[0]!.baseOffset + 1;
  };
  return {
    async sample() {
      if (offset < 0) offset = await endOffset();
      // Wait for the HW to pass what was produced, so the parked fetch waits for the next record only.
      let highWatermark = Number.NaN;
      try {
        await waitFor(
          `${topic} at ${side.target}: the HW to reach ${offset}`,
          30_000,
          async () => {
            const answer = await consumer.fetch(
              fetchOne(topic, 0, offset, { maxWaitMs: 0, currentLeaderEpoch: side.leaderEpoch }),
              5_000,
            );
            const p = answer.responses[0]!.partitions[0]!;
            if (p.errorCode !== 0)
              throw new Error(
                `fetch of ${topic} at ${side.target} (leader epoch ${side.leaderEpoch}): error ${p.errorCode}`,
              );
            highWatermark = p.highWatermark;
            return p.highWatermark >= offset ? true : undefined;
          },
          5,
        );
      } catch (error) {
        throw new Error(`${String(error)}; last HW seen ${highWatermark}`);
      }
      let sentAt = 0;
      const parked = consumer
        .fetch(
          fetchOne(topic, 0, offset, { maxWaitMs: 20_000, currentLeaderEpoch: side.leaderEpoch }),
          30_000,
        )
        .then((answer) => {
          const latency = performance.now() - sentAt;
          const p = answer.responses[0]!.partitions[0]!;
          if (p.errorCode !== 0 || p.records.length === 0)
            throw new Error(`woken fetch: error ${p.errorCode}, ${p.records.length} records`);
          return latency;
        });
      await sleep(WAKE_SETTLE_MS);
      sentAt = performance.now();
      const produced = producer.produce(request, 30_000);
      const latency = await parked;
      offset = (await produced).topics[0]!.partitions[0]!.baseOffset + 1;
      return latency;
    },
    close() {
      consumer.close();
      producer.close();
    },
  };
}

async function benchWake(sides: { single: WakeSide; clusterRf3: WakeSide }): Promise<Record<string, number>> {
  line('');
  line(
    `2. Fetch wake: acks=1 Produce sent → parked consumer Fetch answered (ms), ${WAKE_SAMPLES} samples each`,
  );
  const names = ['single', 'clusterRf3'] as const;
  const samples = { single: [] as number[], clusterRf3: [] as number[] };
  for (let i = 0; i < 10; i++) for (const name of names) await sides[name].sample();
  // The side that goes first rotates sample by sample, so a neighbour's burst lands on each alike.
  for (let i = 0; i < WAKE_SAMPLES; i++)
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length]!;
      samples[name].push(await sides[name].sample());
    }
  const p = (values: number[], q: number): number => percentileOfSorted(Float64Array.from(values).sort(), q);
  const figures = {
    wake_single_p50_ms: round(p(samples.single, 50), 3),
    wake_single_p99_ms: round(p(samples.single, 99), 3),
    wake_cluster_rf3_p50_ms: round(p(samples.clusterRf3, 50), 3),
    wake_cluster_rf3_p99_ms: round(p(samples.clusterRf3, 99), 3),
    wake_cluster_rf3_vs_single_p50_ratio: round(p(samples.clusterRf3, 50) / p(samples.single, 50), 2),
    wake_cluster_rf3_vs_single_p99_ratio: round(p(samples.clusterRf3, 99) / p(samples.single, 99), 2),
  };
  table([
    ['side', 'p50', 'p99', 'p50 ÷ single', 'p99 ÷ single'],
    ['single node, one replica', figures.wake_single_p50_ms, figures.wake_single_p99_ms, '', ''],
    [
      'cluster, three replicas',
      figures.wake_cluster_rf3_p50_ms,
      figures.wake_cluster_rf3_p99_ms,
      figures.wake_cluster_rf3_vs_single_p50_ratio,
      figures.wake_cluster_rf3_vs_single_p99_ratio,
    ],
  ]);
  return figures;
}

// --- 3. failover ---

async function benchFailover(cluster: CohortCluster): Promise<Record<string, number>> {
  line('');
  line(`4. Failover: kill -9 of the leader under acks=-1 load → first acks=-1 success on another node (ms)`);
  const rounds: { ref: PartitionRef; history: LogHistory; failoverMs: number; killed: number }[] = [];
  const allNodes = cluster.nodeIds();
  for (let r = 0; r < ROUNDS; r++) {
    const ref = { topic: `failover-${r}`, partition: 0 };
    await cluster.createTopic(ref.topic, 1, 3);
    await cluster.awaitIsr(ref, allNodes);
    const history = new LogHistory(monotonicMs);
    const producers = [1, 2].map((n) =>
      new ClusterProducer({
        name: `r${r}-producer-${n}`,
        partition: ref,
        nodeTargets: cluster.nodeTargets,
        history,
      }).start(),
    );
    try {
      const acks = (): number => producers.reduce((sum, p) => sum + p.ackCount, 0);
      await waitFor('20 acknowledged writes', 30_000, () => (acks() >= 20 ? true : undefined));
      const killed = (await cluster.leaderOf(ref)).nodeId;
      const killedAtMs = monotonicMs();
      await cluster.kill(killed);
      const first = await waitFor(
        'an acknowledged write on a new leader',
        cluster.sessionTimeoutMs + 30_000,
        () =>
          producers
            .flatMap((p) => p.outcomesSince(killedAtMs, (o) => o.kind === 'ok' && o.nodeId !== killed))
            .sort((a, b) => a.atMs - b.atMs)[0],
      );
      rounds.push({ ref, history, failoverMs: first.atMs - killedAtMs, killed });
      const after = acks();
      await waitFor('20 more acknowledged writes', 30_000, () => (acks() >= after + 20 ? true : undefined));
    } finally {
      await Promise.all(producers.map((p) => p.stop()));
    }
    await cluster.startNode(rounds[rounds.length - 1]!.killed);
    await cluster.awaitIsr(ref, allNodes, 60_000);
  }
  const byTopic = new Map(rounds.map((r) => [r.ref.topic, r.history]));
  const finalLogs = await cluster.collectFinalLogs(
    rounds.map((r) => r.ref),
    (ref) => byTopic.get(ref.topic),
  );
  let lost = 0;
  let invalid = 0;
  let acknowledged = 0;
  for (const r of rounds) {
    for (const log of finalLogs) if (log.topic === r.ref.topic) r.history.addFinalLog(log);
    r.history.close();
    const checked = checkLogHistory(r.history.snapshot());
    lost += checked.checks.find((c) => c.name === 'acknowledged-write-lost')!.violations.length;
    acknowledged += checked.stats.acknowledgedWrites;
    if (!checked.isValid) invalid++;
  }
  const times = rounds.map((r) => r.failoverMs).sort((a, b) => a - b);
  const goalMs = cluster.sessionTimeoutMs + FAILOVER_SLACK_MS;
  const worst = times[times.length - 1]!;
  table([
    ['round', 'killed node', 'failover ms'],
    ...rounds.map((r, i) => [i, r.killed, Math.round(r.failoverMs)]),
  ]);
  table([
    ['figure', 'value', 'goal'],
    ['failover, worst round (ms)', Math.round(worst), `≤ ${goalMs} ${verdict(worst <= goalMs)}`],
    ['acknowledged writes lost', lost, `0 ${verdict(lost === 0)}`],
    ['histories checked / invalid', `${rounds.length} / ${invalid}`, ''],
  ]);
  return {
    failover_median_ms: Math.round(percentileOfSorted(Float64Array.from(times), 50)),
    failover_max_ms: Math.round(worst),
    failover_goal_ms: goalMs,
    failover_rounds: rounds.length,
    acknowledged_writes: acknowledged,
    acknowledged_writes_lost: lost,
    histories_checked: rounds.length,
    histories_invalid: invalid,
  };
}

async function main(): Promise<void> {
  const sections = selectedSections();
  const sessionTimeoutMs = numberArg('session-timeout-ms', 5_000);
  // The server's default (50), so the cluster side replicates what a default cluster does; fewer starts
  // quicker on a loaded machine.
  const offsetsPartitions = numberArg('offsets-topic-num-partitions', DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS);
  const machine = describeMachine();
  const startedAt = new Date().toISOString();
  line(
    `bench:cluster ${QUICK ? '(quick) ' : ''}on ${machine.cpu}, ${machine.cores} cores, node ${machine.node}; ` +
      `session timeout ${sessionTimeoutMs} ms; sections: ${SECTIONS.filter((s) => sections.has(s)).join(', ')}`,
  );
  let single: CohortCluster | undefined;
  let cluster: CohortCluster | undefined;
  let figures: Record<string, unknown> = {};
  try {
    // In this process, before any other process is started: the loop it probes is this one.
    if (sections.has('load')) figures = { ...figures, ...(await benchOffsetsLoad(ROUNDS)) };
    const needsCluster = SECTIONS.some((s) => s !== 'load' && sections.has(s));
    if (needsCluster) await runOnClusters();
    printFigures({
      bench: 'cluster',
      date: startedAt,
      node: machine.node,
      cpu: machine.cpu,
      cores: machine.cores,
      cpus_allowed: machine.cpusAllowed,
      quick: QUICK,
      rounds: ROUNDS,
      session_timeout_ms: sessionTimeoutMs,
      offsets_topic_num_partitions: offsetsPartitions,
      sections: SECTIONS.filter((s) => sections.has(s)),
      ...figures,
    });
  } finally {
    await cluster?.stop();
    await single?.stop();
  }

  async function runOnClusters(): Promise<void> {
    try {
      single = await CohortCluster.start({ mode: 'single' });
      cluster = await CohortCluster.start({
        nodeCount: 3,
        sessionTimeoutMs,
        minInsyncReplicas: 2,
        extraArgs: ['--offsets-topic-num-partitions', String(offsetsPartitions)],
      });
      const allNodes = cluster.nodeIds();
      if (sections.has('throughput') || sections.has('wake')) {
        await single.createTopic('rf1', 1, 1);
        await cluster.createTopic('rf1', 1, 1);
        await cluster.createTopic('rf3', 1, 3);
        await cluster.awaitIsr({ topic: 'rf3', partition: 0 }, allNodes);
      }
      if (sections.has('throughput')) {
        const singleSide = await leaderSide(single, { topic: 'rf1', partition: 0 });
        const rf1 = await leaderSide(cluster, { topic: 'rf1', partition: 0 });
        const rf3 = await leaderSide(cluster, { topic: 'rf3', partition: 0 });
        figures = {
          ...figures,
          ...(await benchThroughput([
            { key: 'single_acks1', label: 'single node, acks=1', side: singleSide, topic: 'rf1', acks: 1 },
            {
              key: 'cluster_rf1_acks1',
              label: 'cluster, one replica, acks=1',
              side: rf1,
              topic: 'rf1',
              acks: 1,
            },
            {
              key: 'cluster_rf3_acks1',
              label: 'cluster, three replicas, acks=1',
              side: rf3,
              topic: 'rf3',
              acks: 1,
            },
            {
              key: 'single_acks_all',
              label: 'single node, acks=-1',
              side: singleSide,
              topic: 'rf1',
              acks: -1,
            },
            {
              key: 'cluster_rf3_acks_all',
              label: 'cluster, three replicas, acks=-1',
              side: rf3,
              topic: 'rf3',
              acks: -1,
            },
          ])),
        };
      }
      if (sections.has('wake')) {
        const sides = {
          single: wakeSide(await leaderSide(single, { topic: 'rf1', partition: 0 }), 'rf1'),
          clusterRf3: wakeSide(await leaderSide(cluster, { topic: 'rf3', partition: 0 }), 'rf3'),
        };
        try {
          figures = { ...figures, ...(await benchWake(sides)) };
        } finally {
          for (const side of Object.values(sides)) side.close();
        }
      }
      if (sections.has('heartbeat')) figures = { ...figures, ...(await benchHeartbeat(single, cluster)) };
      if (sections.has('coordinator-failover'))
        figures = { ...figures, ...(await benchCoordinatorFailover(cluster, ROUNDS, offsetsPartitions)) };
      // Last: it stops the cluster's nodes to read their data directories.
      if (sections.has('failover')) figures = { ...figures, ...(await benchFailover(cluster)) };
    } catch (error) {
      // What the nodes said last is what explains a failed run (a lost session, a fenced epoch).
      if (cluster !== undefined) {
        process.stderr.write(`${cluster.describeNodes(40)}\n`);
        for (const topic of ['rf1', 'rf3'])
          for (const nodeId of cluster.nodeIds())
            process.stderr.write(
              `${topic} on node ${nodeId}: ${JSON.stringify(await cluster.replicaOffsets(nodeId, { topic, partition: 0 }))}\n`,
            );
      }
      throw error;
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench:cluster failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
