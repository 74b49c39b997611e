import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../../src/errors';
import type { CohortCluster } from '../../test/support/cohort-cluster';
import { groupCoordinatorClient, type GroupCoordinatorClient } from '../../test/support/grpc-clients';
import { processCpuUs } from '../support/process-cpu';
import { RoundSet } from '../support/round-set';

/**
 * Heartbeat cost in cluster mode against a single node (issue 15: ≤ 1.1× server CPU per call; no etcd on
 * the hot path). On each side, GROUPS one-member groups that one node coordinates (in the cluster, group
 * ids are drawn until GROUPS of them land on partitions of `__consumer_offsets` led by the same node, by
 * FindCoordinator), each member Stable in its generation; then unary Heartbeats, at most
 * HEARTBEAT_IN_FLIGHT at a time, and the coordinator process's CPU time (user + system, /proc) per Heartbeat.
 *
 * Per-call CPU is only comparable at the same rate and in the same garbage-collection phase: a process
 * spends a near-constant share of CPU a second whatever the rate, and once its first full collection has
 * run, each minor one promotes several times more (docs/performance.md). So each side is first warmed
 * unpaced until it has done a full collection (`nodejs_gc_duration_seconds_count{kind="major"}` on its
 * /metrics) and its rate is known; then both are driven at the same pace, 70% of the slower side's
 * unpaced rate, in windows (10 s in bench:cluster) that alternate which side goes first. The ratio is the
 * median of per-round ratios; each window's rate and full collections are reported beside it.
 */
export const HEARTBEAT_GROUPS = 20;
export const HEARTBEAT_IN_FLIGHT = 32;
/** The share of the slower side's unpaced rate both sides are paced at. */
const PACE_SHARE = 0.7;
const WARMUP_WINDOW_SECONDS = 2;
const WARMUP_LIMIT_SECONDS = 60;
/** Longer than a warm-up and the rounds: a side waiting its turn must not lose its members. */
const SESSION_TIMEOUT_MS = 10 * 60_000;
const LOCATE_TIMEOUT_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Member {
  readonly groupId: string;
  readonly memberId: string;
  readonly generationId: number;
}

/** The side's coordinator of every group it forms, and the groups' members once Stable. */
export interface HeartbeatSide {
  readonly label: string;
  readonly target: string;
  readonly pid: number;
  readonly client: GroupCoordinatorClient;
  readonly members: readonly Member[];
  /** Full collections the coordinator process has done so far (undefined if its /metrics did not answer). */
  readonly majorCollections: () => Promise<number | undefined>;
}

/**
 * Finds GROUPS group ids coordinated by one node of `cluster` (the node that coordinates the first id
 * that has a coordinator), retrying while the offsets topic is being created or its leaders elected.
 */
async function groupsOnOneNode(
  cluster: CohortCluster,
  prefix: string,
): Promise<{ nodeId: number; ids: string[] }> {
  const deadline = performance.now() + LOCATE_TIMEOUT_MS;
  const anyNode = cluster.node(cluster.runningNodeIds()[0]!);
  const client = groupCoordinatorClient(anyNode.target);
  try {
    for (;;) {
      const keys = Array.from({ length: HEARTBEAT_GROUPS * 8 }, (_, i) => `${prefix}-${i}`);
      const { coordinators } = await client.findCoordinator({ keyType: 0, keys });
      const located = coordinators.filter((c) => c.errorCode === ErrorCode.NONE);
      const nodeId = located[0]?.nodeId;
      const ids = located.filter((c) => c.nodeId === nodeId).map((c) => c.key);
      if (nodeId !== undefined && ids.length >= HEARTBEAT_GROUPS) {
        return { nodeId, ids: ids.slice(0, HEARTBEAT_GROUPS) };
      }
      if (performance.now() > deadline) {
        throw new Error(
          `no node coordinates ${HEARTBEAT_GROUPS} of ${keys.length} groups: ${JSON.stringify(coordinators.slice(0, 3))}`,
        );
      }
      await sleep(200);
    }
  } finally {
    client.close();
  }
}

/** One member joins `groupId` alone and syncs: Stable in its first generation. */
async function formGroup(client: GroupCoordinatorClient, groupId: string): Promise<Member> {
  const base = {
    groupId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: SESSION_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    clientId: 'bench-heartbeat',
  };
  for (let attempt = 0; ; attempt++) {
    const first = await client.joinGroup(base);
    if (first.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
      const joined = await client.joinGroup({ ...base, memberId: first.memberId });
      if (joined.errorCode !== ErrorCode.NONE)
        throw new Error(`JoinGroup ${groupId}: error ${joined.errorCode}`);
      const synced = await client.syncGroup({
        groupId,
        memberId: joined.memberId,
        generationId: joined.generationId,
        protocolType: 'consumer',
        protocolName: 'range',
        assignments: [{ memberId: joined.memberId, assignment: Buffer.alloc(0) }],
      });
      if (synced.errorCode !== ErrorCode.NONE)
        throw new Error(`SyncGroup ${groupId}: error ${synced.errorCode}`);
      return { groupId, memberId: joined.memberId, generationId: joined.generationId };
    }
    // A coordinator still loading (or just elected) answers 14/15/16 for a moment.
    if (attempt > 100) throw new Error(`JoinGroup ${groupId}: error ${first.errorCode}`);
    await sleep(100);
  }
}

