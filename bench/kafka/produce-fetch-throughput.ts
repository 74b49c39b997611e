import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { CREATE_TOPICS, FETCH, LIST_OFFSETS, PRODUCE } from '../../src/kafka/protocol/kafka-apis';
import { decodeResponseBody, encodeRequest } from '../../src/kafka/protocol/kafka-request';
import { encodeKafkaRecordBatch, KAFKA_LOG_OVERHEAD } from '../../src/kafka/records/kafka-record-batch';
import { loadCohortProtos } from '../../src/server/load-protos';
import { RawHttp2Channels } from '../group/raw-http2-channels';
import { RoundSet } from '../support/round-set';
import { startBareKafkaServer, type BareKafkaServer } from './bare-kafka-process';
import { ClosedLoopDriver, measureWindow, type MeasuredWindow } from './closed-loop-driver';
import { closeConnections, openConnections, type KafkaFrameConnection } from './kafka-frames';
import { correlationId } from './kafka-group-driver';
import { hasKcat, kcatConsume, kcatProduce, writeRecordFile } from './kcat-load';
import { startKafkaBenchServer, type KafkaBenchServer } from './server-process';

/**
 * Produce and Fetch throughput over the Kafka door (issue 31 §3), 1 KiB records, fsync off (the server
 * acknowledges from the page cache), against the same records through the gRPC door's Produce and Fetch
 * and against a floor: bench/kafka/bare-kafka-child.ts, a bare Node `net` server that decodes the same
 * frames with cohort's codec and answers without storing; and for Produce also against the storing floor,
 * the same server writing each request's record bytes to a file as cohort's log writes a batch (what the
 * machine charges for storing them, which the floor does not pay). All in the same rounds, the order of
 * the sides alternating round by round.
 *
 * Load generators (this process; the servers are children, so their CPU is theirs alone):
 * - Kafka: the bench's raw client (bench/kafka/kafka-frames.ts). Produce v7 requests of RECORDS_PER_REQUEST
 *   records in one uncompressed RecordBatch v2, encoded once and written again and again (the door checks
 *   each batch's CRC and appends it; records are not deduplicated), PRODUCE_IN_FLIGHT requests outstanding
 *   on CONNECTIONS connections; acks=1 and acks=-1 (a single node: the leader is the whole ISR). The floor
 *   gets the same frames on as many connections.
 * - gRPC: bench:group's raw HTTP/2 client, Produce requests of the same records (1 KiB values, empty keys,
 *   no headers) encoded once, the same number outstanding.
 * - Fetch: FETCH_WINDOWS fixed offsets FETCH_STRIDE apart in what the Kafka side produced, each asked for
 *   in turn with a 1 MiB partition limit and max wait 0, FETCH_IN_FLIGHT outstanding. Fetch v6 on the
 *   Kafka door, on FETCH_IN_FLIGHT connections with one Fetch outstanding on each, as consumers fetch
 *   (librdkafka, the Java client and KafkaJS wait for a broker's Fetch answer before sending the next);
 *   the gRPC Broker.Fetch for the same offsets; the floor answers each window's Fetch with the record set
 *   cohort's door served for it (the same bytes, 64 MB of them, held in memory), on as many connections. For reading, the same Fetches pipelined two
 *   a connection on CONNECTIONS connections, to the door and to the floor: the door serves a connection's
 *   next request once the answer before it is in the socket (as Kafka mutes a channel), the floor at once.
 *   Answers are counted as bytes; records a window holds are counted once, in a pass before the rounds,
 *   and every later answer must be as long (a gRPC answer give or take a few bytes: its high watermark is
 *   a varint, and the log grows between rounds). Each Fetch side starts after a `sync` too and, with the
 *   page cache dropped, after one untimed read of every window: Fetch is measured from the page cache, as
 *   a consumer near the tail reads, not from the disk.
 * - librdkafka (when `kcat` is installed): `kcat -P` of KCAT_RECORDS lines of 1 KiB from a file, acks=1
 *   and acks=-1, to cohort and (acks=1) to both floors; `kcat -C` of the acks=1 topic from the beginning to
 *   its end. Timed from spawn to exit, process start and metadata included; the offsets are checked.
 * Per side and round: records/s, MB/s of record values (Produce) or of answers (Fetch), and the server's
 * CPU µs per record, with the shares of that CPU spent in the kernel and in collections and the server's
 * minor page faults per MB (bench/kafka/cpu-window.ts).
 *
 * Every Produce side starts on a clean page cache: `sync` runs before it, untimed (`writeBackEarlierSides`).
 * Without it a side paid for the sides before it: a raw Produce side leaves ~0.5–1 GB of dirty pages, and
 * the kernel writes them back (on this 2-core machine, on the core the servers share) during whichever side
 * runs 30 s later. The floor stores nothing and never paid; cohort and the storing floor paid at random,
 * which moved their kcat figures by up to 2× between runs. A side still pays for writing its own bytes.
 *
 * With `--page-cache=drop` (the default as root) the clean page cache is dropped after that `sync`. On
 * this machine (a virtual machine whose memory the host backs on first touch), a page the guest has never
 * used costs about ten times more to write the first time: `dd` of 1 GB into a new file took 3.4 s of
 * system time into never-used memory and 0.3 s into pages freed a moment before. The page cache keeps
 * what every earlier side wrote, so after the first GBs of a run each Produce side writes into never-used
 * memory and pays the host's first touch, which a server that has run for a while does not. Dropped, the
 * earlier sides' pages are free and written again. `--page-cache=keep` (and any run without root) keeps
 * the cache, as the figures in docs/performance.md before K8 were measured, first touch included.
 */

