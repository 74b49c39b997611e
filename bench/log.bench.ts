/**
 * bench:log — the log's claims, each against its baseline in the same run:
 *
 * 1. Long-poll wake: N consumers (1, 100, 1,000) park a Fetch on a cohort leader; one Produce (acks=0,
 *    one 100-byte record) moves the HW; each sample is the time from sending the Produce to one parked
 *    Fetch's response. The baseline is a bare grpc-js server (bench/log-bare-server.ts) whose `Park` calls
 *    hold their callbacks until a `Release` call answers them all: the time from sending Release to each
 *    parked call's response. Both servers are child processes on 127.0.0.1; this process is the client,
 *    and it encodes the Produce before the clock starts and decodes neither side's responses (raw bytes),
 *    so the comparison is of the servers' wake paths. On each side the Produce (Release) goes out on a
 *    connection of its own, as from a producer that is not the consumers' client. Both servers first answer
 *    1,000 quick rounds (warm-up: steady state, not a fresh process's first calls); then the sides
 *    alternate round by round.
 *    Target: cohort ≤ 1.3 × bare at p50 and p99. The children load TypeScript through
 *    scripts/register-typescript.js, not ts-node, which would slow both servers.
 * 2. Produce throughput, acks=1, 1 KB records, fsync before every acknowledgement (the default flush
 *    policy): 32 requests in flight for a few seconds, with 1 and with 100 records per request.
 * 3. Restart (bench/log-restart.ts): spawn → ready of a server on a data directory holding 1,000,000
 *    committed offsets in 10,000 groups and 1 GiB of log, after a clean stop and after kill -9, against the
 *    same server's start on an empty directory and a plain read of every byte of the directory.
 *
 * acks=-1 against acks=1 on a three-replica topic needs a cluster: bench:cluster measures it.
 *
 * Run with `npm run bench:log` (`--quick` for fewer rounds; `--only=wake,throughput,restart` runs
 * the sections named, all three by default, e.g. `npm run bench:log -- --only=restart`). The last line of
 * output is a JSON object of the figures: keys carry their unit, ratios have "ratio" in their key; the
 * restart section's figures sit under `restart`. BENCH_CHILD_NODE_FLAGS adds Node flags to the server
 * children (experiments: `--cpu-prof`, `-r ./probe.js`).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import type { Client, MethodDefinition, ServiceDefinition, ServiceError } from '@grpc/grpc-js';
import { credentials, makeGenericClientConstructor, Metadata } from '@grpc/grpc-js';
import { loadCohortProtos } from '../src/server/load-protos';
import { BARE_SERVICE } from './log-bare-service';
import { benchRestart } from './log-restart';
import { describeMachine } from './support/machine';
import { line, printFigures, round, table, verdict } from './support/report';
import { percentileOfSorted } from './support/stats';

const QUICK = process.argv.includes('--quick');
const SECTIONS = ['wake', 'throughput', 'restart'] as const;
type Section = (typeof SECTIONS)[number];
const RESTART_ROUNDS = QUICK ? 1 : 3;
const REPO_ROOT = path.join(__dirname, '..');
const TRANSPILE_HOOK = path.join(__dirname, '..', 'scripts', 'register-typescript.js');
const WAKE_TARGET_RATIO = 1.3;
/**
 * Parked calls per round, and rounds per side. One parked call gives one sample a round, so that case runs
 * 1,000 rounds: its p99 is then the 10th-worst sample, not the 3rd-worst of 300, whose run-to-run spread
 * (1.10–1.96 × bare in nine runs) said more about where a stray stall landed than about either server.
 * 100 and 1,000 parked calls give that many samples a round.
 */
const WAKE_CASES: readonly { parked: number; rounds: number }[] = QUICK
  ? [
      { parked: 1, rounds: 40 },
      { parked: 100, rounds: 8 },
      { parked: 1_000, rounds: 3 },
    ]
  : [
      { parked: 1, rounds: 1_000 },
      { parked: 100, rounds: 40 },
      { parked: 1_000, rounds: 12 },
    ];
