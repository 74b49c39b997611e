import { encodeAssignment, encodeSubscription } from '../../src/client/consumer-protocol';
import { ErrorCode } from '../../src/errors';
import { HEARTBEAT, JOIN_GROUP, SYNC_GROUP } from '../../src/kafka/protocol/kafka-apis';
import { decodeResponseBody, encodeRequest } from '../../src/kafka/protocol/kafka-request';
import type { KafkaFrameConnection } from './kafka-frames';

/**
 * Forms groups over the Kafka door with raw frames, as a Kafka consumer would: protocol type `consumer`,
 * the range protocol with an encoded subscription (Kafka's ConsumerProtocol), JoinGroup v5 with KIP-394's
 * MEMBER_ID_REQUIRED round trip, SyncGroup v3 with the leader's assignment of two partitions a member, and
 * Heartbeat v3: the versions KafkaJS and librdkafka send. Each member has a connection of its own, as a
 * Kafka consumer has its own connection to the coordinator (a parked JoinGroup holds its connection's later
 * answers). Every answer's error code is checked; an unexpected one fails the bench.
 */

export const JOIN_VERSION = 5;
export const SYNC_VERSION = 3;
export const HEARTBEAT_VERSION = 3;
/** The longest session the default config allows: nobody expires mid-run. */
export const SESSION_TIMEOUT_MS = 1_800_000;
export const REBALANCE_TIMEOUT_MS = 60_000;
const TOPICS = ['orders', 'payments'];
const CLIENT_ID = 'bench-kafka';

let nextCorrelationId = 1;

/** A correlation id no other frame of this process uses (wraps within int32). */
export function correlationId(): number {
  nextCorrelationId = nextCorrelationId >= 0x7fffffff ? 1 : nextCorrelationId + 1;
  return nextCorrelationId;
}

export interface KafkaGroup {
  readonly groupId: string;
  /** In join order; memberIds[i] joined on the group's connection i. */
  readonly memberIds: string[];
  leaderId: string;
  generationId: number;
}

export interface JoinAnswer {
  readonly errorCode: number;
  readonly generationId: number;
  readonly leader: string;
  readonly memberId: string;
  readonly members: readonly { memberId: string }[];
}

export function expectCode(what: string, actual: number, expected: ErrorCode): void {
  if (actual !== expected) {
    throw new Error(`${what}: error code ${ErrorCode[actual]} (${actual}), expected ${ErrorCode[expected]}`);
  }
}

export function joinFrame(groupId: string, memberId: string, subscriptionVersion = 0): Buffer {
  return encodeRequest(JOIN_GROUP, JOIN_VERSION, correlationId(), CLIENT_ID, {
    groupId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    memberId,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [
      {
        name: 'range',
        metadata: encodeSubscription({
          topics: TOPICS,
          userData: Buffer.from(`v${subscriptionVersion}`),
          generationId: -1,
        }),
      },
    ],
  });
}

export function decodeJoin(frame: Buffer): JoinAnswer {
  return decodeResponseBody(JOIN_GROUP, JOIN_VERSION, frame) as unknown as JoinAnswer;
}

/** A SyncGroup; the leader's carries an assignment for each of `memberIds`. */
export function syncFrame(
  groupId: string,
  generationId: number,
  memberId: string,
  assignedMemberIds: readonly string[],
): Buffer {
  return encodeRequest(SYNC_GROUP, SYNC_VERSION, correlationId(), CLIENT_ID, {
    groupId,
    generationId,
    memberId,
    groupInstanceId: null,
    assignments: assignedMemberIds.map((id, i) => ({
      memberId: id,
      assignment: encodeAssignment({
        partitions: [
          { topic: TOPICS[0], partition: i },
          { topic: TOPICS[1], partition: i },
        ],
      }),
    })),
  });
}

/** The assignment a SyncGroup v3 answer carries: its bytes' length (0 = none). */
export function syncAssignmentBytes(frame: Buffer): number {
  return (decodeResponseBody(SYNC_GROUP, SYNC_VERSION, frame).assignment as Buffer).length;
}

export function heartbeatFrame(groupId: string, generationId: number, memberId: string): Buffer {
  return encodeRequest(HEARTBEAT, HEARTBEAT_VERSION, correlationId(), CLIENT_ID, {
    groupId,
    generationId,
    memberId,
    groupInstanceId: null,
  });
}

/**
 * `connections.length` dynamic members form `groupId`: each sends JoinGroup without a member id (answered
 * MEMBER_ID_REQUIRED), rejoins with it, and all SyncGroup, the leader with everyone's assignment. The
 * group ends Stable at generation 1 (its first rebalance waits the initial delay for everyone).
 */
export async function formKafkaGroup(
  connections: readonly KafkaFrameConnection[],
  groupId: string,
): Promise<KafkaGroup> {
  const first = await Promise.all(connections.map((c) => c.request(joinFrame(groupId, ''))));
  const memberIds = first.map((frame, i) => {
    const answer = decodeJoin(frame);
    expectCode(`first JoinGroup of ${groupId}/${i}`, answer.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
    return answer.memberId;
  });
  const joined = (
    await Promise.all(connections.map((c, i) => c.request(joinFrame(groupId, memberIds[i]!))))
  ).map(decodeJoin);
  for (const answer of joined) expectCode(`JoinGroup of ${groupId}`, answer.errorCode, ErrorCode.NONE);
  const { leader, generationId } = joined[0]!;
  const synced = await Promise.all(
    connections.map((c, i) =>
      c.request(syncFrame(groupId, generationId, memberIds[i]!, memberIds[i] === leader ? memberIds : [])),
    ),
  );
  for (const frame of synced) {
    expectCode(`SyncGroup of ${groupId}`, frame.readInt16BE(8), ErrorCode.NONE);
    if (syncAssignmentBytes(frame) === 0) throw new Error(`a member of ${groupId} got no assignment`);
  }
  return { groupId, memberIds, leaderId: leader, generationId };
}

/**
 * Forms `count` groups of `size` members named `${prefix}-NNNNN`, `parallel` groups at a time, each
 * worker with `size` connections of its own from `pool` (which needs parallel × size connections).
 */
export async function formKafkaGroups(
  pool: readonly KafkaFrameConnection[],
  prefix: string,
  count: number,
  size: number,
): Promise<KafkaGroup[]> {
  const parallel = Math.floor(pool.length / size);
  if (parallel < 1) throw new Error(`${pool.length} connections cannot form groups of ${size}`);
  const groups: KafkaGroup[] = new Array(count);
  let next = 0;
  const worker = async (w: number): Promise<void> => {
    const own = pool.slice(w * size, (w + 1) * size);
    while (next < count) {
      const g = next++;
      groups[g] = await formKafkaGroup(own, `${prefix}-${String(g).padStart(5, '0')}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, (_, w) => worker(w)));
  return groups;
}
