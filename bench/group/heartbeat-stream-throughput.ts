import { ErrorCode } from '../../src/errors';
import type { HeartbeatRequest, HeartbeatStreamResponse } from '../../src/group/group-protocol';
import { RoundSet } from '../support/round-set';
import { codecs, formGroup, heartbeatRequests, type FormedGroup } from './group-driver';
import { RawHttp2Channels, type RawBidiStream } from './raw-http2-channels';
import { startBenchServer, type BenchServer } from './server-process';
import { benchProtos, methodCodec } from './wire';

/**
 * Heartbeats over HeartbeatStreams against unary Heartbeats (issue 16): the same members, the same client,
 * the same server, in the same rounds.
 *
 * 1,000 groups of 10 dynamic members are formed over gRPC (as the heartbeat section forms them, 30-minute
 * sessions) and every member opens its HeartbeatStream, which stays open for the whole run. The client is
 * the bench's raw HTTP/2 client (bench/group/raw-http2-channels.ts) on 4 connections: it costs the server
 * less than grpc-js would (no extra frames, no pings) and the client little, so the server saturates. A
 * side keeps IN_FLIGHT heartbeats outstanding, each for the next member in one fixed order: `unary` sends
 * a Heartbeat call, `stream` a message on that member's stream; an answer sends the next one. Each side
 * runs a warm-up, then the server measures a window: the heartbeats it answered NONE and its own CPU
 * (process.cpuUsage of the server process: its main thread and V8's helpers). Per round:
 * - server CPU µs per heartbeat, and the stream ÷ unary ratio;
 * - heartbeats per second per server core: heartbeats ÷ CPU-seconds the server spent (the reciprocal of
 *   the first figure, as a rate), and its ratio;
 * - heartbeats per second of wall clock and the server's event-loop utilisation (1 = saturated).
 * Every answer must be NONE, on a stream with the sequence number it is owed, and the server must have
 * counted exactly the heartbeats the client saw answered; anything else fails the bench.
 */

export const STREAM_HEARTBEAT_GROUPS = 1_000;
export const STREAM_HEARTBEAT_GROUP_SIZE = 10;
const CONNECTIONS = 4;
const IN_FLIGHT = 256;
const FORMING_CONCURRENCY = 250;
const HEARTBEAT_STREAM_PATH = '/cohort.v1.GroupCoordinator/HeartbeatStream';

export interface StreamHeartbeatShape {
  readonly rounds: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly cpuProfileDir?: string;
}

type Side = 'unary' | 'stream';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One member's stream, and who waits for each of its answers, in order. */
export interface MemberStream {
  readonly stream: RawBidiStream;
  /** Answers received: the next one must carry this plus one. */
  answered: number;
  /** Called with each answer, in order (the driver's continuation). */
  readonly waiting: (() => void)[];
}

/** Drives one side at a constant IN_FLIGHT until stopped; counts what was answered. */
class Driver {
  answered = 0;
  private next = 0;
  private isRunning = false;
  private inFlight = 0;
  private drained: (() => void) | undefined;
  failure: Error | undefined;

  constructor(
    private readonly send: (member: number, onAnswer: () => void) => void,
    private readonly members: number,
  ) {}

  start(): void {
    this.isRunning = true;
    for (let i = 0; i < IN_FLIGHT; i++) this.issue();
  }

  /** Stops issuing and resolves once every heartbeat in flight is answered. */
  stop(): Promise<void> {
    this.isRunning = false;
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }

  fail(error: Error): void {
    this.failure ??= error;
  }

  private issue(): void {
    const member = this.next;
    this.next = (this.next + 1) % this.members;
    this.inFlight++;
    this.send(member, this.onAnswer);
  }

  private readonly onAnswer = (): void => {
    this.inFlight--;
    this.answered++;
    if (this.isRunning && this.failure === undefined) this.issue();
    else if (this.inFlight === 0) this.drained?.();
  };
}

/** Forms `count` groups of STREAM_HEARTBEAT_GROUP_SIZE, FORMING_CONCURRENCY at a time. */
export async function formGroups(channels: RawHttp2Channels, count: number): Promise<FormedGroup[]> {
  const c = codecs();
  const groups: FormedGroup[] = new Array(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const g = next++;
      const groupId = `stream-heartbeat-${String(g).padStart(5, '0')}`;
      groups[g] = await formGroup(channels, c, groupId, STREAM_HEARTBEAT_GROUP_SIZE);
    }
  };
  await Promise.all(Array.from({ length: FORMING_CONCURRENCY }, worker));
  return groups;
}

/** Opens one HeartbeatStream per member; each answer is checked (NONE, the sequence owed) as it arrives. */
export function openStreams(
  channels: RawHttp2Channels,
  requests: readonly HeartbeatRequest[],
  onFailure: (error: Error) => void,
): MemberStream[] {
  const decode = methodCodec<HeartbeatRequest, HeartbeatStreamResponse>(
    benchProtos().groupCoordinator,
    'HeartbeatStream',
  ).decodeResponse;
  return requests.map((request, i) => {
    const member: MemberStream = {
      stream: undefined as unknown as RawBidiStream,
      answered: 0,
      waiting: [],
    };
    (member as { stream: RawBidiStream }).stream = channels.openStream(i, HEARTBEAT_STREAM_PATH, {
      onMessage: (bytes) => {
        const answer = decode(bytes);
        const sequence = Number(answer.sequence);
        member.answered++;
        if (answer.errorCode !== ErrorCode.NONE || sequence !== member.answered) {
          onFailure(
            new Error(
              `${request.memberId}: stream answer ${ErrorCode[answer.errorCode]} with sequence ` +
                `${sequence}, expected NONE with ${member.answered}`,
            ),
          );
        }
        member.waiting.shift()?.();
      },
      onEnd: (error) => {
        onFailure(error ?? new Error(`${request.memberId}: the server ended its HeartbeatStream`));
        // Whoever waits for an answer on it is released (and finds the failure), rather than never.
        for (const waiter of member.waiting.splice(0)) waiter();
      },
    });
    return member;
  });
}

