/**
 * bench:kafka — the Kafka door (issue 31 §3), each figure against its same-run reference:
 *
 * 1. Heartbeat cost (bench/kafka/heartbeat-cost.ts): 10,000 members in 1,000 groups, formed over the Kafka
 *    door, heartbeat over it (Heartbeat v3, the bench's raw Kafka client) and as unary gRPC Heartbeats
 *    (bench:group's raw HTTP/2 client), the same members on the same server in the same rounds. Server CPU
 *    µs per heartbeat, Kafka ÷ gRPC (goal ≤ 0.15), and heartbeats per server core-second.
 * 2. Throughput (bench/kafka/produce-fetch-throughput.ts): Produce of 1 KiB records, acks=1 and acks=-1,
 *    fsync off, and Fetch of the same records, over the Kafka door, against the gRPC door's Produce and
 *    Fetch and against a floor (bench/kafka/bare-kafka-child.ts: a bare Node `net` server that decodes the
 *    same frames with cohort's codec and answers without storing). Goal: Kafka door ≥ 0.5 × the floor.
 *    Fetch is measured with one Fetch outstanding a connection, as consumers fetch, and (for reading) with
 *    two pipelined a connection.
 *    librdkafka's figures (kcat -P, acks=1 and -1, to cohort and to the floor; kcat -C) when kcat is
 *    installed.
 * 3. Rebalance (bench/kafka/rebalance-after-join.ts): a member joins a Stable group of 100 Kafka-protocol
 *    members (raw frames, a connection each) and every member heartbeats at once: the time until all 101
 *    hold their new assignment (goal ≤ 100 ms at the coordinator); the same over the gRPC door.
 * 4. Memory (bench/kafka/connection-memory.ts): 10,000 formed members each open a connection of their own
 *    and heartbeat once: the server's heap (and RSS) per idle member beyond the members themselves, against
 *    a bare `net` server holding the same connections (goal ≤ 1.25 × its heap), beside bench:group's figure
 *    for a gRPC HeartbeatStream member.
 * 5. Start (bench/kafka/start-to-metadata.ts): `npm start` → the first Kafka client's answered Metadata,
 *    against `npm start -- --help` (npm, Node and the TypeScript hook) from spawn to exit.
 *
 * The servers always run in child processes (bench/kafka/server-child.ts is a whole cohort server, built as
 * `npm start` builds it), so their CPU and memory exclude the load generators. Every figure is a median over
 * rounds; ratios are taken round by round (paired), then their median.
 *
 * Run with `npm run bench:kafka` (node --expose-gc). Options: `--rounds=N` (default 5; memory defaults to
 * 3), `--only=heartbeat,throughput,rebalance,memory,start`, `--cpu-prof=DIR` (writes the heartbeat and
 * throughput sections' server children's V8 CPU profiles to DIR), `--page-cache=drop|keep` (whether the
 * throughput section drops the clean page cache before each Produce and Fetch side: drop, the default when
 * run as root, needs root; see bench/kafka/produce-fetch-throughput.ts), `--throughput=produce,fetch,kcat`
 * (which of the throughput section's sides run; all by default). The last line of output is a JSON object
 * of the figures.
 */
import { describeMachine } from './support/machine';
import { line, printFigures, round, table, verdict } from './support/report';
import { HEARTBEAT_GROUP_SIZE, HEARTBEAT_GROUPS, heartbeatCost } from './kafka/heartbeat-cost';
import {
  KCAT_RECORDS,
  produceFetchThroughput,
  RECORD_BYTES,
  RECORDS_PER_REQUEST,
  THROUGHPUT_PARTS,
} from './kafka/produce-fetch-throughput';
import { REBALANCE_MEMBERS, rebalanceAfterJoinRounds } from './kafka/rebalance-after-join';
import { connectionMemory, MEMORY_MEMBERS } from './kafka/connection-memory';
import { startToMetadata } from './kafka/start-to-metadata';
import { argValue, readList, readOnly, readRounds } from './support/bench-args';

const SECTIONS = ['heartbeat', 'throughput', 'rebalance', 'memory', 'start'] as const;

