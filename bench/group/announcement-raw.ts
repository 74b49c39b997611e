import { performance } from 'node:perf_hooks';
import { decodeAssignment, encodeAssignment } from '../../src/client/consumer-protocol';
import { ErrorCode } from '../../src/errors';
import type {
  HeartbeatRequest,
  HeartbeatStreamResponse,
  JoinGroupResponse,
  SyncGroupResponse,
} from '../../src/group/group-protocol';
import type { AnnouncementTiming } from './announcement-child';
import { codecs, formGroup, joinRequest, type Codecs, type FormedGroup } from './group-driver';
import { BenchChannels } from './bench-channels';
import { RawHttp2Channels, type RawBidiStream, type StreamSink } from './raw-http2-channels';
import type { UnaryChannels } from './unary-channels';
import { benchProtos, methodCodec } from './wire';

/**
 * The rebalance announcement's reference sides: the same rebalance as the SDK sides (a member joins a
 * Stable group of `members` watched stream members; the clock runs from its first JoinGroup to every
 * member of the new generation holding its SyncGroup answer, each partition handed out once), with each
 * member's part played by a bare client on one connection, as the SDK's members share one grpc-js
 * channel: the bench's raw HTTP/2 client (bench/group/raw-http2-channels.ts), or grpc-js without the SDK
 * (bench/group/bench-channels.ts). A member does what an SDK member does when it is told, and
 * no more: on its stream's push it sends its JoinGroup; on the JoinGroup's answer it sends its SyncGroup,
 * the leader with a range assignment of every partition over the members it was given, computed then.
 * Requests are encoded when sent and every answer is decoded and checked.
 *
 * What they show: with the raw client, the coordinator's and the protocol's share of the figure, with
 * members that cost their process little; with bare grpc-js, what grpc-js's calls and streams add; the
 * rest of the stream side's figure is the SDK's own work.
 */

const HEARTBEAT_STREAM_PATH = '/cohort.v1.GroupCoordinator/HeartbeatStream';
const TOPIC = 'orders';

/** Unary calls and bidi streams on a few connections: the raw HTTP/2 client's, or bare grpc-js's. */
interface MemberChannels extends UnaryChannels {
  openStream(channel: number, path: string, sink: StreamSink): RawBidiStream;
}

/**
 * `raw-http2`: the bench's HTTP/2 client on raw sockets; `grpc-js`: a bare grpc-js client (one channel,
 * pre-framed bytes, no Metadata, no call options: what grpc-js costs below any SDK).
 */
export type BareMemberClient = 'raw-http2' | 'grpc-js';

export interface RawAnnouncementPlan {
  readonly target: string;
  readonly groupId: string;
  readonly members: number;
  readonly partitions: number;
  readonly client: BareMemberClient;
}

/** A range assignment of `partitions` partitions of TOPIC over `memberIds` (Kafka's RangeAssignor). */
function rangeAssignments(
  memberIds: readonly string[],
  partitions: number,
): { memberId: string; assignment: Buffer }[] {
  const sorted = [...memberIds].sort();
  const per = Math.floor(partitions / sorted.length);
  const extra = partitions % sorted.length;
  let next = 0;
  return sorted.map((memberId, i) => {
    const count = per + (i < extra ? 1 : 0);
    const owned = Array.from({ length: count }, (_, k) => ({ topic: TOPIC, partition: next + k }));
    next += count;
    return { memberId, assignment: encodeAssignment({ partitions: owned }) };
  });
}

function expectCode(what: string, actual: ErrorCode, expected: ErrorCode): void {
  if (actual !== expected) {
    throw new Error(`${what}: error code ${ErrorCode[actual]} (${actual}), expected ${ErrorCode[expected]}`);
  }
}

/** Forms the group, opens and watches every member's stream, then times one newcomer's rebalance. */
export async function rawAnnouncement(plan: RawAnnouncementPlan): Promise<AnnouncementTiming> {
  const channels: MemberChannels =
    plan.client === 'raw-http2' ? new RawHttp2Channels(plan.target, 1) : new BenchChannels(plan.target, 1);
  let streams: RawBidiStream[] = [];
  try {
    const c = codecs();
    const group = await formGroup(channels, c, plan.groupId, plan.members);
    const decodeStream = methodCodec<HeartbeatRequest, HeartbeatStreamResponse>(
      benchProtos().groupCoordinator,
      'HeartbeatStream',
    ).decodeResponse;
    let failure: Error | undefined;
    const fail = (error: unknown): void => {
      failure ??= error instanceof Error ? error : new Error(String(error));
    };
    let onPush: (member: number) => void = () => fail(new Error('a push before the newcomer joined'));
    let watched = 0;
    let allWatched: () => void = () => undefined;
    const isWatched = new Promise<void>((resolve) => (allWatched = resolve));
    streams = group.memberIds.map((memberId, i) =>
      channels.openStream(0, HEARTBEAT_STREAM_PATH, {
        onMessage: (bytes) => {
          const answer = decodeStream(bytes);
          if (Number(answer.sequence) === 0) {
            expectCode(`push to ${memberId}`, answer.errorCode, ErrorCode.REBALANCE_IN_PROGRESS);
            onPush(i);
            return;
          }
          expectCode(`stream heartbeat of ${memberId}`, answer.errorCode, ErrorCode.NONE);
          if (++watched === group.memberIds.length) allWatched();
        },
        onEnd: (error) => {
          if (error !== undefined) fail(error);
        },
      }),
    );
    // One heartbeat on each stream: the coordinator then watches it, as the SDK sides wait for.
    for (let i = 0; i < streams.length; i++) {
      streams[i].send(
        c.heartbeat.encodeRequest({
          groupId: group.groupId,
          generationId: group.generationId,
          memberId: group.memberIds[i],
          groupInstanceId: '',
        }),
      );
    }
    await isWatched;
    if (failure !== undefined) throw failure;
    return await timeRebalance(
      channels,
      c,
      group,
      plan,
      (handler) => (onPush = handler),
      fail,
      () => failure,
    );
  } finally {
    // Half-closed, the server ends each stream; grpc-js's close would leave open streams running.
    for (const stream of streams) stream.end();
    channels.close();
  }
}

