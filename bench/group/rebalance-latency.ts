import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../../src/errors';
import { median } from '../support/stats';
import { RoundSet } from '../support/round-set';
import { BenchChannels } from './bench-channels';
import { codecs, formGroup, rebalance, type Codecs } from './group-driver';
import { Http2Channels } from './http2-channels';
import { RawHttp2Channels } from './raw-http2-channels';
import { startBenchServer } from './server-process';
import type { UnaryChannels } from './unary-channels';

/**
 * Rebalance latency of one group of N members over real gRPC on loopback: each round, every member rejoins
 * with a changed subscription and syncs as soon as its JoinGroup is answered. Measured on the client from
 * the moment the last JoinGroup is sent (all are issued in one synchronous loop, encoded beforehand) to the
 * last JoinGroup answer and to the last SyncGroup answer. The server reports the longest event-loop delay
 * during the round (monitorEventLoopDelay, 1 ms resolution): the longest task the rebalance ran.
 *
 * The client must not be the bottleneck, and on this machine it shares two cores with the server, so its
 * CPU lengthens a round as much as the server's. A grpc-js call costs its client several times what the
 * server spends on it, and Node's http2 client about as much as the server (166 ms of CPU per 1,000-member
 * round against the server's 159). By default the calls go out on HTTP/2 spoken directly on TCP sockets
 * (`RawHttp2Channels`: about 26 ms of CPU per such round); `--client=http2` uses Node's http2 sessions
 * (`Http2Channels`) and `--client=grpc-js` grpc-js clients. Every client sends pre-encoded requests and
 * decodes and checks every answer. There are 4 connections (`--channels=N`). Few channels also shape the
 * server's work: each connection carries N/4 calls, so one socket read brings the server hundreds of
 * JoinGroups at once, where real consumers would each have their own connection. There is no baseline
 * implementation of a rebalance; as the same-run reference, each round first times a sequential Noop round
 * trip on the same channels.
 */

export const REBALANCE_SIZES = [10, 100, 1_000, 5_000] as const;
/** Client connections, unless `--channels=N` says otherwise: few, because the client is the bottleneck. */
export const DEFAULT_REBALANCE_CHANNELS = 4;
const NOOP_PROBES = 21;

export interface RebalanceShape {
  readonly rounds: number;
  readonly sizes: readonly number[];
  readonly cpuProfileDir?: string;
  readonly channels: number;
  readonly client: RebalanceClient;
  /** The server's maxCallsPerLoopTurn (0 = no cap); default the server's default. */
  readonly maxCallsPerLoopTurn?: number;
}

export const REBALANCE_CLIENTS = ['raw-http2', 'http2', 'grpc-js'] as const;
export type RebalanceClient = (typeof REBALANCE_CLIENTS)[number];
export const REBALANCE_CLIENT_LABELS: Record<RebalanceClient, string> = {
  'raw-http2': 'HTTP/2 connections spoken on raw sockets',
  http2: 'Node http2 sessions',
  'grpc-js': 'grpc-js channels',
};

async function noopRoundTripMs(channels: UnaryChannels, c: Codecs): Promise<number> {
  const request = c.noop.encodeRequest({
    groupId: 'probe',
    generationId: 0,
    memberId: 'probe',
    groupInstanceId: '',
  });
  const samples: number[] = [];
  for (let i = 0; i < NOOP_PROBES; i++) {
    const t0 = performance.now();
    const response = await channels.call(0, c.noop.path, request, c.noop.decodeResponse);
    samples.push(performance.now() - t0);
    if (response.errorCode !== ErrorCode.NONE) throw new Error('Noop answered an error');
  }
  return median(samples);
}

/**
 * Figures per size: `n<N>JoinMs`, `n<N>SyncMs` (client), `n<N>ServerJoinMs`, `n<N>MaxTaskCpuMs`,
 * `n<N>MaxTaskLoopGcMs` (the GC pauses inside the longest main-thread task) and `n<N>MaxTaskLoopWithoutGcMs`
 * (that task without them), `n<N>MaxLoopDelayMs`, `n<N>NoopRttMs`, and the CPU a round cost each side
 * (`n<N>ServerCpuMs`, `n<N>ServerMainThreadCpuMs`, `n<N>ClientCpuMs`: from issuing the JoinGroups to the
 * last SyncGroup answer, the server's window a little wider, as it opens and closes over IPC). Both
 * processes share the machine's cores, so the client's CPU lengthens a round as much as the server's does.
 */