/** Issue 31: a Kafka heartbeat costs the server at most 0.15 of a unary gRPC one. */
const TARGET_HEARTBEAT_CPU_RATIO = 0.15;
/** Issue 31: the Kafka door's Produce and Fetch at least half the floor's, fsync off. */
const TARGET_THROUGHPUT_TO_FLOOR = 0.5;
/** Issue 31: a join into 100 Kafka members is served within 100 ms at the coordinator. */
const TARGET_REBALANCE_MS = 100;
/** Issue 31: an idle Kafka member's connection at most 1.25 × a bare `net` server's. */
const TARGET_MEMORY_TO_FLOOR = 1.25;
/**
 * bench:group's figure for the V8 heap of one open, watched gRPC HeartbeatStream (docs/performance.md,
 * G16: median of three runs, 2026-12-04); quoted for comparison, not measured here.
 */
const GRPC_STREAM_MEMBER_HEAP_BYTES = 5_588;

async function main(): Promise<void> {
  const rounds = readRounds(5);
  const only = readOnly(SECTIONS);
  const cpuProfileDir = argValue('cpu-prof');
  const throughputParts = readList('throughput', THROUGHPUT_PARTS);
  // Dropping needs root; without it the figures include the host's first touch (see produce-fetch-throughput).
  const pageCache = argValue('page-cache') ?? (process.getuid?.() === 0 ? 'drop' : 'keep');
  if (pageCache !== 'keep' && pageCache !== 'drop')
    throw new Error(`--page-cache=keep|drop, not ${pageCache}`);
  const machine = describeMachine();
  const figures: Record<string, unknown> = { bench: 'kafka', date: new Date().toISOString(), rounds };
  const summary: (string | number)[][] = [['target', 'figure', 'goal', 'verdict']];
  const log = (text: string): void => line(text);

  line('bench:kafka — cohort Kafka door');
  line(JSON.stringify(machine));
  Object.assign(figures, { node: machine.node, cpu: machine.cpu, cores: machine.cores });
  line(`rounds: ${rounds}${cpuProfileDir === undefined ? '' : `, server CPU profiles in ${cpuProfileDir}`}`);

  if (only.has('heartbeat')) {
    line();
    line(
      `Heartbeat cost: ${HEARTBEAT_GROUPS * HEARTBEAT_GROUP_SIZE} members in ${HEARTBEAT_GROUPS} groups, ` +
        'Kafka Heartbeat v3 (raw Kafka client) vs unary gRPC Heartbeat (raw HTTP/2 client)',
    );
    const r = await heartbeatCost({ rounds, warmupMs: 1_000, windowMs: 4_000, cpuProfileDir }, log);
    table([
      [
        'door',
        'heartbeats/s',
        'server CPU µs/heartbeat',
        'heartbeats per server core-second',
        'event-loop utilisation',
      ],
      ...(['grpc', 'kafka'] as const).map((side) => [
        side === 'grpc' ? 'gRPC (unary)' : 'Kafka',
        round(r.median(`${side}CallsPerSec`), 0),
        round(r.median(`${side}CpuUsPerCall`), 1),
        round(r.median(`${side}CallsPerCoreSec`), 0),
        round(r.median(`${side}EventLoopUtilization`), 3),
      ]),
    ]);
    const cpuRatio = r.medianRatio('kafkaCpuUsPerCall', 'grpcCpuUsPerCall');
    Object.assign(figures, {
      heartbeatMembers: HEARTBEAT_GROUPS * HEARTBEAT_GROUP_SIZE,
      kafkaHeartbeatCallsPerSec: round(r.median('kafkaCallsPerSec'), 0),
      grpcHeartbeatCallsPerSec: round(r.median('grpcCallsPerSec'), 0),
      kafkaHeartbeatServerCpuUsPerCall: round(r.median('kafkaCpuUsPerCall'), 2),
      grpcHeartbeatServerCpuUsPerCall: round(r.median('grpcCpuUsPerCall'), 2),
      ratioKafkaToGrpcServerCpuPerHeartbeat: round(cpuRatio, 3),
      kafkaHeartbeatsPerServerCoreSec: round(r.median('kafkaCallsPerCoreSec'), 0),
      grpcHeartbeatsPerServerCoreSec: round(r.median('grpcCallsPerCoreSec'), 0),
      ratioKafkaToGrpcHeartbeatsPerServerCore: round(
        r.medianRatio('kafkaCallsPerCoreSec', 'grpcCallsPerCoreSec'),
        2,
      ),
      kafkaHeartbeatEventLoopUtilization: round(r.median('kafkaEventLoopUtilization'), 3),
      grpcHeartbeatEventLoopUtilization: round(r.median('grpcEventLoopUtilization'), 3),
    });
    summary.push([
      'Kafka ÷ gRPC server CPU per heartbeat',
      round(cpuRatio, 3),
      `<= ${TARGET_HEARTBEAT_CPU_RATIO}`,
      verdict(cpuRatio <= TARGET_HEARTBEAT_CPU_RATIO),
    ]);
    summary.push([
      '  Kafka heartbeats per server core-second',
      round(r.median('kafkaCallsPerCoreSec'), 0),
      '(for reading)',
      '',
    ]);
  }

  if (only.has('throughput')) {
    line();
    line(
      `Throughput: ${RECORD_BYTES} B records, ${RECORDS_PER_REQUEST} a request (raw clients), fsync off; ` +
        `librdkafka (kcat) ${KCAT_RECORDS} records a run; page cache ${pageCache === 'drop' ? 'dropped' : 'kept'} before each Produce and Fetch side`,
    );
    figures.pageCache = pageCache;
    const { rounds: r, hasKcat } = await produceFetchThroughput(
      {
        rounds,
        warmupMs: 500,
        windowMs: 2_500,
        cpuProfileDir,
        isPageCacheDropped: pageCache === 'drop',
        parts: throughputParts,
      },
      log,
    );
    // `--throughput` may leave sides out: only the measured ones are reported.
    const isMeasured = (key: string): boolean => r.values(`${key}RecordsPerSec`).length > 0;
    const allSides: [string, string][] = [
      ['kafkaAcks1', 'Produce, Kafka door, acks=1'],
      ['kafkaAcksAll', 'Produce, Kafka door, acks=-1'],
      ['grpcAcks1', 'Produce, gRPC door, acks=1'],
      ['floorAcks1', 'Produce, floor (bare net server)'],
      ['storingFloorAcks1', 'Produce, storing floor (floor + file write)'],
      ...(hasKcat
        ? ([
            ['kcatAcks1', 'Produce, kcat → Kafka door, acks=1'],
            ['kcatAcksAll', 'Produce, kcat → Kafka door, acks=-1'],
            ['kcatFloorAcks1', 'Produce, kcat → floor, acks=1'],
            ['kcatStoringFloorAcks1', 'Produce, kcat → storing floor, acks=1'],
          ] as [string, string][])
        : []),
      ['kafkaFetch', 'Fetch, Kafka door (one a connection)'],
      ['grpcFetch', 'Fetch, gRPC door'],
      ['floorFetch', 'Fetch, floor (bare net server, one a connection)'],
      ['kafkaFetchPipelined', 'Fetch, Kafka door, two pipelined a connection'],
      ['floorFetchPipelined', 'Fetch, floor, two pipelined a connection'],
      ...(hasKcat ? ([['kcatFetch', 'Fetch, kcat ← Kafka door']] as [string, string][]) : []),
    ];
    const sides = allSides.filter(([key]) => isMeasured(key));
    table([
      [
        'side',
        'records/s',
        'MB/s',
        'server CPU µs/record',
        'of it in the kernel',
        'of it collecting',
        'server minor faults/MB',
        'event-loop utilisation',
      ],
      ...sides.map(([key, label]) => [
        label,
        round(r.median(`${key}RecordsPerSec`), 0),
        round(r.median(`${key}MBPerSec`), 1),
        round(r.median(`${key}CpuUsPerRecord`), 2),
        round(r.median(`${key}SystemShare`), 2),
        round(r.median(`${key}GcShare`), 2),
        round(r.median(`${key}MinorFaultsPerMB`), 0),
        round(r.median(`${key}EventLoopUtilization`), 3),
      ]),
    ]);
    for (const [key] of sides) {
      figures[`${key}RecordsPerSec`] = round(r.median(`${key}RecordsPerSec`), 0);
      figures[`${key}ServerCpuUsPerRecord`] = round(r.median(`${key}CpuUsPerRecord`), 2);
    }
    const allRatios: [string, string, string][] = [
      ['ratioKafkaAcks1ToFloorProduce', 'kafkaAcks1', 'floorAcks1'],
      ['ratioKafkaAcksAllToFloorProduce', 'kafkaAcksAll', 'floorAcks1'],
      ['ratioKafkaToGrpcProduce', 'kafkaAcks1', 'grpcAcks1'],
      ['ratioKafkaAcks1ToStoringFloorProduce', 'kafkaAcks1', 'storingFloorAcks1'],
      ['ratioStoringFloorToFloorProduce', 'storingFloorAcks1', 'floorAcks1'],
      ['ratioKafkaToFloorFetch', 'kafkaFetch', 'floorFetch'],
      ['ratioKafkaToGrpcFetch', 'kafkaFetch', 'grpcFetch'],
      ['ratioKafkaToFloorFetchPipelined', 'kafkaFetchPipelined', 'floorFetchPipelined'],
      ...(hasKcat
        ? ([
            ['ratioKcatAcks1ToKcatFloorProduce', 'kcatAcks1', 'kcatFloorAcks1'],
            ['ratioKcatAcksAllToKcatFloorProduce', 'kcatAcksAll', 'kcatFloorAcks1'],
            ['ratioKcatAcks1ToKcatStoringFloorProduce', 'kcatAcks1', 'kcatStoringFloorAcks1'],
            ['ratioKcatStoringFloorToKcatFloorProduce', 'kcatStoringFloorAcks1', 'kcatFloorAcks1'],
          ] as [string, string, string][])
        : []),
    ];
    const ratios = allRatios.filter(([, a, b]) => isMeasured(a) && isMeasured(b));
    for (const [name, a, b] of ratios) {
      figures[name] = round(r.medianRatio(`${a}RecordsPerSec`, `${b}RecordsPerSec`), 3);
    }
    line(ratios.map(([name]) => `${name.replace(/^ratio/, '')} ${figures[name] as number}`).join('; '));
    // The goals, then the ratios printed for reading; each only when both of its sides ran.
    const summarized: [string, string, boolean][] = [
      ['ratioKafkaAcks1ToFloorProduce', 'Produce acks=1, Kafka door ÷ floor', true],
      ['ratioKafkaAcksAllToFloorProduce', 'Produce acks=-1, Kafka door ÷ floor', true],
      ['ratioKafkaToFloorFetch', 'Fetch, Kafka door ÷ floor', true],
      ['ratioKcatAcks1ToKcatFloorProduce', 'Produce acks=1 with kcat, cohort ÷ floor', true],
      ['ratioKcatAcksAllToKcatFloorProduce', 'Produce acks=-1 with kcat, cohort ÷ floor', true],
      ['ratioKafkaAcks1ToStoringFloorProduce', '  Produce acks=1, Kafka door ÷ storing floor', false],
      ['ratioStoringFloorToFloorProduce', '  Produce, storing floor ÷ floor: the file write alone', false],
      [
        'ratioKcatAcks1ToKcatStoringFloorProduce',
        '  Produce acks=1 with kcat, cohort ÷ storing floor',
        false,
      ],
      ['ratioKcatStoringFloorToKcatFloorProduce', '  Produce with kcat, storing floor ÷ floor', false],
      ['ratioKafkaToGrpcProduce', '  Produce acks=1, Kafka door ÷ gRPC door', false],
      ['ratioKafkaToGrpcFetch', '  Fetch, Kafka door ÷ gRPC door', false],
      ['ratioKafkaToFloorFetchPipelined', '  Fetch pipelined two a connection, Kafka door ÷ floor', false],
    ];
    for (const [name, label, isGoal] of summarized) {
      if (!(name in figures)) continue;
      const value = figures[name] as number;
      summary.push(
        isGoal
          ? [label, value, `>= ${TARGET_THROUGHPUT_TO_FLOOR}`, verdict(value >= TARGET_THROUGHPUT_TO_FLOOR)]
          : [label, value, '(for reading)', ''],
      );
    }
  }

  if (only.has('rebalance')) {
    line();
    line(
      `Rebalance: a member joins a Stable group of ${REBALANCE_MEMBERS} members (raw clients), every member ` +
        'heartbeats at once; until all hold their new assignment',
    );
    const r = await rebalanceAfterJoinRounds(rounds, log);
    table([
      ['door', 'ms (median)', 'worst round, ms'],
      ['Kafka', round(r.median('kafkaMs'), 1), round(r.max('kafkaMs'), 1)],
      ['gRPC (unary)', round(r.median('grpcMs'), 1), round(r.max('grpcMs'), 1)],
    ]);
    Object.assign(figures, {
      rebalanceMembers: REBALANCE_MEMBERS,
      rebalanceKafkaMs: round(r.median('kafkaMs'), 1),
      rebalanceKafkaMsWorstRound: round(r.max('kafkaMs'), 1),
      rebalanceGrpcMs: round(r.median('grpcMs'), 1),
      rebalanceGrpcMsWorstRound: round(r.max('grpcMs'), 1),
      ratioRebalanceKafkaToGrpc: round(r.medianRatio('kafkaMs', 'grpcMs'), 3),
    });
    summary.push([
      `join into ${REBALANCE_MEMBERS} Kafka members → all assigned`,
      round(r.median('kafkaMs'), 1),
      `<= ${TARGET_REBALANCE_MS} ms`,
      verdict(r.median('kafkaMs') <= TARGET_REBALANCE_MS),
    ]);
    summary.push(['  same over the gRPC door', round(r.median('grpcMs'), 1), '(reference)', '']);
  }

  if (only.has('memory')) {
    line();
    line(`Memory: ${MEMORY_MEMBERS} idle members, one Kafka connection each, one Heartbeat answered on each`);
    const memoryRounds = readRounds(3);
    const r = await connectionMemory(memoryRounds, log);
    const b = (name: string): number => round(r.median(name), 0);
    table([
      ['bytes per idle member (median)', 'cohort (Kafka door)', 'bare net server (floor)'],
      ['V8 heap used', b('heapBytesPerMember'), b('bareHeapBytesPerMember')],
      ['RSS', b('rssBytesPerMember'), b('bareRssBytesPerMember')],
      ['external', b('externalBytesPerMember'), b('bareExternalBytesPerMember')],
    ]);
    const heapRatio = r.medianRatio('heapBytesPerMember', 'bareHeapBytesPerMember');
    line(
      `  reference: a gRPC HeartbeatStream member holds ${GRPC_STREAM_MEMBER_HEAP_BYTES} B of heap (bench:group, ` +
        'stream-memory; not measured here)',
    );
    Object.assign(figures, {
      memoryRounds,
      memoryMembers: MEMORY_MEMBERS,
      memoryHeapBytesPerMember: b('heapBytesPerMember'),
      memoryRssBytesPerMember: b('rssBytesPerMember'),
      memoryExternalBytesPerMember: b('externalBytesPerMember'),
      memoryBareHeapBytesPerMember: b('bareHeapBytesPerMember'),
      memoryBareRssBytesPerMember: b('bareRssBytesPerMember'),
      ratioMemoryHeapToBare: round(heapRatio, 3),
      ratioMemoryHeapToGrpcStreamMember: round(
        r.median('heapBytesPerMember') / GRPC_STREAM_MEMBER_HEAP_BYTES,
        3,
      ),
    });
    summary.push([
      'heap per idle Kafka member ÷ bare net server',
      round(heapRatio, 3),
      `<= ${TARGET_MEMORY_TO_FLOOR}`,
      verdict(heapRatio <= TARGET_MEMORY_TO_FLOOR),
    ]);
    summary.push([
      '  heap per idle member: Kafka door vs gRPC stream member',
      `${b('heapBytesPerMember')} vs ${GRPC_STREAM_MEMBER_HEAP_BYTES} B`,
      '(reference)',
      '',
    ]);
  }

  if (only.has('start')) {
    line();
    line('Start: `npm start` → first Kafka Metadata answered, against `npm start -- --help` (spawn → exit)');
    const r = await startToMetadata(rounds, log);
    table([
      ['from spawn', 'ms (median)', 'worst round, ms'],
      [
        'npm start → first Metadata',
        round(r.median('startToMetadataMs'), 0),
        round(r.max('startToMetadataMs'), 0),
      ],
      ['npm start -- --help → exit', round(r.median('helpMs'), 0), round(r.max('helpMs'), 0)],
    ]);
    Object.assign(figures, {
      startToFirstMetadataMs: round(r.median('startToMetadataMs'), 0),
      startHelpMs: round(r.median('helpMs'), 0),
      ratioStartToMetadataToHelp: round(r.medianRatio('startToMetadataMs', 'helpMs'), 2),
    });
    summary.push([
      'npm start → first Kafka Metadata, ms',
      round(r.median('startToMetadataMs'), 0),
      '(no goal)',
      '',
    ]);
  }

  line();
  table(summary);
  printFigures(figures);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  },
);
