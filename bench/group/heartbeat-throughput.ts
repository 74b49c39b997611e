import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import type { HeartbeatRequest } from '../../src/group/group-protocol';
import { Random } from '../support/random';
import { RoundSet } from '../support/round-set';
import { BenchChannels } from './bench-channels';
import { codecs, formGroup, heartbeatRequests, type Codecs, type FormedGroup } from './group-driver';
import { createLoadGenerator, type LoadGenerator } from './load-generator';
import type { BenchServer } from './server-process';
import { startBenchServer } from './server-process';
import { grpcFrame, NOOP_PATH } from './wire';

/**
 * Heartbeat throughput: 10,000 members in 1,000 groups of 10, formed over gRPC (KIP-394 join, rejoin, sync)
 * and left Stable with 30-minute sessions, so nobody expires during the run. Each round drives the
 * server's Noop and its Heartbeat at saturation, one after the other (the side that goes first
 * alternates), with the same load generator and the same member bodies. The server counts what it
 * answered and its own CPU in a window that opens after a warm-up; the ratio is taken round by round.
 * Each round also times coordinator.heartbeat called directly in the server process on every member's
 * decoded request (20 passes over the 10,000 members, no gRPC): the coordinator's own cost per call,
 * without the transport's noise.
 */

export const HEARTBEAT_GROUPS = 1_000;
export const HEARTBEAT_GROUP_SIZE = 10;
const FORMING_CONCURRENCY = 250;
const SAMPLE_MEMBERS = 200;

export interface HeartbeatShape {
  readonly rounds: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly lanes: number;
  readonly streamsPerLane: number;
  /** h2load requests per run, i.e. per member visited: fewer means more members per window. */
  readonly requestsPerRun: number;
  readonly cpuProfileDir?: string;
}

export interface HeartbeatFigures {
  readonly loader: string;
  readonly rounds: RoundSet;
  readonly membersFormed: number;
  readonly membersDriven: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function formAll(channels: BenchChannels, c: Codecs): Promise<FormedGroup[]> {
  const groups: FormedGroup[] = new Array(HEARTBEAT_GROUPS);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < HEARTBEAT_GROUPS) {
      const g = next++;
      groups[g] = await formGroup(
        channels,
        c,
        `heartbeat-${String(g).padStart(4, '0')}`,
        HEARTBEAT_GROUP_SIZE,
      );
    }
  };
  await Promise.all(Array.from({ length: FORMING_CONCURRENCY }, worker));
  return groups;
}

/** A real grpc-js client checks a sample of members: Heartbeat and Noop must both answer OK with NONE. */
async function sampleMembers(
  channels: BenchChannels,
  c: Codecs,
  requests: readonly HeartbeatRequest[],
  random: Random,
): Promise<void> {
  const checks: Promise<void>[] = [];
  for (let i = 0; i < SAMPLE_MEMBERS; i++) {
    const request = c.heartbeat.encodeRequest(requests[random.int(0, requests.length - 1)]);
    for (const codec of [c.heartbeat, c.noop]) {
      checks.push(
        channels.call(i, codec.path, request, codec.decodeResponse).then((response) => {
          if (response.errorCode !== ErrorCode.NONE) {
            throw new Error(`${codec.path} answered ${ErrorCode[response.errorCode]} for a formed member`);
          }
        }),
      );
    }
  }
  await Promise.all(checks);
}

async function expectAllStable(server: BenchServer): Promise<void> {
  const summary = await server.groupSummary();
  const expectedMembers = HEARTBEAT_GROUPS * HEARTBEAT_GROUP_SIZE;
  if (summary.byState.Stable !== HEARTBEAT_GROUPS || summary.members !== expectedMembers) {
    throw new Error(
      `expected ${HEARTBEAT_GROUPS} Stable groups of ${expectedMembers} members, got ${JSON.stringify(summary)}`,
    );
  }
}

type Side = 'noop' | 'heartbeat';