export const RECORD_BYTES = 1_024;
export const RECORDS_PER_REQUEST = 100;
const CONNECTIONS = 4;
const PRODUCE_IN_FLIGHT = 16;
const FETCH_IN_FLIGHT = 8;
const FETCH_MAX_BYTES = 1 << 20;
const FETCH_WINDOWS = 64;
const FETCH_STRIDE = 1_000;
export const KCAT_RECORDS = 100_000;
/** A gRPC Fetch answer's length may move by this much between passes: its high watermark is a varint. */
const GRPC_HIGH_WATERMARK_SLACK_BYTES = 8;
const PRODUCE_VERSION = 7;
const FETCH_VERSION = 6;
const KAFKA_TOPIC = 'kafka-throughput';
const GRPC_TOPIC = 'grpc-throughput';
const PRODUCE_PATH = '/cohort.v1.Broker/Produce';
const FETCH_PATH = '/cohort.v1.Broker/Fetch';

/**
 * Writes back what earlier sides left dirty in the page cache, so that the next side does not pay for it
 * (see the top of this file). Blocks this process (the load generator) until it is done, outside any window.
 */
function writeBackEarlierSides(isPageCacheDropped: boolean): void {
  const result = spawnSync('sync', [], { stdio: 'ignore' });
  if (result.status !== 0)
    throw new Error(`sync failed (${result.error?.message ?? `status ${result.status}`})`);
  if (!isPageCacheDropped) return;
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
  } catch (error) {
    throw new Error(
      `--page-cache=drop writes /proc/sys/vm/drop_caches, which needs root: ${(error as Error).message}`,
    );
  }
}

export interface ThroughputShape {
  readonly rounds: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly cpuProfileDir?: string;
  /** Drop the clean page cache after each `sync` (`--page-cache=drop`; see the top of this file). */
  readonly isPageCacheDropped?: boolean;
  /** Which sides run (`--throughput=produce,fetch,kcat`); all of them unless given. */
  readonly parts?: ReadonlySet<ThroughputPart>;
}

export const THROUGHPUT_PARTS = ['produce', 'fetch', 'kcat'] as const;
export type ThroughputPart = (typeof THROUGHPUT_PARTS)[number];

export interface ThroughputResult {
  readonly rounds: RoundSet;
  readonly hasKcat: boolean;
}

const VALUE = Buffer.alloc(RECORD_BYTES, 'x');

