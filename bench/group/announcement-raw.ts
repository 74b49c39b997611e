import { performance } from 'node:perf_hooks';
import { decodeAssignment, encodeAssignment } from '../../src/client/consumer-protocol';
import { ErrorCode } from '../../src/errors';
import type {
  HeartbeatRequest,
  HeartbeatStreamResponse,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  SyncGroupResponse,
} from '../../src/group/group-protocol';
import type { AnnouncementTiming } from './announcement-child';
import { BenchChannels } from './bench-channels';
import { codecs, expectCode, formGroup, joinRequest, type Codecs, type FormedGroup } from './group-driver';
import { RawHttp2Channels, type RawBidiStream, type StreamSink } from './raw-http2-channels';
import type { UnaryChannels } from './unary-channels';
import { benchProtos, methodCodec } from './wire';

/**
 * The rebalance announcement's reference sides: the same rebalance as the SDK sides (a member joins a
 * Stable group of `members` watched stream members; the clock runs from its first JoinGroup to every
 * member of the new generation holding its SyncGroup answer, each partition handed out once), with each
 * member's part played by a bare client on one connection, as the SDK's members share one grpc-js
 * channel: the bench's raw HTTP/2 client (bench/group/raw-http2-channels.ts), or grpc-js without the SDK
 * (bench/group/bench-channels.ts). A member does what an SDK member does when it is told, and no more: on
 * its stream's push it sends its JoinGroup; on the JoinGroup's answer it sends its SyncGroup, the leader
 * with a range assignment of every partition over the members it was given, computed then. Requests are
 * encoded when sent and every answer is decoded and checked; afterwards every member leaves (as the SDK
 * members do on close), so no round leaves members on the server for the next.
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

/** Forms the group, opens and watches every member's stream, then times one newcomer's rebalance. */
export async function rawAnnouncement(plan: RawAnnouncementPlan): Promise<AnnouncementTiming> {
  const channels: MemberChannels =
    plan.client === 'raw-http2' ? new RawHttp2Channels(plan.target, 1) : new BenchChannels(plan.target, 1);
  const run = new BareRebalance(channels, plan);
  try {
    return await run.measure();
  } finally {
    await run.leave();
    channels.close();
  }
}

class BareRebalance {
  private readonly c: Codecs = codecs();
  private readonly leaveGroup = methodCodec<LeaveGroupRequest, LeaveGroupResponse>(
    benchProtos().groupCoordinator,
    'LeaveGroup',
  );
  private readonly decodeStream = methodCodec<HeartbeatRequest, HeartbeatStreamResponse>(
    benchProtos().groupCoordinator,
    'HeartbeatStream',
  ).decodeResponse;
  private group: FormedGroup | undefined;
  /** The group's members in join order, the newcomer last once it has its id. */
  private memberIds: string[] = [];
  private streams: RawBidiStream[] = [];
  private isEnding = false;
  private failure: Error | undefined;
  /** Releases whichever phase waits (the watch, then the rebalance): on completion or on a failure. */
  private wake: () => void = () => undefined;
  private onPush: (member: number) => void = () => this.fail(new Error('a push before the newcomer joined'));

  constructor(
    private readonly channels: MemberChannels,
    private readonly plan: RawAnnouncementPlan,
  ) {}

  async measure(): Promise<AnnouncementTiming> {
    const group = await formGroup(this.channels, this.c, this.plan.groupId, this.plan.members);
    this.group = group;
    this.memberIds = [...group.memberIds];
    await this.watchEveryStream(group);
    return this.timeRebalance(group);
  }

  /** LeaveGroup for every member (each stream half-closed first, so the server ends it). */
  async leave(): Promise<void> {
    this.isEnding = true;
    for (const stream of this.streams) stream.end();
    if (this.group === undefined) return;
    const request = {
      groupId: this.group.groupId,
      members: this.memberIds.map((memberId) => ({ memberId, groupInstanceId: '', reason: 'bench done' })),
    };
    const c = this.leaveGroup;
    await this.channels.call(0, c.path, c.encodeRequest(request), c.decodeResponse).catch(() => undefined);
  }

  private fail(error: unknown): void {
    this.failure ??= error instanceof Error ? error : new Error(String(error));
    this.wake();
  }

  private rethrow(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Opens every member's stream and heartbeats once on it: the coordinator then watches it. */
  private async watchEveryStream(group: FormedGroup): Promise<void> {
    let watched = 0;
    const isWatched = new Promise<void>((resolve) => (this.wake = resolve));
    this.streams = group.memberIds.map((memberId, i) =>
      this.channels.openStream(0, HEARTBEAT_STREAM_PATH, {
        onMessage: (bytes) => {
          try {
            const answer = this.decodeStream(bytes);
            if (Number(answer.sequence) === 0) {
              expectCode(`push to ${memberId}`, answer.errorCode, ErrorCode.REBALANCE_IN_PROGRESS);
              this.onPush(i);
              return;
            }
            expectCode(`stream heartbeat of ${memberId}`, answer.errorCode, ErrorCode.NONE);
            if (++watched === group.memberIds.length) this.wake();
          } catch (error) {
            this.fail(error);
          }
        },
        onEnd: (error) => {
          if (!this.isEnding) this.fail(error ?? new Error(`the server ended ${memberId}'s stream`));
        },
      }),
    );
    for (let i = 0; i < this.streams.length; i++) {
      this.streams[i].send(
        this.c.heartbeat.encodeRequest({
          groupId: group.groupId,
          generationId: group.generationId,
          memberId: group.memberIds[i],
          groupInstanceId: '',
        }),
      );
    }
    await isWatched;
    this.rethrow();
  }

  private async timeRebalance(group: FormedGroup): Promise<AnnouncementTiming> {
    const { c, channels, plan, memberIds } = this;
    const size = group.memberIds.length + 1;
    const nextGeneration = group.generationId + 1;
    const told: number[] = [];
    const owned = new Set<string>();
    let handedOut = 0;
    let synced = 0;
    const isDone = new Promise<void>((resolve) => (this.wake = resolve));

    const sync = (i: number, join: JoinGroupResponse): Promise<void> => {
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
      return channels
        .call(0, c.syncGroup.path, request, c.syncGroup.decodeResponse)
        .then((answer: SyncGroupResponse) => {
          expectCode(`SyncGroup of ${memberIds[i]}`, answer.errorCode, ErrorCode.NONE);
          for (const tp of decodeAssignment(answer.assignment).partitions) {
            owned.add(`${tp.topic}-${tp.partition}`);
            handedOut++;
          }
          if (++synced === size) this.wake();
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
        .catch((error: unknown) => this.fail(error));
    };

    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const isTold = new Array<boolean>(group.memberIds.length).fill(false);
    this.onPush = (i) => {
      if (isTold[i]) return this.fail(new Error(`${memberIds[i]} was told twice of one rebalance`));
      isTold[i] = true;
      told.push(performance.now() - t0);
      join(i);
    };
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
    this.rethrow();
    if (told.length !== group.memberIds.length) {
      throw new Error(
        `${told.length} members were told of the rebalance, expected ${group.memberIds.length}`,
      );
    }
    if (owned.size !== plan.partitions || handedOut !== plan.partitions) {
      throw new Error(
        `${handedOut} partitions handed out, ${owned.size} distinct, expected each of ${plan.partitions} once`,
      );
    }
    told.sort((a, b) => a - b);
    return {
      ms,
      clientCpuMs: (cpu.user + cpu.system) / 1_000,
      firstRevokedMs: told[0],
      lastRevokedMs: told[told.length - 1],
    };
  }
}
