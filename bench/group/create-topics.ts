import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import type { Client, GrpcObject, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { encodeSubscription } from '../../src/client/consumer-protocol';
import { ErrorCode } from '../../src/errors';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';
import { RoundSet } from '../support/round-set';
import { startChild } from './child-rpc';
import type { CreateTopicsLoopProbe } from './create-topics-child';

/**
 * Issue 4's scenario: 500 members in 50 groups heartbeat every 2 s with a 6 s session on a cohort server (a
 * child process, built by createServer) while a 10,000-partition CreateTopics runs. Before CreateTopics
 * was sliced, 8,000 partitions froze that server for 5.8 s and 362 of the 500 members were expired.
 *
 * Each round, on a fresh server and data directory: form the groups, let them heartbeat, then
 * - `baseline`: a window of WINDOW_MS with heartbeats only;
 * - `create`: a window from the CreateTopics until WINDOW_MS after its answer (a session's worth, so an
 *   expiry it caused would show).
 * Reported per window: the server's longest event-loop turn (the largest gap of a 1 ms timer chain in the
 * server process, wall clock) and its longest task (the most main-thread CPU in such a gap, which a shared
 * machine's preemption does not inflate); for the create, its duration, the members the server expired and every heartbeat
 * answered with anything but NONE.
 */
export const CREATE_TOPICS_MEMBERS = 500;
export const CREATE_TOPICS_GROUP_SIZE = 10;
export const CREATE_TOPICS_PARTITIONS = 10_000;
const HEARTBEAT_INTERVAL_MS = 2_000;
const SESSION_TIMEOUT_MS = 6_000;
const WINDOW_MS = SESSION_TIMEOUT_MS;
const CHANNELS = 8;

type Callback = (error: ServiceError | null, response: unknown) => void;
type RawUnary = (request: unknown, metadata: Metadata, options: object, callback: Callback) => void;

let cohortPackage: GrpcObject | undefined;

function client(service: 'GroupCoordinator' | 'Broker', target: string): Client {
  cohortPackage ??= loadPackageDefinition(
    loadSync([...PROTO_FILES], { ...PROTO_LOADER_OPTIONS, longs: Number }),
  );
  const Ctor = ((cohortPackage.cohort as GrpcObject).v1 as GrpcObject)[service] as ServiceClientConstructor;
  return new Ctor(target, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
}

function call<Res>(on: Client, method: string, request: unknown, deadlineMs = 120_000): Promise<Res> {
  const fn = (on as unknown as Record<string, RawUnary>)[method]!.bind(on);
  return new Promise<Res>((resolve, reject) =>
    fn(request, new Metadata(), { deadline: Date.now() + deadlineMs }, (error, response) =>
      error !== null ? reject(error) : resolve(response as Res),
    ),
  );
}

interface Member {
  readonly channel: Client;
  readonly groupId: string;
  readonly memberId: string;
  readonly generationId: number;
}

interface JoinAnswer {
  errorCode: number;
  memberId: string;
  generationId: number;
  leaderId: string;
}

async function formGroup(channels: Client[], groupId: string, offset: number): Promise<Member[]> {
  const metadata = encodeSubscription({ topics: ['orders'], userData: null, generationId: -1 });
  const join = (channel: Client, memberId: string) =>
    call<JoinAnswer>(channel, 'JoinGroup', {
      groupId,
      memberId,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      rebalanceTimeoutMs: 30_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata }],
    });
  const mine = Array.from(
    { length: CREATE_TOPICS_GROUP_SIZE },
    (_, i) => channels[(offset + i) % channels.length]!,
  );
  const ids = await Promise.all(mine.map(async (channel) => (await join(channel, '')).memberId));
  const joined = await Promise.all(mine.map((channel, i) => join(channel, ids[i]!)));
  for (const answer of joined) {
    if (answer.errorCode !== ErrorCode.NONE)
      throw new Error(`JoinGroup of ${groupId}: ${ErrorCode[answer.errorCode]}`);
  }
  const synced = await Promise.all(
    joined.map((answer, i) =>
      call<{ errorCode: number }>(mine[i]!, 'SyncGroup', {
        groupId,
        memberId: answer.memberId,
        generationId: answer.generationId,
        assignments: [],
      }),
    ),
  );
  for (const answer of synced) {
    if (answer.errorCode !== ErrorCode.NONE)
      throw new Error(`SyncGroup of ${groupId}: ${ErrorCode[answer.errorCode]}`);
  }
  return joined.map((answer, i) => ({
    channel: mine[i]!,
    groupId,
    memberId: answer.memberId,
    generationId: answer.generationId,
  }));
}

/** Heartbeats every member every HEARTBEAT_INTERVAL_MS, staggered, until stopped; counts what came back. */
class Heartbeats {
  readonly errors = new Map<string, number>();
  answered = 0;
  maxRoundTripMs = 0;
  private isRunning = true;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(members: readonly Member[]) {
    members.forEach((member, i) => this.schedule(member, (i * HEARTBEAT_INTERVAL_MS) / members.length));
  }