function produceFrame(topic: string, acks: number): Buffer {
  const now = Date.now();
  const batch = encodeKafkaRecordBatch(
    Array.from({ length: RECORDS_PER_REQUEST }, (_, i) => ({
      offset: i,
      timestampMs: now,
      key: null,
      value: VALUE,
      headers: [],
    })),
    { baseOffset: 0, partitionLeaderEpoch: -1 },
  );
  return encodeRequest(PRODUCE, PRODUCE_VERSION, correlationId(), 'bench-kafka', {
    transactionalId: null,
    acks,
    timeoutMs: 30_000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
  });
}

/** A Produce v7 answer's error code for its one topic and partition, read in place. */
function produceErrorCode(frame: Buffer, topic: string): number {
  // correlation id, responses length, topic name (int16 length + bytes), partitions length, index.
  return frame.readInt16BE(4 + 4 + 2 + Buffer.byteLength(topic) + 4 + 4);
}

function fetchFrame(topic: string, fetchOffset: number): Buffer {
  return encodeRequest(FETCH, FETCH_VERSION, correlationId(), 'bench-kafka', {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: FETCH_MAX_BYTES,
    isolationLevel: 0,
    topics: [
      {
        topic,
        partitions: [{ partition: 0, fetchOffset, logStartOffset: -1, partitionMaxBytes: FETCH_MAX_BYTES }],
      },
    ],
  });
}

interface FetchedPartition {
  errorCode: number;
  records: Buffer | null;
}

/** The record set of a Fetch v6 answer's one partition. */
function fetchedRecords(frame: Buffer): Buffer {
  const body = decodeResponseBody(FETCH, FETCH_VERSION, frame) as {
    responses: { partitions: FetchedPartition[] }[];
  };
  const partition = body.responses[0]!.partitions[0]!;
  if (partition.errorCode !== ErrorCode.NONE)
    throw new Error(`Fetch answered ${ErrorCode[partition.errorCode]}`);
  return partition.records ?? Buffer.alloc(0);
}

/** Records in the whole batches of a record set (a last, partial batch is not counted). */
function recordsInBatches(records: Buffer): number {
  let count = 0;
  for (let at = 0; at + 61 <= records.length;) {
    const batchBytes = KAFKA_LOG_OVERHEAD + records.readInt32BE(at + 8);
    if (at + batchBytes > records.length) break;
    count += records.readInt32BE(at + 57);
    at += batchBytes;
  }
  return count;
}

async function createTopics(connection: KafkaFrameConnection, names: readonly string[]): Promise<void> {
  const frame = encodeRequest(CREATE_TOPICS, 2, correlationId(), 'bench-kafka', {
    topics: names.map((name) => ({
      name,
      numPartitions: 1,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })),
    timeoutMs: 30_000,
    validateOnly: false,
  });
  const body = decodeResponseBody(CREATE_TOPICS, 2, await connection.request(frame)) as {
    topics: { name: string; errorCode: number }[];
  };
  for (const topic of body.topics) {
    if (topic.errorCode !== ErrorCode.NONE)
      throw new Error(`CreateTopics ${topic.name}: ${ErrorCode[topic.errorCode]}`);
  }
}

async function latestOffset(connection: KafkaFrameConnection, topic: string): Promise<number> {
  const frame = encodeRequest(LIST_OFFSETS, 1, correlationId(), 'bench-kafka', {
    replicaId: -1,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1 }] }],
  });
  const body = decodeResponseBody(LIST_OFFSETS, 1, await connection.request(frame)) as {
    topics: { partitions: { errorCode: number; offset: number }[] }[];
  };
  const partition = body.topics[0]!.partitions[0]!;
  if (partition.errorCode !== ErrorCode.NONE)
    throw new Error(`ListOffsets ${topic}: ${ErrorCode[partition.errorCode]}`);
  return partition.offset;
}

/**
 * One closed loop of Kafka frames over `connections`, answers checked by `check`: `inFlight` outstanding,
 * item by item across the connections, or (`oneEach`) one outstanding on each connection at a time, as a
 * Kafka consumer fetches (librdkafka, the Java client and KafkaJS each wait for a broker's Fetch answer
 * before the next).
 */