/** Forms the side's groups on one coordinator: the single node, or the cluster node FindCoordinator names. */
export async function heartbeatSide(cluster: CohortCluster, label: string): Promise<HeartbeatSide> {
  const { nodeId, ids } = await groupsOnOneNode(cluster, `bench-heartbeat-${label}`);
  const node = cluster.node(nodeId);
  const client = groupCoordinatorClient(node.target);
  const members = await Promise.all(ids.map((groupId) => formGroup(client, groupId)));
  const majorCollections = async (): Promise<number | undefined> => {
    const body = await cluster.metrics(nodeId);
    const sample = body
      ?.split('\n')
      .find((l) => l.startsWith('nodejs_gc_duration_seconds_count{kind="major"}'));
    return sample === undefined ? (body === undefined ? undefined : 0) : Number(sample.split(' ').at(-1));
  };
  return { label, target: node.target, pid: node.process!.child.pid!, client, members, majorCollections };
}

interface LoadWindow {
  readonly perS: number;
  readonly cpuUs: number;
  readonly majorCollections: number;
}

/**
 * Heartbeats for `seconds` over the side's groups, at most HEARTBEAT_IN_FLIGHT at a time: as fast as the
 * side answers, or at `ratePerS` (calls issued on a 1 ms schedule, never more than due). The rate reached and
 * the coordinator's CPU per call.
 */
async function heartbeatLoad(side: HeartbeatSide, seconds: number, ratePerS?: number): Promise<LoadWindow> {
  const majorBefore = await side.majorCollections();
  const cpuBefore = processCpuUs(side.pid);
  const start = performance.now();
  const endAt = start + seconds * 1_000;
  let issued = 0;
  let answered = 0;
  let inFlight = 0;
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    let timer: NodeJS.Timeout | undefined;
    const pump = (): void => {
      const now = performance.now();
      if (failed) return;
      if (now >= endAt) {
        if (timer !== undefined) clearTimeout(timer);
        if (inFlight === 0) resolve();
        return;
      }
      let due =
        ratePerS === undefined
          ? HEARTBEAT_IN_FLIGHT
          : Math.floor(((now - start) * ratePerS) / 1_000) - issued;
      while (due-- > 0 && inFlight < HEARTBEAT_IN_FLIGHT) {
        const member = side.members[issued % side.members.length]!;
        issued++;
        inFlight++;
        side.client
          .heartbeat({
            groupId: member.groupId,
            memberId: member.memberId,
            generationId: member.generationId,
          })
          .then(
            (answer) => {
              inFlight--;
              if (answer.errorCode !== ErrorCode.NONE) {
                failed = true;
                reject(new Error(`Heartbeat ${member.groupId} on ${side.label}: error ${answer.errorCode}`));
                return;
              }
              answered++;
              pump();
            },
            (error: unknown) => {
              failed = true;
              reject(error);
            },
          );
      }
    };
    if (ratePerS !== undefined) {
      const tick = (): void => {
        pump();
        if (!failed && performance.now() < endAt) timer = setTimeout(tick, 1);
      };
      tick();
    } else pump();
  });
  const elapsedMs = performance.now() - start;
  const cpuUs = (processCpuUs(side.pid) - cpuBefore) / answered;
  const majorAfter = await side.majorCollections();
  return {
    perS: (answered / elapsedMs) * 1_000,
    cpuUs,
    majorCollections: majorBefore === undefined || majorAfter === undefined ? NaN : majorAfter - majorBefore,
  };
}

/**
 * Unpaced windows until the side has done a full collection (at least two windows, at most
 * WARMUP_LIMIT_SECONDS); the rate of its last window.
 */
async function warmUp(
  side: HeartbeatSide,
  windowSeconds: number,
): Promise<{ perS: number; seconds: number }> {
  const startMajor = (await side.majorCollections()) ?? 0;
  let seconds = 0;
  for (let window = 0; ; window++) {
    const { perS } = await heartbeatLoad(side, windowSeconds);
    seconds += windowSeconds;
    const major = (await side.majorCollections()) ?? 0;
    if ((window >= 1 && major > startMajor) || seconds >= WARMUP_LIMIT_SECONDS) return { perS, seconds };
  }
}

export interface HeartbeatCost {
  readonly rounds: RoundSet;
  /** The pace both sides were driven at (calls/s). */
  readonly pacePerS: number;
  /** Per side: its unpaced rate at the end of warm-up, and how long warm-up took. */
  readonly warmUp: ReadonlyMap<string, { perS: number; seconds: number }>;
}

/**
 * Warms each side past its first full collection, then rounds of paced windows on both sides, alternating
 * which goes first. Records `<label>_per_s`, `<label>_cpu_us` and `<label>_major` per window.
 */
export async function measureHeartbeatCost(
  sides: readonly HeartbeatSide[],
  rounds: number,
  windowSeconds: number,
): Promise<HeartbeatCost> {
  const warm = new Map<string, { perS: number; seconds: number }>();
  for (const side of sides)
    warm.set(side.label, await warmUp(side, Math.min(WARMUP_WINDOW_SECONDS, windowSeconds)));
  const slowest = Math.min(...[...warm.values()].map((w) => w.perS));
  const pacePerS = Math.max(100, Math.round((slowest * PACE_SHARE) / 100) * 100);
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const window = await heartbeatLoad(side, windowSeconds, pacePerS);
      set.record(`${side.label}_per_s`, window.perS);
      set.record(`${side.label}_cpu_us`, window.cpuUs);
      set.record(`${side.label}_major`, window.majorCollections);
    }
  }
  return { rounds: set, pacePerS, warmUp: warm };
}