/**
 * Warm-up: both servers first answer this many one-call rounds, a few milliseconds apart, so that what is
 * measured is their steady state (code compiled by V8's optimizing tiers), not the first few hundred calls
 * of a fresh process; then each case starts with WAKE_CASE_WARMUP_ROUNDS rounds of its own.
 */
const WAKE_WARMUP_ROUNDS = QUICK ? 200 : 1_000;
const WAKE_WARMUP_SETTLE_MS = 2;
const WAKE_CASE_WARMUP_ROUNDS = 3;
/** How long after the last Fetch is sent before the Produce goes out: every call has parked by then. */
const PARK_SETTLE_MS = (parked: number): number => 30 + Math.ceil(parked / 10);
const THROUGHPUT_SECONDS = QUICK ? 1 : 3;
const THROUGHPUT_IN_FLIGHT = 32;
const RECORD_1KB = Buffer.alloc(1_024, 'x');
const RECORD_100B = Buffer.alloc(100, 'w');

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };

interface Child {
  readonly process: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

/** Starts a child and resolves once it printed a JSON line with its port (`port` or `"cohort listening"`). */
function startChild(args: readonly string[], name: string): Promise<Child> {
  // Not ts-node: it loads Node's REPL and with it `domain`, which slows every EventEmitter of the servers
  // under test (see scripts/register-typescript.js); a compiled cohort never loads it.
  const extraFlags = process.env.BENCH_CHILD_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, ['-r', TRANSPILE_HOOK, ...extraFlags, ...args], {
    cwd: REPO_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it listened`)));
    createInterface({ input: child.stdout! }).on('line', (text) => {
      let parsed: { port?: number; msg?: string; level?: number } | undefined;
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch {
        return;
      }
      if (parsed?.msg !== undefined && parsed.level !== undefined && parsed.level >= 40)
        line(`${name}: ${text}`);
      if (typeof parsed?.port !== 'number') return;
      if (parsed.msg !== undefined && parsed.msg !== 'cohort listening') return;
      const port = parsed.port;
      resolve({
        process: child,
        port,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
            child.stdin?.end();
          }),
      });
    });
  });
}

function cohortArgs(dataDir: string): string[] {
  // The admin listener is off: a cohort already running on the machine may hold port 7071.
  return [
    'src/main.ts',
    '--listen',
    '127.0.0.1:0',
    '--admin-listen',
    'off',
    '--kafka-listen',
    'off',
    '--data-dir',
    dataDir,
  ];
}

function unary(client: Client, method: string): (request: unknown) => Promise<unknown> {
  const fn = (client as unknown as Record<string, RawUnary>)[method]!.bind(client);
  return (request) =>
    new Promise((resolve, reject) => {
      fn(request, new Metadata(), {}, (error, response) =>
        error !== null ? reject(error) : resolve(response),
      );
    });
}

/**
 * A Broker client. With `raw` (the wake section's client) no encoding or decoding falls inside a timed
 * span, as on the bare side: `produceBytes` sends a request encoded beforehand with `encodeProduce`, and
 * Fetch responses stay undecoded bytes.
 */
function brokerClient(port: number, raw: boolean, ownConnection = false) {
  // grpc-js shares one connection among clients of the same target and options, unless told otherwise.
  const broker = loadCohortProtos().broker;
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(broker))
    definition[name] = method as MethodDefinition<unknown, unknown>;
  const produce = broker.Produce as MethodDefinition<unknown, unknown>;
  if (raw) {
    const fetch = broker.Fetch as MethodDefinition<unknown, unknown>;
    definition.Fetch = { ...fetch, responseDeserialize: (bytes: Buffer) => bytes };
    definition.ProduceBytes = { ...produce, requestSerialize: (bytes: unknown) => bytes as Buffer };
  }
  const Ctor = makeGenericClientConstructor(definition as ServiceDefinition, 'cohort.v1.Broker');
  const client = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    ...(ownConnection ? { 'grpc.use_local_subchannel_pool': 1 } : {}),
  });
  return {
    client,
    createTopics: unary(client, 'CreateTopics'),
    metadata: unary(client, 'Metadata'),
    produce: unary(client, 'Produce') as (request: unknown) => Promise<ProduceResponse>,
    encodeProduce: (request: unknown): Buffer => produce.requestSerialize(request),
    produceBytes: (raw ? unary(client, 'ProduceBytes') : undefined) as (
      bytes: Buffer,
    ) => Promise<ProduceResponse>,
    fetch: unary(client, 'Fetch'),
  };
}

interface ProduceResponse {
  topics: { partitions: { errorCode: number; baseOffset: string }[] }[];
}

function produceRequest(topic: string, acks: number, records: number, value: Buffer) {
  return {
    acks,
    timeoutMs: 30_000,
    topics: [
      {
        name: topic,
        partitions: [
          {
            partitionIndex: 0,
            records: Array.from({ length: records }, () => ({
              timestampMs: 0,
              key: Buffer.alloc(0),
              value,
              headers: [],
            })),
          },
        ],
      },
    ],
  };
}

function checkProduced(response: ProduceResponse): number {
  const partition = response.topics[0]!.partitions[0]!;
  if (partition.errorCode !== 0) throw new Error(`produce failed with error ${partition.errorCode}`);
  return Number(partition.baseOffset);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function percentiles(samples: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentileOfSorted(sorted, 50), p99: percentileOfSorted(sorted, 99) };
}

// --- 1. long-poll wake ---

interface WakeSide {
  /**
   * Parks `parked` calls, waits `settleMs`, and wakes them; resolves with the wake latencies (ms) once
   * all have been answered.
   */
  round(parked: number, settleMs?: number): Promise<number[]>;
  /** Closes the side's clients: later sections run without their channels. */
  close(): void;
}

function cohortWakeSide(port: number): WakeSide {
  const client = brokerClient(port, true);
  // The producer is another client, on its own connection, as a Kafka producer and consumer would be.
  const producer = brokerClient(port, true, true);
  let offset = 0;
  return {
    async round(parked, settleMs = PARK_SETTLE_MS(parked)) {
      const latencies: number[] = [];
      let sentAt = 0;
      const produceBytes = producer.encodeProduce(produceRequest('wake', 0, 1, RECORD_100B));
      const responses = Array.from({ length: parked }, () =>
        client
          .fetch({
            replicaId: -1,
            maxWaitMs: 30_000,
            minBytes: 1,
            maxBytes: 1 << 20,
            topics: [
              {
                name: 'wake',
                partitions: [{ partitionIndex: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20 }],
              },
            ],
          })
          .then((bytes) => {
            latencies.push(performance.now() - sentAt);
            if ((bytes as Buffer).length < RECORD_100B.length)
              throw new Error('a woken fetch carried no record');
          }),
      );
      await sleep(settleMs);
      sentAt = performance.now();
      const produced = producer.produceBytes(produceBytes);
      await Promise.all(responses);
      offset = checkProduced(await produced) + 1;
      return latencies;
    },
    close() {
      client.client.close();
      producer.client.close();
    },
  };
}

function bareWakeSide(port: number): WakeSide {
  const Ctor = makeGenericClientConstructor(BARE_SERVICE, 'bench.Bare');
  const client = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure());
  // Released from another client on its own connection, as cohort's side produces.
  const releaser = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  });
  const park = unary(client, 'Park');
  const release = unary(releaser, 'Release');
  const count = unary(client, 'Count');
  return {
    async round(parked, settleMs = PARK_SETTLE_MS(parked)) {
      const latencies: number[] = [];
      let sentAt = 0;
      const responses = Array.from({ length: parked }, () =>
        park(Buffer.alloc(0)).then(() => latencies.push(performance.now() - sentAt)),
      );
      await sleep(settleMs);
      // A warm-up round's short settle may end before every Park arrived (Release answers only those that
      // did). Measured rounds do not ask: a call just before Release would wake the server up for it.
      if (settleMs < PARK_SETTLE_MS(parked)) {
        while (Number(String(await count(Buffer.alloc(0)))) < parked) await sleep(1);
      }
      sentAt = performance.now();
      const released = Number(String(await release(Buffer.alloc(0))));
      await Promise.all(responses);
      if (released !== parked) throw new Error(`released ${released} parked calls, expected ${parked}`);
      return latencies;
    },
    close() {
      client.close();
      releaser.close();
    },
  };
}

async function benchWake(cohort: WakeSide, bare: WakeSide): Promise<Record<string, number>> {
  line('');
  line('1. Long-poll wake: Produce/Release sent → each parked call answered (ms)');
  const figures: Record<string, number> = {};
  const rows: (string | number)[][] = [
    ['parked', 'cohort p50', 'cohort p99', 'bare p50', 'bare p99', 'p50 ratio', 'p99 ratio', 'target'],
  ];
  for (let i = 0; i < WAKE_WARMUP_ROUNDS; i++) {
    await cohort.round(1, WAKE_WARMUP_SETTLE_MS);
    await bare.round(1, WAKE_WARMUP_SETTLE_MS);
  }
  for (const { parked, rounds } of WAKE_CASES) {
    for (let i = 0; i < WAKE_CASE_WARMUP_ROUNDS; i++) {
      await cohort.round(parked);
      await bare.round(parked);
    }
    const samples = { cohort: [] as number[], bare: [] as number[] };
    for (let i = 0; i < rounds; i++) {
      // Alternate which side goes first, so drift on the machine falls on both.
      if (i % 2 === 0) {
        samples.cohort.push(...(await cohort.round(parked)));
        samples.bare.push(...(await bare.round(parked)));
      } else {
        samples.bare.push(...(await bare.round(parked)));
        samples.cohort.push(...(await cohort.round(parked)));
      }
    }
    const c = percentiles(samples.cohort);
    const b = percentiles(samples.bare);
    const p50Ratio = c.p50 / b.p50;
    const p99Ratio = c.p99 / b.p99;
    rows.push([
      parked,
      c.p50,
      c.p99,
      b.p50,
      b.p99,
      p50Ratio,
      p99Ratio,
      verdict(p50Ratio <= WAKE_TARGET_RATIO && p99Ratio <= WAKE_TARGET_RATIO),
    ]);
    figures[`wake_${parked}_parked_cohort_p50_ms`] = round(c.p50, 3);
    figures[`wake_${parked}_parked_cohort_p99_ms`] = round(c.p99, 3);
    figures[`wake_${parked}_parked_bare_p50_ms`] = round(b.p50, 3);
    figures[`wake_${parked}_parked_bare_p99_ms`] = round(b.p99, 3);
    figures[`wake_${parked}_parked_p50_ratio`] = round(p50Ratio, 2);
    figures[`wake_${parked}_parked_p99_ratio`] = round(p99Ratio, 2);
  }
  table(rows);
  return figures;
}

// --- 2. throughput ---

async function benchThroughput(port: number): Promise<Record<string, number>> {
  line('');
  line(
    `2. Produce throughput, acks=1, 1 KB records, ${THROUGHPUT_IN_FLIGHT} requests in flight, fsync per default`,
  );
  const client = brokerClient(port, false);
  const figures: Record<string, number> = {};
  const rows: (string | number)[][] = [['records/request', 'records/s', 'MB/s', 'requests/s']];
  for (const perRequest of [1, 100]) {
    const request = produceRequest('throughput', 1, perRequest, RECORD_1KB);
    const run = async (seconds: number): Promise<{ records: number; elapsedMs: number }> => {
      let records = 0;
      const start = performance.now();
      const endAt = start + seconds * 1_000;
      const worker = async (): Promise<void> => {
        while (performance.now() < endAt) {
          checkProduced(await client.produce(request));
          records += perRequest;
        }
      };
      await Promise.all(Array.from({ length: THROUGHPUT_IN_FLIGHT }, worker));
      return { records, elapsedMs: performance.now() - start };
    };
    await run(0.5);
    const { records, elapsedMs } = await run(THROUGHPUT_SECONDS);
    const recordsPerS = (records / elapsedMs) * 1_000;
    const mbPerS = (recordsPerS * RECORD_1KB.length) / 1e6;
    rows.push([perRequest, Math.round(recordsPerS), mbPerS, Math.round(recordsPerS / perRequest)]);
    figures[`produce_acks1_1kb_${perRequest}_per_request_records_per_s`] = Math.round(recordsPerS);
    figures[`produce_acks1_1kb_${perRequest}_per_request_mb_per_s`] = round(mbPerS, 2);
  }
  table(rows);
  client.client.close();
  return figures;
}

/** The sections `--only=a,b` names (every section without it); throws on a name it does not know. */
function selectedSections(argv: readonly string[]): ReadonlySet<Section> {
  if (argv.includes('--only')) throw new Error('--only takes its list after "=": --only=restart');
  const only = argv.filter((arg) => arg.startsWith('--only='));
  if (only.length === 0) return new Set(SECTIONS);
  const names = only.flatMap((arg) => arg.slice('--only='.length).split(',')).filter((name) => name !== '');
  const unknown = names.filter((name) => !(SECTIONS as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new Error(
      `--only takes a comma-separated list of ${SECTIONS.join(', ')}; got ${only.join(' ')}` +
        (unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''),
    );
  }
  return new Set(names as Section[]);
}

async function main(): Promise<void> {
  const sections = selectedSections(process.argv);
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  line(
    `bench:log ${QUICK ? '(quick) ' : ''}on ${machine.cpu}, ${machine.cores} cores, node ${machine.node}; ` +
      `sections: ${SECTIONS.filter((name) => sections.has(name)).join(', ')}`,
  );
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-bench-log-'));
  const children: Child[] = [];
  let figures: Record<string, unknown> = {};
  try {
    if (sections.has('wake') || sections.has('throughput')) {
      const leader = await startChild(cohortArgs(path.join(root, 'leader')), 'leader');
      children.push(leader);
      const admin = brokerClient(leader.port, false);
      await admin.createTopics({
        topics: [
          { name: 'wake', numPartitions: 1, replicationFactor: 1 },
          { name: 'throughput', numPartitions: 1, replicationFactor: 1 },
        ],
      });
      admin.client.close();
      if (sections.has('wake')) {
        const bare = await startChild(['bench/log-bare-server.ts'], 'bare');
        children.push(bare);
        const cohortSide = cohortWakeSide(leader.port);
        const bareSide = bareWakeSide(bare.port);
        try {
          figures = { ...figures, ...(await benchWake(cohortSide, bareSide)) };
        } finally {
          cohortSide.close();
          bareSide.close();
        }
      }
      if (sections.has('throughput')) figures = { ...figures, ...(await benchThroughput(leader.port)) };
    }
    // The other sections' servers stop first: the restarts are timed on a machine with nothing else of ours.
    for (const child of children.splice(0).reverse()) await child.stop();
    if (sections.has('restart'))
      figures = { ...figures, restart: await benchRestart({ rounds: RESTART_ROUNDS }) };
    printFigures({
      bench: 'log',
      date: startedAt,
      node: machine.node,
      cpu: machine.cpu,
      cores: machine.cores,
      cpus_allowed: machine.cpusAllowed,
      quick: QUICK,
      sections: SECTIONS.filter((name) => sections.has(name)),
      ...figures,
    });
  } finally {
    for (const child of children.reverse()) await child.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench:log failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
