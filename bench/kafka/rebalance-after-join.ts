import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../../src/errors';
import { codecs, formGroup, joinRequest, syncRequest, type FormedGroup } from '../group/group-driver';
import { RawHttp2Channels } from '../group/raw-http2-channels';
import { RoundSet } from '../support/round-set';
import { closeConnections, openConnections, responseErrorCodeAt } from './kafka-frames';
import {
  decodeJoin,
  formKafkaGroup,
  heartbeatFrame,
  joinFrame,
  syncAssignmentBytes,
  syncFrame,
} from './kafka-group-driver';
import { startKafkaBenchServer } from './server-process';

/**
 * A member joins a Stable group of REBALANCE_MEMBERS Kafka-protocol members (issue 31 §3): the time until
 * all hold their new assignment, over the Kafka door, and over the gRPC door as the same-run reference.
 *
 * The members are the bench's cheap clients: raw Kafka frames (JoinGroup v5, SyncGroup v3, Heartbeat v3),
 * each member on a connection of its own, as Kafka consumers are; on the gRPC side the same calls through
 * bench:group's raw HTTP/2 client on GRPC_CONNECTIONS connections. Each round forms a fresh group of
 * REBALANCE_MEMBERS on each door (generation 1, Stable), then the clock starts: the newcomer sends
 * JoinGroup without a member id (MEMBER_ID_REQUIRED), rejoins with it (its JoinGroup parks: the rebalance
 * has begun), and at that moment every member heartbeats. A classic-protocol member hears of a rebalance
 * only in a Heartbeat answer (REBALANCE_IN_PROGRESS), so a real member would hear at its next heartbeat,
 * up to heartbeat.interval.ms (3 s by default) later; here every member heartbeats at once, which takes the
 * interval out and leaves the coordinator's own time: a member answered NONE (its heartbeat overtook the
 * newcomer's join) heartbeats again at once; a member told REBALANCE_IN_PROGRESS rejoins; each JoinGroup
 * answer (generation 2 for all) sends a SyncGroup, the leader's with an assignment for all 101 members.
 * The clock stops when the last of the 101 SyncGroup answers (each NONE, each with an assignment) arrives.
 * All frames but the leader's SyncGroup are encoded before the clock starts. The sides alternate.
 */

export const REBALANCE_MEMBERS = 100;
const GRPC_CONNECTIONS = 4;

interface JoinResult {
  readonly errorCode: number;
  readonly generationId: number;
  readonly memberId: string;
  readonly leader: string;
  readonly memberIds: readonly string[];
}

/** One door's calls for one round's group; slot REBALANCE_MEMBERS is the newcomer. */
interface DoorRound {
  readonly memberIds: readonly string[];
  readonly generationId: number;
  /** The newcomer's JoinGroup; `onSent` runs once it is on its way. */
  join(slot: number, memberId: string, onSent?: () => void): Promise<JoinResult>;
  heartbeat(slot: number): Promise<number>;
  rejoin(slot: number): Promise<JoinResult>;
  /** SyncGroup at `generationId`; the leader's carries everyone's assignment. Resolves with its code. */
  sync(slot: number, memberId: string, generationId: number, assignTo: readonly string[]): Promise<number>;
}

interface Timing {
  readonly ms: number;
  readonly heartbeatsAnsweredNone: number;
}

