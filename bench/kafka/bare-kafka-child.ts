/**
 * The floor of bench:kafka's throughput and memory figures: a bare Node `net` server that reads the same
 * Kafka frames as cohort's door, decodes each with cohort's codec (src/kafka/protocol: header, body, records
 * left as raw bytes as the door leaves them) and answers at once without storing anything: ApiVersions with
 * cohort's list, Metadata naming itself as the leader of partition 0 of every topic asked for, Produce with
 * a base offset counted up per request (the records are neither checked nor kept), Fetch with the record
 * set the parent handed over for its fetch offset (what cohort served for the same request), Heartbeat
 * with NONE. No queue, no log, no coordinator, no metrics: what any Kafka server on Node pays at least for
 * the same requests and connections. It encodes and writes answers as the door does (a record set referenced and
 * written with its frame's head in one writev). Its memory and CPU are read over IPC, as the cohort server
 * child's are.
 *
 * With `--store=DIR` it is the storing floor: it also writes each Produce partition's record bytes to the
 * end of one file in DIR, with the same synchronous write cohort's log uses for a batch (no fsync, as in
 * the throughput section's cohort), and removes DIR at exit. Nothing else changes: the difference between
 * the two floors is what this machine charges any server that stores the bytes it is sent.
 */
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import {
  ADVERTISED_API_VERSIONS,
  API_VERSIONS,
  FETCH,
  HEARTBEAT,
  METADATA,
  PRODUCE,
} from '../../src/kafka/protocol/kafka-apis';
import { decodeRequest, encodeResponseChunks } from '../../src/kafka/protocol/kafka-request';
import type { Struct } from '../../src/kafka/protocol/message-codec';
import { serveParent } from '../group/child-rpc';
import { memoryAfterCollection } from '../support/gc-recorder';
import type { ServerMemory } from './server-child';
import { CpuWindowMeter } from './cpu-window';

const NODE_ID = 0;
/** The record set each Fetch offset is answered with, whatever the topic and partition. */
const fetchRecords = new Map<number, Buffer>();
let nextOffset = 0;
let port = 0;
/** Open sockets, to end them at exit (cohort's listener keeps such a set too). */
const sockets = new Set<Socket>();
const storeDir = process.argv.find((arg) => arg.startsWith('--store='))?.slice('--store='.length);
/** The storing floor's file: written at its end, as a log segment is. */
let storeFd: number | undefined;
let storePosition = 0;
if (storeDir !== undefined) {
  mkdirSync(storeDir, { recursive: true });
  storeFd = openSync(join(storeDir, 'records.log'), 'w');
}

function store(records: Buffer): void {
  let written = 0;
  while (written < records.length) {
    written += writeSync(storeFd!, records, written, records.length - written, storePosition + written);
  }
  storePosition += records.length;
}

function recordsAt(fetchOffset: number): Buffer {
  const records = fetchRecords.get(fetchOffset);
  if (records === undefined) throw new Error(`the floor has no records for offset ${fetchOffset}`);
  return records;
}

function answer(frame: Buffer): Buffer[] | undefined {
  const request = decodeRequest(frame);
  if (request.kind !== 'request') throw new Error(`unsupported request (${JSON.stringify(request)})`);
  const { header, body } = request;
  // As the door encodes them: a Fetch answer's record set is referenced, not copied.
  const respond = (response: Struct): Buffer[] =>
    encodeResponseChunks(request.schema, header.apiVersion, header.correlationId, response);
  switch (header.apiKey) {
    case API_VERSIONS.apiKey:
      return respond({ errorCode: ErrorCode.NONE, apiKeys: ADVERTISED_API_VERSIONS, throttleTimeMs: 0 });
    case METADATA.apiKey: {
      const topics = (body.topics as { name: string }[] | null) ?? [];
      return respond({
        throttleTimeMs: 0,
        brokers: [{ nodeId: NODE_ID, host: '127.0.0.1', port, rack: null }],
        clusterId: 'bare',
        controllerId: NODE_ID,
        topics: topics.map((t) => ({
          errorCode: ErrorCode.NONE,
          name: t.name,
          isInternal: false,
          partitions: [
            {
              errorCode: ErrorCode.NONE,
              partitionIndex: 0,
              leaderId: NODE_ID,
              replicaNodes: [0],
              isrNodes: [0],
            },
          ],
        })),
      });
    }
    case PRODUCE.apiKey: {
      const topicData = body.topicData as {
        name: string;
        partitionData: { index: number; records: Buffer | null }[];
      }[];
      if (storeFd !== undefined) {
        for (const t of topicData) for (const p of t.partitionData) if (p.records !== null) store(p.records);
      }
      if (body.acks === 0) return undefined;
      return respond({
        responses: topicData.map((t) => ({
          name: t.name,
          partitionResponses: t.partitionData.map((p) => ({
            index: p.index,
            errorCode: ErrorCode.NONE,
            baseOffset: nextOffset++,
            logAppendTimeMs: -1,
            logStartOffset: 0,
          })),
        })),
        throttleTimeMs: 0,
      });
    }
    case FETCH.apiKey: {
      const topics = body.topics as {
        topic: string;
        partitions: { partition: number; fetchOffset: number }[];
      }[];
      return respond({
        throttleTimeMs: 0,
        responses: topics.map((t) => ({
          topic: t.topic,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partition,
            errorCode: ErrorCode.NONE,
            highWatermark: Number.MAX_SAFE_INTEGER,
            lastStableOffset: Number.MAX_SAFE_INTEGER,
            logStartOffset: 0,
            abortedTransactions: null,
            records: recordsAt(p.fetchOffset),
          })),
        })),
      });
    }
    case HEARTBEAT.apiKey:
      return respond({ throttleTimeMs: 0, errorCode: ErrorCode.NONE });
    default:
      throw new Error(`the bare server does not answer api key ${header.apiKey}`);
  }
}

/** Size-prefixed framing, as the door does it: chunks joined once a whole frame is there. */
function accept(socket: Socket): void {
  socket.setNoDelay(true);
  sockets.add(socket);
  let chunks: Buffer[] = [];
  let buffered = 0;
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= 4) {
      if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks)];
      const size = chunks[0]!.readInt32BE(0);
      if (buffered < 4 + size) break;
      const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const response = answer(head.subarray(4, 4 + size));
      const rest = head.subarray(4 + size);
      chunks = rest.length === 0 ? [] : [rest];
      buffered = rest.length;
      if (response === undefined) continue;
      if (response.length === 1) {
        socket.write(response[0]!);
      } else {
        socket.cork();
        for (const chunk of response) socket.write(chunk);
        socket.uncork();
      }
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => sockets.delete(socket));
}

const server = createServer(accept);
const listening = new Promise<number>((resolve) =>
  server.listen(0, '127.0.0.1', () => {
    port = (server.address() as AddressInfo).port;
    resolve(port);
  }),
);

const meter = new CpuWindowMeter();

serveParent(
  {
    port: () => listening,
    setFetchRecords: ({ fetchOffset, base64 }: { fetchOffset: number; base64: string }) => {
      fetchRecords.set(fetchOffset, Buffer.from(base64, 'base64'));
    },
    connections: () => sockets.size,
    windowStart: () => meter.start(),
    windowStop: () => meter.stop(),
    memory: (): ServerMemory => memoryAfterCollection(),
  },
  () =>
    new Promise<void>((resolve) => {
      server.close(() => {
        if (storeFd !== undefined) closeSync(storeFd);
        if (storeDir !== undefined) rmSync(storeDir, { recursive: true, force: true });
        resolve();
      });
      for (const socket of sockets) socket.destroy();
    }),
);