async function timeRebalance(
  channels: MemberChannels,
  c: Codecs,
  group: FormedGroup,
  plan: RawAnnouncementPlan,
  setOnPush: (handler: (member: number) => void) => void,
  fail: (error: unknown) => void,
  failure: () => Error | undefined,
): Promise<AnnouncementTiming> {
  const size = group.memberIds.length + 1;
  const nextGeneration = group.generationId + 1;
  const memberIds = [...group.memberIds];
  const told: number[] = [];
  let synced = 0;
  let owned = 0;
  let done: () => void = () => undefined;
  const isDone = new Promise<void>((resolve) => (done = resolve));

  const sync = (i: number, join: JoinGroupResponse): void => {
    expectCode(`JoinGroup of ${memberIds[i]}`, join.errorCode, ErrorCode.NONE);
    if (join.generationId !== nextGeneration) {
      throw new Error(
        `JoinGroup of ${memberIds[i]}: generation ${join.generationId}, expected ${nextGeneration}`,
      );
    }
    const isLeader = join.leaderId === join.memberId;
    if (isLeader && join.members.length !== size) {
      throw new Error(`the leader got ${join.members.length} members, expected ${size}`);
    }
    const request = c.syncGroup.encodeRequest({
      groupId: group.groupId,
      generationId: join.generationId,
      memberId: join.memberId,
      groupInstanceId: '',
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: isLeader
        ? rangeAssignments(
            join.members.map((m) => m.memberId),
            plan.partitions,
          )
        : [],
    });
    channels
      .call(0, c.syncGroup.path, request, c.syncGroup.decodeResponse)
      .then((answer: SyncGroupResponse) => {
        expectCode(`SyncGroup of ${memberIds[i]}`, answer.errorCode, ErrorCode.NONE);
        owned += decodeAssignment(answer.assignment).partitions.length;
        if (++synced === size) done();
      })
      .catch((error: unknown) => {
        fail(error);
        done();
      });
  };
  const join = (i: number): void => {
    channels
      .call(
        0,
        c.joinGroup.path,
        c.joinGroup.encodeRequest(joinRequest(group.groupId, memberIds[i], i, group.metadataVersion)),
        c.joinGroup.decodeResponse,
      )
      .then((answer) => sync(i, answer))
      .catch((error: unknown) => {
        fail(error);
        done();
      });
  };

  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const isTold = new Array<boolean>(group.memberIds.length).fill(false);
  setOnPush((i) => {
    if (isTold[i]) return fail(new Error(`${memberIds[i]} was told twice of one rebalance`));
    isTold[i] = true;
    told.push(performance.now() - t0);
    join(i);
  });
  // The newcomer: KIP-394's MEMBER_ID_REQUIRED round trip, then the JoinGroup that starts the rebalance.
  const first = await channels.call(
    0,
    c.joinGroup.path,
    c.joinGroup.encodeRequest(joinRequest(group.groupId, '', memberIds.length, group.metadataVersion)),
    c.joinGroup.decodeResponse,
  );
  expectCode("the newcomer's first JoinGroup", first.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
  memberIds.push(first.memberId);
  join(memberIds.length - 1);
  await isDone;
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const error = failure();
  if (error !== undefined) throw error;
  if (told.length !== group.memberIds.length) {
    throw new Error(`${told.length} members were told of the rebalance, expected ${group.memberIds.length}`);
  }
  if (owned !== plan.partitions)
    throw new Error(`${owned} partitions handed out, expected ${plan.partitions}`);
  told.sort((a, b) => a - b);
  return {
    ms,
    clientCpuMs: (cpu.user + cpu.system) / 1_000,
    firstRevokedMs: told[0],
    lastRevokedMs: told[told.length - 1],
  };
}