/** The newcomer joins, everyone heartbeats at once; resolves when all REBALANCE_MEMBERS + 1 are assigned. */
async function rebalanceAfterJoin(door: DoorRound): Promise<Timing> {
  const expectedGeneration = door.generationId + 1;
  let heartbeatsAnsweredNone = 0;
  let assigned = 0;
  const t0 = performance.now();
  const onJoined = async (slot: number, memberId: string, join: JoinResult): Promise<void> => {
    if (join.errorCode !== ErrorCode.NONE || join.generationId !== expectedGeneration) {
      throw new Error(`rejoin of slot ${slot}: ${ErrorCode[join.errorCode]} generation ${join.generationId}`);
    }
    const isLeader = join.leader === memberId;
    if (isLeader && join.memberIds.length !== REBALANCE_MEMBERS + 1) {
      throw new Error(`the leader got ${join.memberIds.length} members`);
    }
    const code = await door.sync(slot, memberId, expectedGeneration, isLeader ? join.memberIds : []);
    if (code !== ErrorCode.NONE) throw new Error(`SyncGroup of slot ${slot}: ${ErrorCode[code]}`);
    assigned++;
  };
  const first = await door.join(REBALANCE_MEMBERS, '');
  if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED)
    throw new Error(`newcomer: ${ErrorCode[first.errorCode]}`);
  const newcomerId = first.memberId;
  let release: () => void = () => undefined;
  const sent = new Promise<void>((resolve) => (release = resolve));
  const newcomer = door
    .join(REBALANCE_MEMBERS, newcomerId, release)
    .then((join) => onJoined(REBALANCE_MEMBERS, newcomerId, join));
  await sent;
  const members = door.memberIds.map(async (memberId, slot) => {
    for (;;) {
      const code = await door.heartbeat(slot);
      if (code === ErrorCode.REBALANCE_IN_PROGRESS) break;
      if (code !== ErrorCode.NONE) throw new Error(`Heartbeat of slot ${slot}: ${ErrorCode[code]}`);
      heartbeatsAnsweredNone++;
    }
    await onJoined(slot, memberId, await door.rejoin(slot));
  });
  await Promise.all([newcomer, ...members]);
  const ms = performance.now() - t0;
  if (assigned !== REBALANCE_MEMBERS + 1) throw new Error(`${assigned} members assigned`);
  return { ms, heartbeatsAnsweredNone };
}