/** One heartbeat on every stream; resolves when each is answered. */
export function heartbeatOnEveryStream(
  streams: readonly MemberStream[],
  encoded: readonly Buffer[],
): Promise<void> {
  return new Promise<void>((resolve) => {
    let left = streams.length;
    streams.forEach((open, i) => {
      open.waiting.push(() => --left === 0 && resolve());
      open.stream.send(encoded[i]);
    });
  });
}

async function measureSide(
  server: BenchServer,
  driver: Driver,
  side: Side,
  shape: StreamHeartbeatShape,
  rounds: RoundSet,
): Promise<void> {
  const before = await server.counts();
  const answeredBefore = driver.answered;
  driver.start();
  await sleep(shape.warmupMs);
  await server.windowStart();
  await sleep(shape.windowMs);
  const window = await server.windowStop();
  await driver.stop();
  const after = await server.counts();
  if (driver.failure !== undefined) throw driver.failure;
  const served = after.heartbeatsOk - before.heartbeatsOk;
  const answered = driver.answered - answeredBefore;
  const otherCodes = Object.entries(after.heartbeatsOther).filter(
    ([code, count]) => count !== (before.heartbeatsOther[code] ?? 0),
  );
  if (served !== answered || otherCodes.length > 0) {
    throw new Error(
      `${side}: the client saw ${answered} answers, the server counted ${served} successes and other codes ` +
        JSON.stringify(otherCodes),
    );
  }
  const calls = window.heartbeatsOk;
  rounds.record(`${side}CallsPerSec`, calls / (window.wallUs / 1e6));
  rounds.record(`${side}CpuUsPerCall`, window.cpuUs / calls);
  rounds.record(`${side}CallsPerCoreSec`, calls / (window.cpuUs / 1e6));
  rounds.record(`${side}EventLoopUtilization`, window.eventLoopUtilization);
}

export async function heartbeatStreamThroughput(
  shape: StreamHeartbeatShape,
  log: (text: string) => void,
): Promise<RoundSet> {
  const server = await startBenchServer({ initialDelayMs: 1_000, cpuProfileDir: shape.cpuProfileDir });
  const channels = new RawHttp2Channels(server.target, CONNECTIONS);
  try {
    const t0 = Date.now();
    const groups = await formGroups(channels, STREAM_HEARTBEAT_GROUPS);
    const requests = heartbeatRequests(groups);
    log(`formed ${groups.length} groups of ${STREAM_HEARTBEAT_GROUP_SIZE} in ${Date.now() - t0} ms`);

    const c = codecs();
    const encoded = requests.map((request) => c.heartbeat.encodeRequest(request));
    let failure: Error | undefined;
    const onFailure = (error: Error): void => {
      failure ??= error;
    };
    const streams = openStreams(channels, requests, onFailure);
    const unary = new Driver((member, onAnswer) => {
      channels.call(member, c.heartbeat.path, encoded[member], c.heartbeat.decodeResponse).then(
        (response) => {
          if (response.errorCode !== ErrorCode.NONE) {
            unary.fail(new Error(`unary Heartbeat answered ${ErrorCode[response.errorCode]}`));
          }
          onAnswer();
        },
        (error: Error) => {
          unary.fail(error);
          onAnswer();
        },
      );
    }, requests.length);
    const stream = new Driver((member, onAnswer) => {
      const open = streams[member];
      open.waiting.push(onAnswer);
      open.stream.send(encoded[member]);
    }, requests.length);

    // Every member heartbeats once on its stream before the rounds: all streams are open and watched.
    await heartbeatOnEveryStream(streams, encoded);
    if (failure !== undefined) throw failure;
    const open = await server.memory();
    if (open.heartbeatStreams !== requests.length) {
      throw new Error(`${open.heartbeatStreams} HeartbeatStreams open, expected ${requests.length}`);
    }

    const rounds = new RoundSet();
    for (let r = 0; r < shape.rounds; r++) {
      const sides: Side[] = r % 2 === 0 ? ['unary', 'stream'] : ['stream', 'unary'];
      for (const side of sides) {
        await measureSide(server, side === 'unary' ? unary : stream, side, shape, rounds);
        if (failure !== undefined) throw failure;
      }
      const v = (name: string): number => rounds.values(name)[r];
      log(
        `  round ${r + 1}: unary ${Math.round(v('unaryCallsPerSec'))}/s ` +
          `(${v('unaryCpuUsPerCall').toFixed(1)} µs CPU, ELU ${v('unaryEventLoopUtilization').toFixed(2)}), ` +
          `stream ${Math.round(v('streamCallsPerSec'))}/s (${v('streamCpuUsPerCall').toFixed(1)} µs CPU, ` +
          `ELU ${v('streamEventLoopUtilization').toFixed(2)}); stream ÷ unary CPU per heartbeat ` +
          `${(v('streamCpuUsPerCall') / v('unaryCpuUsPerCall')).toFixed(3)}`,
      );
    }
    const summary = await server.groupSummary();
    if (summary.byState.Stable !== STREAM_HEARTBEAT_GROUPS || summary.members !== requests.length) {
      throw new Error(`after the rounds: ${JSON.stringify(summary)}`);
    }
    return rounds;
  } finally {
    channels.close();
    await server.stop();
  }
}