  resetCounts(): void {
    this.errors.clear();
    this.answered = 0;
    this.maxRoundTripMs = 0;
  }

  async stop(): Promise<void> {
    this.isRunning = false;
    for (const timer of this.timers) clearTimeout(timer);
    await Promise.all(this.inFlight);
  }

  private schedule(member: Member, delayMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const sentMs = performance.now();
      const beat = call<{ errorCode: number }>(member.channel, 'Heartbeat', {
        groupId: member.groupId,
        memberId: member.memberId,
        generationId: member.generationId,
      })
        .then(
          ({ errorCode }) => {
            if (errorCode !== ErrorCode.NONE) {
              const name = ErrorCode[errorCode] ?? String(errorCode);
              this.errors.set(name, (this.errors.get(name) ?? 0) + 1);
            }
          },
          (error: ServiceError) =>
            this.errors.set(`grpc ${error.code}`, (this.errors.get(`grpc ${error.code}`) ?? 0) + 1),
        )
        .then(() => {
          this.answered++;
          this.maxRoundTripMs = Math.max(this.maxRoundTripMs, performance.now() - sentMs);
          this.inFlight.delete(beat);
          if (this.isRunning) this.schedule(member, HEARTBEAT_INTERVAL_MS);
        });
      this.inFlight.add(beat);
    }, delayMs);
    this.timers.add(timer);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function createTopicsUnderHeartbeats(
  rounds: number,
  log: (line: string) => void,
): Promise<RoundSet> {
  const result = new RoundSet();
  for (let round = 0; round < rounds; round++) {
    const child = startChild(join(__dirname, 'create-topics-child.ts'));
    const channels: Client[] = [];
    try {
      const port = await child.request<number>('port');
      const target = `127.0.0.1:${port}`;
      for (let i = 0; i < CHANNELS; i++) channels.push(client('GroupCoordinator', target));
      const broker = client('Broker', target);
      channels.push(broker);
      const groups = CREATE_TOPICS_MEMBERS / CREATE_TOPICS_GROUP_SIZE;
      const members = (
        await Promise.all(
          Array.from({ length: groups }, (_, g) =>
            formGroup(channels.slice(0, CHANNELS), `create-topics-${g}`, g),
          ),
        )
      ).flat();
      const heartbeats = new Heartbeats(members);
      await sleep(HEARTBEAT_INTERVAL_MS * 2);

      await child.request('loopStart');
      await sleep(WINDOW_MS);
      const baseline = await child.request<CreateTopicsLoopProbe>('loopStop');
      const baselineErrors = [...heartbeats.errors.values()].reduce((a, b) => a + b, 0);
      heartbeats.resetCounts();

      const expiredBefore = await child.request<number>('expirations');
      await child.request('loopStart');
      const t0 = performance.now();
      const created = await call<{ topics: { errorCode: number; errorMessage: string }[] }>(
        broker,
        'CreateTopics',
        {
          topics: [{ name: `wide-${round}`, numPartitions: CREATE_TOPICS_PARTITIONS, replicationFactor: 1 }],
        },
      );
      const createMs = performance.now() - t0;
      await sleep(WINDOW_MS);
      const during = await child.request<CreateTopicsLoopProbe>('loopStop');
      const expired = (await child.request<number>('expirations')) - expiredBefore;
      await heartbeats.stop();
      const topic = created.topics[0]!;
      if (topic.errorCode !== ErrorCode.NONE) {
        throw new Error(`CreateTopics: ${ErrorCode[topic.errorCode]} ${topic.errorMessage}`);
      }
      const heartbeatErrors = [...heartbeats.errors.values()].reduce((a, b) => a + b, 0);
      result.record('createMs', createMs);
      result.record('createLongestTurnMs', during.longestTurnMs);
      result.record('createMaxLoopDelayMs', during.maxDelayMs);
      result.record('createTurnsOver100Ms', during.turnsOver100Ms);
      result.record('baselineLongestTurnMs', baseline.longestTurnMs);
      result.record('createLongestTaskCpuMs', during.longestTaskCpuMs);
      result.record('baselineLongestTaskCpuMs', baseline.longestTaskCpuMs);
      result.record('membersExpired', expired);
      result.record('heartbeatErrors', heartbeatErrors + baselineErrors);
      result.record('maxHeartbeatRoundTripMs', heartbeats.maxRoundTripMs);
      log(
        `  round ${round + 1}: ${CREATE_TOPICS_PARTITIONS} partitions in ${createMs.toFixed(0)} ms; longest turn ` +
          `${during.longestTurnMs.toFixed(1)} ms (baseline ${baseline.longestTurnMs.toFixed(1)} ms), longest task ` +
          `${during.longestTaskCpuMs.toFixed(1)} ms CPU (baseline ${baseline.longestTaskCpuMs.toFixed(1)} ms); ${expired} expired; ` +
          `heartbeat errors ${JSON.stringify(Object.fromEntries(heartbeats.errors))}; ` +
          `slowest heartbeat ${heartbeats.maxRoundTripMs.toFixed(0)} ms`,
      );
    } finally {
      for (const channel of channels) channel.close();
      await child.stop();
    }
  }
  return result;
}
