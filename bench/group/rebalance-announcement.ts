import { join } from 'node:path';
import { RoundSet } from '../support/round-set';
import type { AnnouncementPlan, AnnouncementTiming } from './announcement-child';
import type { RawAnnouncementPlan } from './announcement-raw';
import { startChild } from './child-rpc';
import { startBenchServer, type BenchServer } from './server-process';

/**
 * How fast a rebalance reaches a Stable group (issue 16): 100 SDK members (`CohortClient.join` in a client
 * process of their own, bench/group/announcement-child.ts; grpc-js transport, the eager range assignor over
 * 200 partitions) heartbeat every 3 s; once each has heartbeated in the group's generation (the server
 * counts the answers), a 101st member joins, and the clock runs from its `join` to the moment every one
 * of the 101 holds its assignment (state `stable`, `assigned` in one new generation, every partition handed
 * out once). Each round does it four times against the same server (bench/group/server-child.ts, which
 * serves HeartbeatStream as createServer does), in a fresh group each time, the order rotating round by
 * round: SDK members with `heartbeatOverStream` (the coordinator pushes REBALANCE_IN_PROGRESS down every
 * member's stream the moment the rebalance starts) and with unary heartbeats (each member learns from its
 * next heartbeat), each in a client process of its own; and, as the references that tell the server's,
 * grpc-js's and the SDK's shares apart, stream members played by the bench's raw HTTP/2 client and by
 * bare grpc-js calls, in the same kind of client process (bench/group/announcement-raw.ts).
 *
 * The newcomer joins right after the generation's heartbeats were answered, where a unary member's next
 * heartbeat is furthest away: the unary figure is about one interval by construction, the worst case a
 * Stable group meets. The 100 members formed together, so their heartbeats are close in phase.
 */

export const ANNOUNCEMENT_MEMBERS = 100;
export const ANNOUNCEMENT_HEARTBEAT_INTERVAL_MS = 3_000;
const SESSION_TIMEOUT_MS = 30_000;
const PARTITIONS = 200;

/**
 * `stream` and `unary`: SDK members with and without `heartbeatOverStream`; `raw` and `grpcjs`: the
 * references, the same rebalance with stream members played by the bench's raw HTTP/2 client or by bare
 * grpc-js calls (bench/group/announcement-raw.ts).
 */
export type AnnouncementMode = 'stream' | 'unary' | 'raw' | 'grpcjs';
const MODES: readonly AnnouncementMode[] = ['stream', 'unary', 'raw', 'grpcjs'];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (polling the server's counts) until `count` more heartbeats were answered NONE. */
async function heartbeatsAnswered(server: BenchServer, from: number, count: number): Promise<void> {
  while ((await server.counts()).heartbeatsOk < from + count) await sleep(20);
}

async function oneRebalance(
  server: BenchServer,
  mode: AnnouncementMode,
  groupId: string,
): Promise<AnnouncementTiming> {
  const members = startChild(join(__dirname, 'announcement-child.ts'));
  try {
    if (mode === 'raw' || mode === 'grpcjs') {
      const plan: RawAnnouncementPlan = {
        target: server.target,
        groupId,
        members: ANNOUNCEMENT_MEMBERS,
        partitions: PARTITIONS,
        client: mode === 'raw' ? 'raw-http2' : 'grpc-js',
      };
      return await members.request<AnnouncementTiming>('bare', plan);
    }
    const plan: AnnouncementPlan = {
      target: server.target,
      groupId,
      members: ANNOUNCEMENT_MEMBERS,
      partitions: PARTITIONS,
      heartbeatIntervalMs: ANNOUNCEMENT_HEARTBEAT_INTERVAL_MS,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatOverStream: mode === 'stream',
    };
    const before = (await server.counts()).heartbeatsOk;
    await members.request('form', plan);
    // Every member heartbeats once in this generation (on a stream, that makes the coordinator watch it).
    await heartbeatsAnswered(server, before, ANNOUNCEMENT_MEMBERS);
    // Streams must really be in use on one side only (a member falls back to unary on UNIMPLEMENTED).
    const streamsOpen = (await server.memory()).heartbeatStreams;
    const expected = mode === 'stream' ? ANNOUNCEMENT_MEMBERS : 0;
    if (streamsOpen !== expected) {
      throw new Error(`${mode}: ${streamsOpen} HeartbeatStreams open, expected ${expected}`);
    }
    const timing = await members.request<AnnouncementTiming>('join');
    await members.request('close');
    return timing;
  } finally {
    await members.stop();
  }
}

export async function rebalanceAnnouncement(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const server = await startBenchServer({ initialDelayMs: 1_000 });
  const set = new RoundSet();
  try {
    for (let r = 0; r < rounds; r++) {
      // Each round starts with the next mode (balanced when the rounds are a multiple of the modes).
      const modes = MODES.map((_, k) => MODES[(r + k) % MODES.length]);
      const parts: string[] = [];
      for (const mode of modes) {
        const timing = await oneRebalance(server, mode, `announcement-${mode}-${r}`);
        set.record(`${mode}Ms`, timing.ms);
        set.record(`${mode}ClientCpuMs`, timing.clientCpuMs);
        set.record(`${mode}LastRevokedMs`, timing.lastRevokedMs);
        parts.push(
          `${mode} ${timing.ms.toFixed(1)} ms (members told ${timing.firstRevokedMs.toFixed(1)}–` +
            `${timing.lastRevokedMs.toFixed(1)} ms in; client CPU ${timing.clientCpuMs.toFixed(1)} ms)`,
        );
      }
      log(`  round ${r + 1}: every member assigned in the new generation after ${parts.join(', ')}`);
    }
    return set;
  } finally {
    await server.stop();
  }
}