export async function rebalanceLatency(
  shape: RebalanceShape,
  log: (text: string) => void,
): Promise<RoundSet> {
  const server = await startBenchServer({
    initialDelayMs: 500,
    cpuProfileDir: shape.cpuProfileDir,
    ...(shape.maxCallsPerLoopTurn === undefined ? {} : { maxCallsPerLoopTurn: shape.maxCallsPerLoopTurn }),
  });
  const channels: UnaryChannels =
    shape.client === 'raw-http2'
      ? new RawHttp2Channels(server.target, shape.channels)
      : shape.client === 'http2'
        ? new Http2Channels(server.target, shape.channels)
        : new BenchChannels(server.target, shape.channels);
  const c = codecs();
  const rounds = new RoundSet();
  try {
    for (const size of shape.sizes) {
      const group = await formGroup(channels, c, `rebalance-${size}`, size);
      await rebalance(channels, c, group); // warm-up: JIT, connection windows
      for (let r = 0; r < shape.rounds; r++) {
        const rttMs = await noopRoundTripMs(channels, c);
        await server.loopStart();
        const clientCpu = process.cpuUsage();
        const timing = await rebalance(channels, c, group);
        const clientCpuUsed = process.cpuUsage(clientCpu);
        const probe = await server.loopStop();
        rounds.record(`n${size}JoinMs`, timing.joinMs);
        rounds.record(`n${size}SyncMs`, timing.syncMs);
        rounds.record(`n${size}SendMs`, timing.sendMs);
        // The server's own share: from the last JoinGroup it received to the last JoinGroup it answered.
        rounds.record(`n${size}ServerJoinMs`, probe.lastJoinAnsweredMs - probe.lastJoinReceivedMs);
        rounds.record(`n${size}MaxTaskCpuMs`, probe.maxTaskCpuMs);
        rounds.record(`n${size}MaxTaskLoopCpuMs`, probe.maxTaskLoopCpuMs);
        rounds.record(`n${size}MaxTaskLoopGcMs`, probe.maxTaskLoopGcMs);
        rounds.record(
          `n${size}MaxTaskLoopWithoutGcMs`,
          Math.max(0, probe.maxTaskLoopCpuMs - probe.maxTaskLoopGcMs),
        );
        rounds.record(`n${size}MaxLoopDelayMs`, probe.maxDelayMs);
        rounds.record(`n${size}NoopRttMs`, rttMs);
        rounds.record(`n${size}ServerCpuMs`, probe.cpuMs);
        rounds.record(`n${size}ServerMainThreadCpuMs`, probe.mainThreadCpuMs);
        rounds.record(`n${size}ClientCpuMs`, (clientCpuUsed.user + clientCpuUsed.system) / 1_000);
        if (shape.cpuProfileDir !== undefined) {
          const [fromUs, toUs] = probe.maxTaskAtUs;
          log(
            `    round ${r + 1}: longest task ${probe.maxTaskCpuMs.toFixed(1)} ms CPU at hrtime µs ${fromUs}..${toUs}`,
          );
        }
      }
      const m = (name: string): string => rounds.median(`n${size}${name}`).toFixed(1);
      log(
        `  ${size} members: sending ${m('SendMs')} ms, then join ${m('JoinMs')} ms (server ${m('ServerJoinMs')} ms), ` +
          `sync ${m('SyncMs')} ms, ` +
          `longest task ${m('MaxTaskCpuMs')} ms CPU (${m('MaxTaskLoopCpuMs')} ms main thread, ` +
          `${m('MaxTaskLoopGcMs')} ms of it GC pause) / ` +
          `${m('MaxLoopDelayMs')} ms loop delay, ` +
          `noop rtt ${rounds.median(`n${size}NoopRttMs`).toFixed(2)} ms; ` +
          `CPU per round: server ${m('ServerCpuMs')} ms (${m('ServerMainThreadCpuMs')} ms main thread), ` +
          `client ${m('ClientCpuMs')} ms`,
      );
    }
    return rounds;
  } finally {
    channels.close();
    await server.stop();
  }
}
