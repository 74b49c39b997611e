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
 * FindCoordinator), each member Stable in its generation; then IN_FLIGHT unary Heartbeats at a time for a
 * few seconds, and the coordinator process's CPU time (user + system, /proc) per Heartbeat. The sides
 * alternate round by round; the ratio is the median of per-round ratios.
 */
export const HEARTBEAT_GROUPS = 20;
const IN_FLIGHT = 32;
const SESSION_TIMEOUT_MS = 30_000;
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
  return { label, target: node.target, pid: node.process!.child.pid!, client, members };
}

/** Heartbeats for `seconds`, IN_FLIGHT at a time over the side's groups; the coordinator's CPU per call. */
async function heartbeatLoad(side: HeartbeatSide, seconds: number): Promise<{ perS: number; cpuUs: number }> {
  let count = 0;
  const cpuBefore = processCpuUs(side.pid);
  const start = performance.now();
  const endAt = start + seconds * 1_000;
  const worker = async (w: number): Promise<void> => {
    const member = side.members[w % side.members.length]!;
    const request = { groupId: member.groupId, memberId: member.memberId, generationId: member.generationId };
    while (performance.now() < endAt) {
      const answer = await side.client.heartbeat(request);
      if (answer.errorCode !== ErrorCode.NONE) {
        throw new Error(`Heartbeat ${member.groupId} on ${side.label}: error ${answer.errorCode}`);
      }
      count++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, (_, w) => worker(w)));
  const elapsedMs = performance.now() - start;
  return { perS: (count / elapsedMs) * 1_000, cpuUs: (processCpuUs(side.pid) - cpuBefore) / count };
}

/** Rounds of heartbeat load on both sides, alternating which goes first; warm-up first. */
export async function measureHeartbeatCost(
  sides: readonly HeartbeatSide[],
  rounds: number,
  seconds: number,
): Promise<RoundSet> {
  const set = new RoundSet();
  for (const side of sides) await heartbeatLoad(side, 0.5);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const { perS, cpuUs } = await heartbeatLoad(side, seconds);
      set.record(`${side.label}_per_s`, perS);
      set.record(`${side.label}_cpu_us`, cpuUs);
    }
  }
  return set;
}