function kafkaDriver(
  connections: readonly KafkaFrameConnection[],
  frameOf: (item: number) => Buffer,
  items: number,
  inFlight: number | 'oneEach',
  check: (item: number, frame: Buffer) => void,
): ClosedLoopDriver {
  const idle = [...connections];
  const driver: ClosedLoopDriver = new ClosedLoopDriver(
    (item, onAnswer) => {
      // With one each, as many are in flight as there are connections: one is idle whenever one is sent.
      const connection = inFlight === 'oneEach' ? idle.pop()! : connections[item % connections.length]!;
      connection.send(frameOf(item), (frame) => {
        if (inFlight === 'oneEach') idle.push(connection);
        try {
          check(item, frame);
        } catch (error) {
          driver.fail(error as Error);
        }
        onAnswer();
      });
    },
    items,
    inFlight === 'oneEach' ? connections.length : inFlight,
  );
  return driver;
}

function grpcDriver<Res>(
  channels: RawHttp2Channels,
  path: string,
  requestOf: (item: number) => Buffer,
  decode: (bytes: Buffer) => Res,
  items: number,
  inFlight: number,
  check: (item: number, response: Res) => void,
): ClosedLoopDriver {
  const driver: ClosedLoopDriver = new ClosedLoopDriver(
    (item, onAnswer) => {
      channels.call(item, path, requestOf(item), decode).then(
        (response) => {
          try {
            check(item, response);
          } catch (error) {
            driver.fail(error as Error);
          }
          onAnswer();
        },
        (error: Error) => {
          driver.fail(error);
          onAnswer();
        },
      );
    },
    items,
    inFlight,
  );
  return driver;
}