export async function rebalanceAfterJoinRounds(
  rounds: number,
  log: (text: string) => void,
): Promise<RoundSet> {
  const server = await startKafkaBenchServer({ initialDelayMs: 500 });
  let failure: Error | undefined;
  const onFailure = (error: Error): void => {
    failure ??= error;
  };
  const connections = await openConnections('127.0.0.1', server.kafkaPort, REBALANCE_MEMBERS + 1, onFailure);
  const channels = new RawHttp2Channels(server.grpcTarget, GRPC_CONNECTIONS);
  const c = codecs();
  try {
    const kafkaRound = async (groupId: string): Promise<DoorRound> => {
      const group = await formKafkaGroup(connections.slice(0, REBALANCE_MEMBERS), groupId);
      const heartbeats = group.memberIds.map((id) => heartbeatFrame(groupId, group.generationId, id));
      const rejoins = group.memberIds.map((id) => joinFrame(groupId, id));
      const followerSyncs = [...group.memberIds, ''].map((id) =>
        syncFrame(groupId, group.generationId + 1, id, []),
      );
      const asJoin = (frame: Buffer): JoinResult => {
        const answer = decodeJoin(frame);
        return {
          errorCode: answer.errorCode,
          generationId: answer.generationId,
          memberId: answer.memberId,
          leader: answer.leader,
          memberIds: answer.members.map((m) => m.memberId),
        };
      };
      return {
        memberIds: group.memberIds,
        generationId: group.generationId,
        join: (slot, memberId, onSent) => {
          const answer = connections[slot]!.request(joinFrame(groupId, memberId)).then(asJoin);
          onSent?.();
          return answer;
        },
        heartbeat: (slot) => connections[slot]!.request(heartbeats[slot]!).then(responseErrorCodeAt),
        rejoin: (slot) => connections[slot]!.request(rejoins[slot]!).then(asJoin),
        sync: (slot, memberId, generationId, assignTo) => {
          const frame =
            assignTo.length === 0 && slot < REBALANCE_MEMBERS
              ? followerSyncs[slot]!
              : syncFrame(groupId, generationId, memberId, assignTo);
          return connections[slot]!.request(frame).then((answer) => {
            const code = responseErrorCodeAt(answer);
            return code === ErrorCode.NONE && syncAssignmentBytes(answer) === 0
              ? ErrorCode.UNKNOWN_SERVER_ERROR
              : code;
          });
        },
      };
    };

    const grpcRound = async (groupId: string): Promise<DoorRound> => {
      const group: FormedGroup = await formGroup(channels, c, groupId, REBALANCE_MEMBERS);
      const heartbeats = group.memberIds.map((memberId) =>
        c.heartbeat.encodeRequest({
          groupId,
          generationId: group.generationId,
          memberId,
          groupInstanceId: '',
        }),
      );
      const rejoins = group.memberIds.map((id, i) =>
        c.joinGroup.encodeRequest(joinRequest(groupId, id, i, 0)),
      );
      const followerSyncs = group.memberIds.map((id) =>
        c.syncGroup.encodeRequest(syncRequest(group, id, group.generationId + 1, false)),
      );
      const asJoin = (answer: ReturnType<typeof c.joinGroup.decodeResponse>): JoinResult => ({
        errorCode: answer.errorCode,
        generationId: answer.generationId,
        memberId: answer.memberId,
        leader: answer.leaderId,
        memberIds: answer.members.map((m) => m.memberId),
      });
      const call = <Res>(
        slot: number,
        path: string,
        bytes: Buffer,
        decode: (b: Buffer) => Res,
        onSent?: () => void,
      ) => channels.call(slot, path, bytes, decode, onSent);
      return {
        memberIds: group.memberIds,
        generationId: group.generationId,
        join: (slot, memberId, onSent) =>
          call(
            slot,
            c.joinGroup.path,
            c.joinGroup.encodeRequest(joinRequest(groupId, memberId, slot, 0)),
            c.joinGroup.decodeResponse,
            onSent,
          ).then(asJoin),
        heartbeat: (slot) =>
          call(slot, c.heartbeat.path, heartbeats[slot]!, c.heartbeat.decodeResponse).then(
            (r) => r.errorCode,
          ),
        rejoin: (slot) =>
          call(slot, c.joinGroup.path, rejoins[slot]!, c.joinGroup.decodeResponse).then(asJoin),
        sync: (slot, memberId, generationId, assignTo) => {
          const bytes =
            assignTo.length === 0 && slot < REBALANCE_MEMBERS
              ? followerSyncs[slot]!
              : c.syncGroup.encodeRequest(
                  syncRequest(
                    { ...group, memberIds: [...assignTo] },
                    memberId,
                    generationId,
                    assignTo.length > 0,
                  ),
                );
          return call(slot, c.syncGroup.path, bytes, c.syncGroup.decodeResponse).then((r) =>
            r.errorCode === ErrorCode.NONE && r.assignment.length === 0
              ? ErrorCode.UNKNOWN_SERVER_ERROR
              : r.errorCode,
          );
        },
      };
    };

    const set = new RoundSet();
    for (let r = 0; r < rounds; r++) {
      const sides = r % 2 === 0 ? (['kafka', 'grpc'] as const) : (['grpc', 'kafka'] as const);
      for (const side of sides) {
        const groupId = `${side}-rebalance-${r}`;
        const door = side === 'kafka' ? await kafkaRound(groupId) : await grpcRound(groupId);
        const timing = await rebalanceAfterJoin(door);
        if (failure !== undefined) throw failure;
        set.record(`${side}Ms`, timing.ms);
        set.record(`${side}HeartbeatsAnsweredNone`, timing.heartbeatsAnsweredNone);
      }
      const v = (name: string): number => set.values(name)[r]!;
      log(
        `  round ${r + 1}: Kafka door ${v('kafkaMs').toFixed(1)} ms, gRPC door ${v('grpcMs').toFixed(1)} ms ` +
          `(heartbeats answered NONE first: ${v('kafkaHeartbeatsAnsweredNone')} / ${v('grpcHeartbeatsAnsweredNone')})`,
      );
    }
    return set;
  } finally {
    channels.close();
    await closeConnections(connections);
    await server.stop();
  }
}