async function measureSide(
  server: BenchServer,
  load: LoadGenerator,
  side: Side,
  shape: HeartbeatShape,
  rounds: RoundSet,
): Promise<number> {
  const path = side === 'noop' ? NOOP_PATH : '/cohort.v1.GroupCoordinator/Heartbeat';
  const before = await server.counts();
  const run = await load.start(server.target, path);
  await sleep(shape.warmupMs);
  await server.windowStart();
  await sleep(shape.windowMs);
  const window = await server.windowStop();
  const sent = await run.stop();
  const after = await server.counts();

  // Every answer the load generator saw must be one the server counted, of the side under test, and a
  // success: grpc-status OK (the adapter answered with a response) and error code NONE.
  const heartbeats = after.heartbeatsOk - before.heartbeatsOk;
  const noops = after.noopCalls - before.noopCalls;
  const served = side === 'noop' ? noops : heartbeats;
  const otherSide = side === 'noop' ? heartbeats : noops;
  const otherCodes = Object.entries(after.heartbeatsOther).filter(
    ([code, count]) => count !== (before.heartbeatsOther[code] ?? 0),
  );
  if (sent.failed !== 0 || sent.answered !== served || otherSide !== 0 || otherCodes.length > 0) {
    throw new Error(
      `${side}: the load generator got ${sent.answered} answers (${sent.failed} failed), the server counted ` +
        `${served} successes, ${otherSide} calls of the other side, other codes ${JSON.stringify(otherCodes)}`,
    );
  }
  const calls = side === 'noop' ? window.noopCalls : window.heartbeatsOk;
  rounds.record(`${side}CallsPerSec`, calls / (window.wallUs / 1e6));
  rounds.record(`${side}CpuUsPerCall`, window.cpuUs / calls);
  rounds.record(`${side}EventLoopUtilization`, window.eventLoopUtilization);
  return sent.members;
}

export async function heartbeatThroughput(
  shape: HeartbeatShape,
  log: (text: string) => void,
): Promise<HeartbeatFigures> {
  const server = await startBenchServer({ initialDelayMs: 1_000, cpuProfileDir: shape.cpuProfileDir });
  const channels = new BenchChannels(server.target, 4);
  const bodyDir = mkdtempSync(join(tmpdir(), 'cohort-bench-heartbeat-'));
  const c = codecs();
  let load: LoadGenerator | undefined;
  try {
    const t0 = Date.now();
    const groups = await formAll(channels, c);
    await expectAllStable(server);
    log(`formed ${HEARTBEAT_GROUPS} groups of ${HEARTBEAT_GROUP_SIZE} in ${Date.now() - t0} ms`);

    const requests = heartbeatRequests(groups);
    const random = new Random(0x5eed);
    const order = random.permutation(requests.length);
    const bodyFiles: string[] = [];
    for (const index of order) {
      const file = join(bodyDir, `${index}.bin`);
      writeFileSync(file, grpcFrame(c.heartbeat.encodeRequest(requests[index])));
      bodyFiles.push(file);
    }
    load = createLoadGenerator(
      {
        lanes: shape.lanes,
        streamsPerLane: shape.streamsPerLane,
        requestsPerRun: shape.requestsPerRun,
        bodyFiles,
      },
      log,
    );
    await sampleMembers(channels, c, requests, random);

    const rounds = new RoundSet();
    let membersDriven = 0;
    for (let r = 0; r < shape.rounds; r++) {
      const sides: Side[] = r % 2 === 0 ? ['noop', 'heartbeat'] : ['heartbeat', 'noop'];
      for (const side of sides) {
        const members = await measureSide(server, load, side, shape, rounds);
        if (side === 'heartbeat') membersDriven += members;
      }
      const direct = await server.inProcessHeartbeat(20);
      rounds.record('inProcessHeartbeatNsPerCall', direct.heartbeatNsPerCall);
      rounds.record('inProcessNoopNsPerCall', direct.noopNsPerCall);
      log(
        `  round ${r + 1}: noop ${Math.round(rounds.values('noopCallsPerSec')[r])}/s ` +
          `(${rounds.values('noopCpuUsPerCall')[r].toFixed(1)} µs CPU), heartbeat ` +
          `${Math.round(rounds.values('heartbeatCallsPerSec')[r])}/s ` +
          `(${rounds.values('heartbeatCpuUsPerCall')[r].toFixed(1)} µs CPU); in-process ` +
          `coordinator.heartbeat ${Math.round(direct.heartbeatNsPerCall)} ns`,
      );
    }
    await sampleMembers(channels, c, requests, random);
    await expectAllStable(server);
    // Sides draw members from one shared cursor, so heartbeat windows never repeat a member until it wraps.
    return {
      loader: load.label,
      rounds,
      membersFormed: requests.length,
      membersDriven: Math.min(membersDriven, requests.length),
    };
  } finally {
    await load?.close();
    channels.close();
    await server.stop();
    rmSync(bodyDir, { recursive: true, force: true });
  }
}