export async function produceFetchThroughput(
  shape: ThroughputShape,
  log: (text: string) => void,
): Promise<ThroughputResult> {
  const parts: ReadonlySet<ThroughputPart> = shape.parts ?? new Set(THROUGHPUT_PARTS);
  const isKcat = parts.has('kcat') && hasKcat();
  if (parts.has('kcat') && !isKcat)
    log('  kcat is not installed (apt-get install -y kcat): the librdkafka figures are left out');
  const server: KafkaBenchServer = await startKafkaBenchServer({
    isFsyncOff: true,
    cpuProfileDir: shape.cpuProfileDir,
  });
  const bare: BareKafkaServer = await startBareKafkaServer();
  const fileDir = mkdtempSync(join(tmpdir(), 'cohort-bench-kafka-records-'));
  const storing: BareKafkaServer = await startBareKafkaServer(join(fileDir, 'storing-floor'));
  let failure: Error | undefined;
  const onFailure = (error: Error): void => {
    failure ??= error;
  };
  const cohortConnections = await openConnections('127.0.0.1', server.kafkaPort, CONNECTIONS, onFailure);
  const bareConnections = await openConnections('127.0.0.1', bare.port, CONNECTIONS, onFailure);
  const storingConnections = await openConnections('127.0.0.1', storing.port, CONNECTIONS, onFailure);
  const cohortFetchConnections = await openConnections(
    '127.0.0.1',
    server.kafkaPort,
    FETCH_IN_FLIGHT,
    onFailure,
  );
  const bareFetchConnections = await openConnections('127.0.0.1', bare.port, FETCH_IN_FLIGHT, onFailure);
  const channels = new RawHttp2Channels(server.grpcTarget, CONNECTIONS);
  const broker = loadCohortProtos().broker;
  try {
    const admin = cohortConnections[0]!;
    await createTopics(admin, [KAFKA_TOPIC, GRPC_TOPIC]);

    // --- Produce ---
    const acks1 = produceFrame(KAFKA_TOPIC, 1);
    const acksAll = produceFrame(KAFKA_TOPIC, -1);
    const checkKafkaProduce = (_item: number, frame: Buffer): void => {
      const code = produceErrorCode(frame, KAFKA_TOPIC);
      if (code !== ErrorCode.NONE) throw new Error(`Kafka Produce answered ${ErrorCode[code]}`);
    };
    const grpcProduce = broker.Produce.requestSerialize({
      acks: 1,
      timeoutMs: 30_000,
      topics: [
        {
          name: GRPC_TOPIC,
          partitions: [
            {
              partitionIndex: 0,
              records: Array.from({ length: RECORDS_PER_REQUEST }, () => ({
                timestampMs: Date.now(),
                key: Buffer.alloc(0),
                value: VALUE,
                headers: [],
              })),
            },
          ],
        },
      ],
    });
    type ProduceAnswer = { topics: { partitions: { errorCode: number }[] }[] };
    const decodeProduce = (bytes: Buffer): ProduceAnswer =>
      broker.Produce.responseDeserialize(bytes) as ProduceAnswer;
    const produceDrivers = {
      kafkaAcks1: () =>
        kafkaDriver(cohortConnections, () => acks1, PRODUCE_IN_FLIGHT, PRODUCE_IN_FLIGHT, checkKafkaProduce),
      kafkaAcksAll: () =>
        kafkaDriver(
          cohortConnections,
          () => acksAll,
          PRODUCE_IN_FLIGHT,
          PRODUCE_IN_FLIGHT,
          checkKafkaProduce,
        ),
      grpcAcks1: () =>
        grpcDriver(
          channels,
          PRODUCE_PATH,
          () => grpcProduce,
          decodeProduce,
          PRODUCE_IN_FLIGHT,
          PRODUCE_IN_FLIGHT,
          (_i, r) => {
            const code = r.topics[0]!.partitions[0]!.errorCode;
            if (code !== ErrorCode.NONE) throw new Error(`gRPC Produce answered ${ErrorCode[code]}`);
          },
        ),
      floorAcks1: () =>
        kafkaDriver(bareConnections, () => acks1, PRODUCE_IN_FLIGHT, PRODUCE_IN_FLIGHT, checkKafkaProduce),
      storingFloorAcks1: () =>
        kafkaDriver(storingConnections, () => acks1, PRODUCE_IN_FLIGHT, PRODUCE_IN_FLIGHT, checkKafkaProduce),
    };
    type ProduceSide = keyof typeof produceDrivers;

    // Enough records for every Fetch window before the first round's Fetch.
    const filled = produceDrivers.kafkaAcks1();
    filled.start();
    while ((await latestOffset(admin, KAFKA_TOPIC)) < FETCH_WINDOWS * FETCH_STRIDE + FETCH_STRIDE) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await filled.stop();
    if (filled.failure !== undefined) throw filled.failure;

    // --- Fetch: one pass to count each window's records, and the floor's canned answers ---
    const kafkaFetchFrames = Array.from({ length: FETCH_WINDOWS }, (_, w) =>
      fetchFrame(KAFKA_TOPIC, w * FETCH_STRIDE),
    );
    const kafkaFetchBytes: number[] = [];
    const kafkaFetchRecords: number[] = [];
    for (let w = 0; w < FETCH_WINDOWS; w++) {
      const frame = await cohortConnections[0]!.request(kafkaFetchFrames[w]!);
      kafkaFetchBytes.push(frame.length);
      const records = fetchedRecords(frame);
      kafkaFetchRecords.push(recordsInBatches(records));
      // The floor answers each window with what cohort served for it: the same bytes, from memory.
      await bare.setFetchRecords(w * FETCH_STRIDE, records);
    }
    for (let w = 0; w < FETCH_WINDOWS; w++) {
      const floorBytes = (await bareConnections[0]!.request(kafkaFetchFrames[w]!)).length;
      if (floorBytes !== kafkaFetchBytes[w])
        throw new Error(
          `the floor's Fetch at window ${w}: ${floorBytes} bytes, cohort's ${kafkaFetchBytes[w]}`,
        );
    }
    const grpcFetchRequests = Array.from({ length: FETCH_WINDOWS }, (_, w) =>
      broker.Fetch.requestSerialize({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: FETCH_MAX_BYTES,
        topics: [
          {
            name: KAFKA_TOPIC,
            partitions: [
              { partitionIndex: 0, fetchOffset: w * FETCH_STRIDE, partitionMaxBytes: FETCH_MAX_BYTES },
            ],
          },
        ],
      }),
    );
    const grpcFetchBytes: number[] = [];
    const grpcFetchRecords: number[] = [];
    type FetchAnswer = {
      errorCode: number;
      responses: { partitions: { errorCode: number; records: unknown[] }[] }[];
    };
    for (let w = 0; w < FETCH_WINDOWS; w++) {
      const bytes = await channels.call(0, FETCH_PATH, grpcFetchRequests[w]!, (b) => b);
      const answer = broker.Fetch.responseDeserialize(bytes) as FetchAnswer;
      const partition = answer.responses[0]!.partitions[0]!;
      if (answer.errorCode !== ErrorCode.NONE || partition.errorCode !== ErrorCode.NONE) {
        throw new Error(`gRPC Fetch answered ${ErrorCode[answer.errorCode || partition.errorCode]}`);
      }
      grpcFetchBytes.push(bytes.length);
      grpcFetchRecords.push(partition.records.length);
    }
    const fetchCounted = {
      kafkaFetch: 0,
      grpcFetch: 0,
      floorFetch: 0,
      kafkaFetchPipelined: 0,
      floorFetchPipelined: 0,
    };
    const checkKafkaFetch =
      (side: 'kafkaFetch' | 'kafkaFetchPipelined') =>
      (w: number, frame: Buffer): void => {
        if (frame.length !== kafkaFetchBytes[w])
          throw new Error(`Fetch at window ${w}: ${frame.length} bytes, expected ${kafkaFetchBytes[w]}`);
        fetchCounted[side] += kafkaFetchRecords[w]!;
      };
    const checkFloorFetch =
      (side: 'floorFetch' | 'floorFetchPipelined') =>
      (w: number, frame: Buffer): void => {
        if (frame.length !== kafkaFetchBytes[w])
          throw new Error(
            `floor Fetch at window ${w}: ${frame.length} bytes, expected ${kafkaFetchBytes[w]}`,
          );
        fetchCounted[side] += kafkaFetchRecords[w]!;
      };
    const fetchDrivers = {
      kafkaFetch: () =>
        kafkaDriver(
          cohortFetchConnections,
          (w) => kafkaFetchFrames[w]!,
          FETCH_WINDOWS,
          'oneEach',
          checkKafkaFetch('kafkaFetch'),
        ),
      grpcFetch: () =>
        grpcDriver(
          channels,
          FETCH_PATH,
          (w) => grpcFetchRequests[w]!,
          (b) => b,
          FETCH_WINDOWS,
          FETCH_IN_FLIGHT,
          (w, bytes) => {
            // The high watermark is a varint there: it grows a byte as the Produce rounds lengthen the log.
            if (Math.abs(bytes.length - grpcFetchBytes[w]!) > GRPC_HIGH_WATERMARK_SLACK_BYTES)
              throw new Error(
                `gRPC Fetch at window ${w}: ${bytes.length} bytes, expected ${grpcFetchBytes[w]}`,
              );
            fetchCounted.grpcFetch += grpcFetchRecords[w]!;
          },
        ),
      floorFetch: () =>
        kafkaDriver(
          bareFetchConnections,
          (w) => kafkaFetchFrames[w]!,
          FETCH_WINDOWS,
          'oneEach',
          checkFloorFetch('floorFetch'),
        ),
      kafkaFetchPipelined: () =>
        kafkaDriver(
          cohortConnections,
          (w) => kafkaFetchFrames[w]!,
          FETCH_WINDOWS,
          FETCH_IN_FLIGHT,
          checkKafkaFetch('kafkaFetchPipelined'),
        ),
      floorFetchPipelined: () =>
        kafkaDriver(
          bareConnections,
          (w) => kafkaFetchFrames[w]!,
          FETCH_WINDOWS,
          FETCH_IN_FLIGHT,
          checkFloorFetch('floorFetchPipelined'),
        ),
    };
    type FetchSide = keyof typeof fetchDrivers;
    // Every side but gRPC's answers the same Kafka frames (the floor's are checked to be as long).
    const kafkaFetchBytesPerRecord =
      kafkaFetchBytes.reduce((a, b) => a + b, 0) / kafkaFetchRecords.reduce((a, b) => a + b, 0);
    const grpcFetchBytesPerRecord =
      grpcFetchBytes.reduce((a, b) => a + b, 0) / grpcFetchRecords.reduce((a, b) => a + b, 0);
    log(
      `  Fetch windows: ${FETCH_WINDOWS} offsets, ~${Math.round(kafkaFetchRecords[0]!)} records (Kafka) and ` +
        `${grpcFetchRecords[0]} (gRPC) an answer`,
    );

    const file = join(fileDir, 'records.txt');
    if (isKcat) await writeRecordFile(file, KCAT_RECORDS, RECORD_BYTES);
    const cohortBootstrap = `127.0.0.1:${server.kafkaPort}`;

    const rounds = new RoundSet();
    const record = (side: string, w: MeasuredWindow, records: number, bytes: number): void => {
      rounds.record(`${side}RecordsPerSec`, records / (w.wallUs / 1e6));
      rounds.record(`${side}MBPerSec`, bytes / w.wallUs);
      rounds.record(`${side}CpuUsPerRecord`, w.cpuUs / records);
      rounds.record(`${side}EventLoopUtilization`, w.eventLoopUtilization);
      if (w.systemUs !== undefined) rounds.record(`${side}SystemShare`, w.systemUs / w.cpuUs);
      if (w.minorFaults !== undefined)
        rounds.record(`${side}MinorFaultsPerMB`, w.minorFaults / (bytes / 1e6));
      if (w.gcPauseUs !== undefined) rounds.record(`${side}GcShare`, w.gcPauseUs / w.cpuUs);
    };
    for (let r = 0; r < shape.rounds; r++) {
      const produceSides = parts.has('produce') ? (Object.keys(produceDrivers) as ProduceSide[]) : [];
      if (r % 2 === 1) produceSides.reverse();
      for (const side of produceSides) {
        const target = side === 'floorAcks1' ? bare : side === 'storingFloorAcks1' ? storing : server;
        writeBackEarlierSides(shape.isPageCacheDropped === true);
        const w = await measureWindow(target, produceDrivers[side](), shape.warmupMs, shape.windowMs);
        const records = w.answered * RECORDS_PER_REQUEST;
        record(side, w, records, records * RECORD_BYTES);
      }
      // The first Fetch side after the Produce sides runs slower (the door's, at 0.5-0.75 M records/s, ran
      // at 1.3-1.9 M in the last place in the same runs), so the two sides of each ratio take turns at
      // going first: reversing one order kept the floor's side in the middle and put the door's first in
      // every other round, so three of five paired ratios had the door slowed and the floor not.
      const fetchSides: FetchSide[] = !parts.has('fetch')
        ? []
        : r % 2 === 0
          ? ['kafkaFetch', 'floorFetch', 'kafkaFetchPipelined', 'floorFetchPipelined', 'grpcFetch']
          : ['floorFetch', 'kafkaFetch', 'floorFetchPipelined', 'kafkaFetchPipelined', 'grpcFetch'];
      for (const side of fetchSides) {
        const target = side === 'floorFetch' || side === 'floorFetchPipelined' ? bare : server;
        // A Fetch side reads what the fill wrote, from the page cache as a consumer at the tail does: the
        // Produce sides' dirty pages are written back first (or the kernel writes them during this side),
        // and with the cache dropped every window is read once, untimed, back into it.
        writeBackEarlierSides(shape.isPageCacheDropped === true);
        if (shape.isPageCacheDropped === true) {
          for (const frame of kafkaFetchFrames) await cohortConnections[0]!.request(frame);
        }
        const driver = fetchDrivers[side]();
        driver.start();
        await new Promise((resolve) => setTimeout(resolve, shape.warmupMs));
        await target.windowStart();
        const before = fetchCounted[side];
        await new Promise((resolve) => setTimeout(resolve, shape.windowMs));
        const records = fetchCounted[side] - before;
        const window = await target.windowStop();
        await driver.stop();
        if (driver.failure !== undefined) throw driver.failure;
        record(
          side,
          { answered: 0, ...window },
          records,
          records * (side === 'grpcFetch' ? grpcFetchBytesPerRecord : kafkaFetchBytesPerRecord),
        );
      }
      if (isKcat) {
        const kcatSides: [string, string, number, BareKafkaServer | KafkaBenchServer][] = [
          ['kcatAcks1', `kcat-r${r}-acks1`, 1, server],
          ['kcatAcksAll', `kcat-r${r}-acksall`, -1, server],
          ['kcatFloorAcks1', `kcat-r${r}-floor`, 1, bare],
          ['kcatStoringFloorAcks1', `kcat-r${r}-storing-floor`, 1, storing],
        ];
        if (r % 2 === 1) kcatSides.reverse();
        await createTopics(admin, [`kcat-r${r}-acks1`, `kcat-r${r}-acksall`]);
        for (const [side, topic, acks, target] of kcatSides) {
          const bootstrap =
            target === server ? cohortBootstrap : `127.0.0.1:${(target as BareKafkaServer).port}`;
          writeBackEarlierSides(shape.isPageCacheDropped === true);
          await target.windowStart();
          const ms = await kcatProduce(bootstrap, topic, file, acks);
          const window = await target.windowStop();
          if (target === server) {
            const end = await latestOffset(admin, topic);
            if (end !== KCAT_RECORDS)
              throw new Error(`kcat produced ${end} records to ${topic}, expected ${KCAT_RECORDS}`);
          }
          record(
            side,
            { answered: 0, ...window, wallUs: ms * 1_000 },
            KCAT_RECORDS,
            KCAT_RECORDS * RECORD_BYTES,
          );
        }
        // In the rounds where a side ran after the acks=1 side, its drop evicted that side's records: they
        // are read once, untimed, so that kcat reads them from the page cache, as with nothing dropped.
        if (shape.isPageCacheDropped === true) await kcatConsume(cohortBootstrap, `kcat-r${r}-acks1`);
        await server.windowStart();
        const ms = await kcatConsume(cohortBootstrap, `kcat-r${r}-acks1`);
        const window = await server.windowStop();
        record(
          'kcatFetch',
          { answered: 0, ...window, wallUs: ms * 1_000 },
          KCAT_RECORDS,
          KCAT_RECORDS * RECORD_BYTES,
        );
      }
      if (failure !== undefined) throw failure;
      const v = (name: string): string => Math.round(rounds.values(name)[r]!).toLocaleString('en-US');
      const said: string[] = [];
      if (parts.has('produce')) {
        said.push(
          `Produce records/s: Kafka acks=1 ${v('kafkaAcks1RecordsPerSec')}, acks=-1 ` +
            `${v('kafkaAcksAllRecordsPerSec')}, gRPC ${v('grpcAcks1RecordsPerSec')}, floor ${v('floorAcks1RecordsPerSec')}, ` +
            `storing floor ${v('storingFloorAcks1RecordsPerSec')}`,
        );
      }
      if (isKcat) {
        said.push(
          `kcat Produce records/s: acks=1 ${v('kcatAcks1RecordsPerSec')}, acks=-1 ${v('kcatAcksAllRecordsPerSec')}, ` +
            `to the floor ${v('kcatFloorAcks1RecordsPerSec')}`,
        );
      }
      if (parts.has('fetch')) {
        said.push(
          `Fetch records/s: Kafka ${v('kafkaFetchRecordsPerSec')}, gRPC ${v('grpcFetchRecordsPerSec')}, floor ` +
            `${v('floorFetchRecordsPerSec')}; pipelined: Kafka ${v('kafkaFetchPipelinedRecordsPerSec')}, floor ` +
            `${v('floorFetchPipelinedRecordsPerSec')}${isKcat ? `; kcat ${v('kcatFetchRecordsPerSec')}` : ''}`,
        );
      }
      log(`  round ${r + 1}: ${said.join('; ')}`);
    }
    return { rounds, hasKcat: isKcat };
  } finally {
    channels.close();
    await closeConnections([
      ...cohortConnections,
      ...bareConnections,
      ...storingConnections,
      ...cohortFetchConnections,
      ...bareFetchConnections,
    ]);
    await bare.stop();
    await storing.stop();
    await server.stop();
    rmSync(fileDir, { recursive: true, force: true });
  }
}
