/**
 * The memory bench's process: 100,000 members in 10,000 groups of 10, built in-process through the
 * coordinator's API (forming them over gRPC would take minutes per run, and the connections' buffers are
 * not per-member state). Every request is first encoded and decoded by the server's own codecs, so each
 * member holds exactly what a member joined over gRPC holds (decoded strings and metadata Buffers).
 * The clock is a ManualTime: the initial rebalance delay passes when the bench advances it, and nobody
 * expires. Reports RSS and heapUsed after full collections, before and after.
 */
import { ErrorCode } from '../../src/errors';
import { DEFAULT_GROUP_CONFIG, GroupCoordinator } from '../../src/group';
import type { JoinGroupResponse, RequestContext } from '../../src/group/group-protocol';
import { ManualTime } from '../../src/time';
import { collectGarbage } from '../support/gc-recorder';
import { serveParent } from './child-rpc';
import { codecs, expectCode, joinRequest, syncRequest, type FormedGroup } from './group-driver';
import { applyServerHeapPolicy } from './server-heap-policy';
import type { MethodCodec } from './wire';

export interface MemoryFigures {
  readonly members: number;
  readonly groups: number;
  readonly rssBeforeBytes: number;
  readonly rssAfterBytes: number;
  readonly heapUsedBeforeBytes: number;
  readonly heapUsedAfterBytes: number;
  /** Buffers' backing stores (outside the V8 heap). */
  readonly externalBeforeBytes: number;
  readonly externalAfterBytes: number;
  readonly formMs: number;
}

applyServerHeapPolicy();

const c = codecs();
const context: RequestContext = { clientHost: '127.0.0.1' };
let coordinator: GroupCoordinator | undefined;

export interface MemoryPlan {
  readonly groups: number;
  readonly groupSize: number;
  /**
   * Decode each request from its own 8 KiB buffer, as grpc-js hands over a message that arrived among
   * other traffic: it copies each message into Node's shared 8 KiB Buffer pool (Buffer.concat), and
   * protobufjs decodes `bytes` fields as views into that message. Without it, requests are decoded from
   * buffers allocated back to back, the most favourable packing.
   */
  readonly slabPerRequest: boolean;
}

/** Node's Buffer.poolSize: the slab that pooled small Buffers are carved from. */
const POOL_SLAB_BYTES = 8 * 1024;

async function build(payload: MemoryPlan): Promise<MemoryFigures> {
  const decode = <Req>(codec: MethodCodec<Req, unknown>, bytes: Buffer): Req => {
    if (!payload.slabPerRequest || bytes.length > POOL_SLAB_BYTES) return codec.decodeRequest(bytes);
    const slab = Buffer.allocUnsafeSlow(POOL_SLAB_BYTES);
    bytes.copy(slab);
    return codec.decodeRequest(slab.subarray(0, bytes.length));
  };
  const time = new ManualTime();
  collectGarbage();
  const before = process.memoryUsage();
  const t0 = Date.now();
  coordinator = new GroupCoordinator(DEFAULT_GROUP_CONFIG, time);
  const batch = 1_000;
  for (let first = 0; first < payload.groups; first += batch) {
    const groups: FormedGroup[] = [];
    const joins: Promise<JoinGroupResponse>[] = [];
    for (let g = first; g < Math.min(first + batch, payload.groups); g++) {
      const groupId = `memory-${String(g).padStart(5, '0')}`;
      const memberIds: string[] = [];
      for (let i = 0; i < payload.groupSize; i++) {
        const wire = decode(c.joinGroup, c.joinGroup.encodeRequest(joinRequest(groupId, '', i, 0)));
        const response = await coordinator.joinGroup(wire, context);
        expectCode('first JoinGroup', response.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
        memberIds.push(response.memberId);
      }
      memberIds.forEach((memberId, i) =>
        joins.push(
          coordinator!.joinGroup(
            decode(c.joinGroup, c.joinGroup.encodeRequest(joinRequest(groupId, memberId, i, 0))),
            context,
          ),
        ),
      );
      groups.push({ groupId, memberIds, leaderId: '', generationId: 0, metadataVersion: 0 });
    }
    // KIP-134: a join that gained members during its initial delay waits one more delay. Advance only
    // while no answer is arriving (answers are delivered in slices, one per turn), so the clock never runs
    // past the rebalance timeout that DelayedSync then starts.
    let answered = 0;
    let seen = -1;
    for (const join of joins) void join.then(() => answered++);
    while (answered < joins.length) {
      if (answered === seen) time.advance(DEFAULT_GROUP_CONFIG.groupInitialRebalanceDelayMs);
      seen = answered;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const joined = await Promise.all(joins);
    joined.forEach((response, k) => {
      expectCode('JoinGroup', response.errorCode, ErrorCode.NONE);
      const group = groups[Math.floor(k / payload.groupSize)];
      group.leaderId = response.leaderId;
      group.generationId = response.generationId;
    });
    const syncs = [];
    for (const group of groups) {
      for (const memberId of group.memberIds) {
        const wire = c.syncGroup.encodeRequest(
          syncRequest(group, memberId, group.generationId, memberId === group.leaderId),
        );
        syncs.push(coordinator.syncGroup(decode(c.syncGroup, wire), context));
      }
    }
    for (const response of await Promise.all(syncs))
      expectCode('SyncGroup', response.errorCode, ErrorCode.NONE);
  }
  const formMs = Date.now() - t0;
  const listed = await coordinator.listGroups({ statesFilter: ['Stable'] }, context);
  const described = await coordinator.describeGroups(
    { groups: listed.groups.map((g) => g.groupId) },
    context,
  );
  const members = described.groups.reduce((sum, group) => sum + group.members.length, 0);
  if (listed.groups.length !== payload.groups || members !== payload.groups * payload.groupSize) {
    throw new Error(
      `${listed.groups.length} Stable groups of ${members} members, expected ${payload.groups}`,
    );
  }
  described.groups.length = 0;
  // Let the reply dispatcher's last turn run, then measure only what the coordinator keeps.
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
  const after = process.memoryUsage();
  return {
    members: payload.groups * payload.groupSize,
    groups: payload.groups,
    rssBeforeBytes: before.rss,
    rssAfterBytes: after.rss,
    heapUsedBeforeBytes: before.heapUsed,
    heapUsedAfterBytes: after.heapUsed,
    externalBeforeBytes: before.external,
    externalAfterBytes: after.external,
    formMs,
  };
}

serveParent({ build: (payload: MemoryPlan) => build(payload) }, async () => {
  coordinator?.shutdown();
});
