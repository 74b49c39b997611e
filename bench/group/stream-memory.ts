import { join } from 'node:path';
import type { HeartbeatRequest } from '../../src/group/group-protocol';
import { RoundSet } from '../support/round-set';
import type { BareServerMemory } from './bare-http2-child';
import { startChild } from './child-rpc';
import { codecs, heartbeatRequests } from './group-driver';
import {
  formGroups,
  heartbeatOnEveryStream,
  openStreams,
  STREAM_HEARTBEAT_GROUP_SIZE,
} from './heartbeat-stream-throughput';
import { RawHttp2Channels } from './raw-http2-channels';
import { startBenchServer } from './server-process';

/**
 * What a HeartbeatStream adds to the server's memory, per member (issue 16): each round, on a fresh server
 * (bench/group/server-child.ts, HeartbeatStream served as createServer serves it), STREAM_MEMORY_MEMBERS
 * members are formed over gRPC in groups of 10, the server's memory is read after full collections, then
 * every member opens its stream on one of CONNECTIONS connections and heartbeats once on it (the answer
 * puts the stream in the member's watcher slot), and the memory is read again. Bytes per stream =
 * (after − before) ÷ members, for RSS, V8's heapUsed and external memory: grpc-js's call and Node's
 * Http2Stream objects, nghttp2's stream state, the adapter's HeartbeatStream and their buffers, as they
 * stand on an idle stream.
 *
 * Connections are not counted: a member is its own process with its own connection whether it heartbeats
 * unary or over a stream, so a stream adds only what a stream holds. The members' own state is the memory
 * section's figure (100,000 members in-process); the two add up to an idle streaming member.
 *
 * The floor, in the same rounds: the same client opens as many streams, in the same way, to a bare Node http2
 * server (bench/group/bare-http2-child.ts: no grpc-js, no cohort; it holds each stream open and answers
 * each message), whose memory is read the same way. What that server holds per stream is what any gRPC
 * server on Node's http2 holds for one open stream at the least. The bare server's connections are opened,
 * and one stream on each answered, before its first reading, as the cohort side's are by the formation.
 */

export const STREAM_MEMORY_MEMBERS = 10_000;
const CONNECTIONS = 20;

export async function streamMemory(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    const server = await startBenchServer({ initialDelayMs: 1_000 });
    const channels = new RawHttp2Channels(server.target, CONNECTIONS);
    try {
      const groups = await formGroups(channels, STREAM_MEMORY_MEMBERS / STREAM_HEARTBEAT_GROUP_SIZE);
      const requests = heartbeatRequests(groups);
      const c = codecs();
      const encoded = requests.map((request) => c.heartbeat.encodeRequest(request));
      const before = await server.memory();
      let failure: Error | undefined;
      const streams = openStreams(channels, requests, (error) => (failure ??= error));
      await heartbeatOnEveryStream(streams, encoded);
      if (failure !== undefined) throw failure;
      const after = await server.memory();
      if (after.heartbeatStreams !== requests.length) {
        throw new Error(`${after.heartbeatStreams} HeartbeatStreams open, expected ${requests.length}`);
      }
      const per = (a: number, b: number): number => (a - b) / requests.length;
      set.record('rssBytesPerStream', per(after.rssBytes, before.rssBytes));
      set.record('heapBytesPerStream', per(after.heapUsedBytes, before.heapUsedBytes));
      set.record('externalBytesPerStream', per(after.externalBytes, before.externalBytes));
      const bare = await bareStreamMemory(requests.length);
      set.record('bareRssBytesPerStream', bare.rssBytes);
      set.record('bareHeapBytesPerStream', bare.heapUsedBytes);
      set.record('bareExternalBytesPerStream', bare.externalBytes);
      set.record('heapRatioToBare', per(after.heapUsedBytes, before.heapUsedBytes) / bare.heapUsedBytes);
      log(
        `  round ${r + 1}: ${requests.length} streams on ${CONNECTIONS} connections: RSS ` +
          `${Math.round(per(after.rssBytes, before.rssBytes))} B/stream, heap ` +
          `${Math.round(per(after.heapUsedBytes, before.heapUsedBytes))}, external ` +
          `${Math.round(per(after.externalBytes, before.externalBytes))}; bare Node http2 server: RSS ` +
          `${Math.round(bare.rssBytes)}, heap ${Math.round(bare.heapUsedBytes)}, external ` +
          `${Math.round(bare.externalBytes)}`,
      );
    } finally {
      channels.close();
      await server.stop();
    }
  }
  return set;
}

/** Bytes per stream that `count` open, answered streams add to a bare Node http2 server (see above). */
async function bareStreamMemory(count: number): Promise<Omit<BareServerMemory, 'openStreams'>> {
  const child = startChild(join(__dirname, 'bare-http2-child.ts'));
  try {
    const port = await child.request<number>('port');
    const channels = new RawHttp2Channels(`127.0.0.1:${port}`, CONNECTIONS);
    try {
      const c = codecs();
      const requests: HeartbeatRequest[] = Array.from({ length: CONNECTIONS + count }, (_, i) => ({
        groupId: 'bare',
        generationId: 1,
        memberId: `member-${i}`,
        groupInstanceId: '',
      }));
      const encoded = requests.map((request) => c.heartbeat.encodeRequest(request));
      let failure: Error | undefined;
      const onFailure = (error: Error): void => {
        failure ??= error;
      };
      // One answered stream per connection first: every connection is then up before the first reading.
      const warm = requests.slice(0, CONNECTIONS);
      await heartbeatOnEveryStream(openStreams(channels, warm, onFailure), encoded.slice(0, CONNECTIONS));
      const before = await child.request<BareServerMemory>('memory');
      const rest = requests.slice(CONNECTIONS);
      await heartbeatOnEveryStream(openStreams(channels, rest, onFailure), encoded.slice(CONNECTIONS));
      if (failure !== undefined) throw failure;
      const after = await child.request<BareServerMemory>('memory');
      if (after.openStreams !== requests.length) {
        throw new Error(`the bare server holds ${after.openStreams} streams, expected ${requests.length}`);
      }
      return {
        rssBytes: (after.rssBytes - before.rssBytes) / count,
        heapUsedBytes: (after.heapUsedBytes - before.heapUsedBytes) / count,
        externalBytes: (after.externalBytes - before.externalBytes) / count,
      };
    } finally {
      channels.close();
    }
  } finally {
    await child.stop();
  }
}
