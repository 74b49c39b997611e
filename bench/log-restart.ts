/**
 * bench:log, section 4 — restart: the time cohort takes to come back on a data directory holding
 * 1,000,000 committed offsets in 10,000 groups and 1 GiB of log, against two baselines in the same run.
 *
 * The data directory is built in-process with cohort's own storage code, laid out as a server lays it out
 * (writing it through gRPC would take many minutes: one fsync per OffsetCommit):
 * - the topic `restart-log`, 8 partitions of 1 KiB records in batches of 128, through LogManager: the
 *   partitions' logs first, the registry file `topics/restart-log.json` last, as CreateTopics does, with the
 *   server's default log settings (one 1 GiB segment size, so one segment per partition);
 * - `__consumer_offsets-0` as the coordinator writes it: per group, one batch of 100 offset-commit records
 *   (an OffsetCommit of 100 partitions), then the group's metadata record as an Empty `consumer` group (what
 *   the coordinator stores when its last member leaves), both through the real encoders.
 * Only the flush policy differs from a server's: the build fsyncs once per log, at close, not per batch,
 * which changes nothing on disk.
 *
 * Then, per round, each timed from spawn to the `cohort listening` and `cohort ready` lines of src/main.ts
 * (ready = group state replayed, every service serving):
 * - a restart after a clean stop (SIGTERM), then a restart after SIGKILL of that server once it was ready
 *   (the recovery path of a crash);
 * - the same server on an empty data directory: the fixed cost of a start (node, module loading, bind);
 * - one read of every byte of the data directory with plain fs reads: what a full scan of it costs.
 * Rounds alternate the order of the cohort restarts and the baselines, so drift falls on both. After every
 * restart a client checks what came back (the topic and its partitions' log end offsets; every group,
 * Empty, of protocol type consumer; a random sample's generations and committed offsets) and throws on any
 * difference.
 *
 * The page cache is warm in every case: the build has just written the directory, the machine has memory
 * to spare, and dropping caches needs privileges a bench does not have.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { CohortClient, CONSUMER_PROTOCOL_TYPE } from '../src/client';
import { createConfig } from '../src/config';
import { LogManager } from '../src/log';
import {
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
} from '../src/group/records/consumer-offsets-record';
import { CONSUMER_OFFSETS_LOG_CONFIG, CONSUMER_OFFSETS_PARTITION_DIR } from '../src/log/consumer-offsets';
import type { SimpleRecord } from '../src/log/storage';
import { PartitionLog } from '../src/log/storage';
import { SYSTEM_TIME } from '../src/time';
import { line, round, table } from './support/report';
import { Random } from './support/random';
import { median } from './support/stats';

const REPO_ROOT = path.join(__dirname, '..');
const TRANSPILE_HOOK = path.join(__dirname, '..', 'scripts', 'register-typescript.js');

export const RESTART_TOPIC = 'restart-log';
const LOG_PARTITIONS = 8;
const RECORD_BYTES = 1_024;
const LOG_RECORD_BYTES = 1_024 * 1_024 * 1_024;
const RECORDS_PER_PARTITION = LOG_RECORD_BYTES / RECORD_BYTES / LOG_PARTITIONS;
const RECORDS_PER_LOG_BATCH = 128;
const GROUPS = 10_000;
const PARTITIONS_PER_GROUP = 100;
/** The groups commit offsets of 10 topics (a group of each hundred shares one). */
const COMMITTED_TOPICS = 10;
/** Groups whose committed offsets and generation are read back after each restart. */
const SAMPLED_GROUPS = 12;
const START_TIMEOUT_MS = 10 * 60_000;
const READ_BUFFER_BYTES = 1024 * 1024;

const groupIdOf = (group: number): string => `restart-group-${String(group).padStart(5, '0')}`;
const committedTopicOf = (group: number): string => `restart-commits-${group % COMMITTED_TOPICS}`;
/** Distinct per group and partition, so an offset restored under the wrong key cannot pass the check. */
const committedOffsetOf = (group: number, partition: number): number => group * 1_000 + partition;
/** Empty groups that went through a few rebalances before their members left. */
const generationOf = (group: number): number => 1 + (group % 7);

export interface RestartBenchOptions {
  /** Timed rounds; each has a clean restart, a kill -9 restart, an empty-directory start and a full read. */
  readonly rounds: number;
}

export interface BuiltDataDir {
  readonly dir: string;
  readonly buildMs: number;
  readonly files: number;
  readonly dataDirBytes: number;
  /** The topic's segment files (.log). */
  readonly logBytes: number;
  /** __consumer_offsets-0's segment files (.log). */
  readonly offsetsLogBytes: number;
}

interface StartTimes {
  readonly listeningMs: number;
  readonly readyMs: number;
}

interface RunningServer extends StartTimes {
  readonly port: number;
  /** Sends `signal` and resolves once the process has exited as that signal should make it. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

/** Runs the section in a temporary directory (removed at the end, whatever happens); returns its figures. */
export async function benchRestart(options: RestartBenchOptions): Promise<Record<string, unknown>> {
  line('');
  line(
    `4. Restart on ${GROUPS.toLocaleString('en-US')} groups × ${PARTITIONS_PER_GROUP} committed offsets ` +
      `and ${LOG_RECORD_BYTES / 2 ** 30} GiB of log (${LOG_PARTITIONS} partitions, 1 KiB records): ` +
      'spawn → `cohort listening` / `cohort ready` (ms)',
  );
  line(
    '   page cache warm in every case (the build has just written the directory; caches cannot be dropped)',
  );
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-bench-restart-'));
  const live = new Set<ChildProcess>();
  try {
    const built = await buildRestartDataDir(path.join(root, 'data'));
    line(
      `   built in ${Math.round(built.buildMs).toLocaleString('en-US')} ms: ` +
        `${built.dataDirBytes.toLocaleString('en-US')} bytes in ${built.files} files ` +
        `(topic log ${built.logBytes.toLocaleString('en-US')}, ` +
        `__consumer_offsets-0 log ${built.offsetsLogBytes.toLocaleString('en-US')})`,
    );
    const random = new Random(0x5eed);

    // Not timed: the first start reads the source files and the data into the cache for every later one,
    // and leaves the directory as every round expects to find it, stopped cleanly by a server.
    const first = await startServer(built.dir, live);
    await verifyRestored(first.port, random);
    await first.stop('SIGTERM');
    line(
      `   first start after the build (not counted): listening ${formatMs(first.listeningMs)}, ` +
        `ready ${formatMs(first.readyMs)}`,
    );

    const clean: StartTimes[] = [];
    const kill9: StartTimes[] = [];
    const empty: StartTimes[] = [];
    const fullRead: number[] = [];
    const restarts = async (): Promise<void> => {
      const afterClean = await startServer(built.dir, live);
      clean.push(afterClean);
      await verifyRestored(afterClean.port, random);
      await afterClean.stop('SIGKILL');
      const afterKill = await startServer(built.dir, live);
      kill9.push(afterKill);
      await verifyRestored(afterKill.port, random);
      await afterKill.stop('SIGTERM');
    };
    const baselines = async (roundIndex: number): Promise<void> => {
      const emptyDir = path.join(root, `empty-${roundIndex}`);
      fs.mkdirSync(emptyDir);
      const server = await startServer(emptyDir, live);
      empty.push(server);
      await server.stop('SIGTERM');
      const start = performance.now();
      const bytes = readEveryByte(built.dir);
      fullRead.push(performance.now() - start);
      if (bytes !== built.dataDirBytes) {
        throw new Error(`the full read got ${bytes} bytes; the data directory holds ${built.dataDirBytes}`);
      }
    };
    for (let i = 0; i < options.rounds; i++) {
      if (i % 2 === 0) {
        await restarts();
        await baselines(i);
      } else {
        await baselines(i);
        await restarts();
      }
    }

    const rows: (string | number)[][] = [
      [
        'round',
        'clean restart listening',
        'ready',
        'kill -9 restart listening',
        'ready',
        'empty dir listening',
        'ready',
        'full read',
      ],
    ];
    for (let i = 0; i < options.rounds; i++) {
      rows.push([
        i + 1,
        clean[i]!.listeningMs,
        clean[i]!.readyMs,
        kill9[i]!.listeningMs,
        kill9[i]!.readyMs,
        empty[i]!.listeningMs,
        empty[i]!.readyMs,
        fullRead[i]!,
      ]);
    }
    const m = {
      cleanListening: median(clean.map((t) => t.listeningMs)),
      cleanReady: median(clean.map((t) => t.readyMs)),
      kill9Listening: median(kill9.map((t) => t.listeningMs)),
      kill9Ready: median(kill9.map((t) => t.readyMs)),
      emptyListening: median(empty.map((t) => t.listeningMs)),
      emptyReady: median(empty.map((t) => t.readyMs)),
      fullRead: median(fullRead),
    };
    rows.push([
      'median',
      m.cleanListening,
      m.cleanReady,
      m.kill9Listening,
      m.kill9Ready,
      m.emptyListening,
      m.emptyReady,
      m.fullRead,
    ]);
    table(rows);
    const fullReadMbPerS = built.dataDirBytes / 1e6 / (m.fullRead / 1_000);
    line(
      `   ready, clean restart / empty-dir start ${formatRatio(m.cleanReady / m.emptyReady)}, ` +
        `kill -9 restart / empty-dir start ${formatRatio(m.kill9Ready / m.emptyReady)}; ` +
        `clean restart / full read ${formatRatio(m.cleanReady / m.fullRead)}, ` +
        `kill -9 restart / full read ${formatRatio(m.kill9Ready / m.fullRead)}` +
        ` (full read ${Math.round(fullReadMbPerS).toLocaleString('en-US')} MB/s)`,
    );
    const roundsOf = (values: readonly number[]): number[] => values.map((value) => round(value, 1));
    return {
      offsets: GROUPS * PARTITIONS_PER_GROUP,
      groups: GROUPS,
      log_partitions: LOG_PARTITIONS,
      log_records: RECORDS_PER_PARTITION * LOG_PARTITIONS,
      log_bytes: built.logBytes,
      consumer_offsets_log_bytes: built.offsetsLogBytes,
      data_dir_bytes: built.dataDirBytes,
      data_dir_files: built.files,
      build_ms: Math.round(built.buildMs),
      rounds: options.rounds,
      page_cache: 'warm',
      clean_restart_listening_ms: round(m.cleanListening, 1),
      clean_restart_ready_ms: round(m.cleanReady, 1),
      kill9_restart_listening_ms: round(m.kill9Listening, 1),
      kill9_restart_ready_ms: round(m.kill9Ready, 1),
      empty_start_listening_ms: round(m.emptyListening, 1),
      empty_start_ready_ms: round(m.emptyReady, 1),
      full_read_ms: round(m.fullRead, 1),
      restart_vs_empty_start_ratio: round(m.cleanReady / m.emptyReady, 2),
      restart_vs_full_read_ratio: round(m.cleanReady / m.fullRead, 2),
      kill9_restart_vs_empty_start_ratio: round(m.kill9Ready / m.emptyReady, 2),
      kill9_restart_vs_full_read_ratio: round(m.kill9Ready / m.fullRead, 2),
      clean_restart_ready_ms_by_round: roundsOf(clean.map((t) => t.readyMs)),
      kill9_restart_ready_ms_by_round: roundsOf(kill9.map((t) => t.readyMs)),
      empty_start_ready_ms_by_round: roundsOf(empty.map((t) => t.readyMs)),
      full_read_ms_by_round: roundsOf(fullRead),
    };
  } finally {
    // A failure may leave a server running on the directory about to be removed.
    await Promise.all([...live].map((child) => killAndWait(child)));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

// --- building the data directory ---

/**
 * Builds the data directory in `dir` (which must not hold one yet). Exported for profiling a restart by
 * hand: build once, then start `src/main.ts --data-dir <dir>` under `--cpu-prof`.
 */
export async function buildRestartDataDir(dir: string): Promise<BuiltDataDir> {
  const start = performance.now();
  // The server's own settings for everything that shapes the files (segment size, index interval); one
  // fsync per log at close instead of one per batch.
  const config = createConfig({ dataDir: dir });
  const logManager = new LogManager(
    dir,
    {
      segmentBytes: config.logSegmentBytes,
      retentionMs: config.logRetentionMs,
      retentionBytes: config.logRetentionBytes,
      flushMessages: Number.MAX_SAFE_INTEGER,
    },
    SYSTEM_TIME,
  );
  await writeTopic(logManager, config.nodeId);
  await writeConsumerOffsets(path.join(dir, CONSUMER_OFFSETS_PARTITION_DIR));
  const buildMs = performance.now() - start;
  let dataDirBytes = 0;
  let logBytes = 0;
  let offsetsLogBytes = 0;
  const files = listFiles(dir);
  for (const file of files) {
    dataDirBytes += file.sizeInBytes;
    if (!file.path.endsWith('.log')) continue;
    const partitionDir = path.basename(path.dirname(file.path));
    if (partitionDir === CONSUMER_OFFSETS_PARTITION_DIR) offsetsLogBytes += file.sizeInBytes;
    else if (partitionDir.startsWith(`${RESTART_TOPIC}-`)) logBytes += file.sizeInBytes;
  }
  return { dir, buildMs, files: files.length, dataDirBytes, logBytes, offsetsLogBytes };
}

/** The topic's partition logs first, its registry file last, as ReplicaManager.createTopic writes them. */
async function writeTopic(logManager: LogManager, nodeId: number): Promise<void> {
  const value = Buffer.alloc(RECORD_BYTES, 'r');
  const batch: SimpleRecord[] = Array.from({ length: RECORDS_PER_LOG_BATCH }, () => ({ value }));
  for (let partitionIndex = 0; partitionIndex < LOG_PARTITIONS; partitionIndex++) {
    const log = logManager.openLog(RESTART_TOPIC, partitionIndex);
    try {
      while (log.logEndOffset < RECORDS_PER_PARTITION) log.append(batch);
    } finally {
      await log.close();
    }
    if (log.logEndOffset !== RECORDS_PER_PARTITION) {
      throw new Error(
        `partition ${partitionIndex} ends at ${log.logEndOffset}, not ${RECORDS_PER_PARTITION}`,
      );
    }
  }
  logManager.writeTopic({
    name: RESTART_TOPIC,
    partitions: Array.from({ length: LOG_PARTITIONS }, (_, partitionIndex) => ({
      partitionIndex,
      replicas: [nodeId],
    })),
  });
}

/**
 * Per group: an OffsetCommit of 100 partitions (one batch: the records of one OffsetCommit's handler, as
 * the coordinator shard appends them), then the group's metadata as the coordinator writes an Empty
 * group's record.
 */
async function writeConsumerOffsets(dir: string): Promise<void> {
  const log = PartitionLog.open(dir, {
    time: SYSTEM_TIME,
    config: { ...CONSUMER_OFFSETS_LOG_CONFIG, flushMessages: Number.MAX_SAFE_INTEGER },
  });
  try {
    const commits: SimpleRecord[] = new Array<SimpleRecord>(PARTITIONS_PER_GROUP);
    for (let group = 0; group < GROUPS; group++) {
      const groupId = groupIdOf(group);
      const topic = committedTopicOf(group);
      const nowMs = SYSTEM_TIME.nowMs();
      for (let partition = 0; partition < PARTITIONS_PER_GROUP; partition++) {
        commits[partition] = {
          timestampMs: nowMs,
          key: encodeOffsetCommitKey(groupId, topic, partition),
          value: encodeOffsetCommitValue({
            committedOffset: committedOffsetOf(group, partition),
            committedLeaderEpoch: -1,
            metadata: '',
            commitTimestampMs: nowMs,
          }),
        };
      }
      log.append(commits);
      log.append([
        {
          timestampMs: nowMs,
          key: encodeGroupMetadataKey(groupId),
          value: encodeGroupMetadataValue({
            protocolType: CONSUMER_PROTOCOL_TYPE,
            generationId: generationOf(group),
            protocolName: '',
            leaderId: '',
            currentStateTimestampMs: nowMs,
            members: [],
          }),
        },
      ]);
    }
  } finally {
    await log.close();
  }
}

function listFiles(dir: string): { path: string; sizeInBytes: number }[] {
  const files: { path: string; sizeInBytes: number }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(file));
    else if (entry.isFile()) files.push({ path: file, sizeInBytes: fs.statSync(file).size });
  }
  return files;
}

/** The baseline scan: every byte of every file, read once in 1 MiB steps. Returns the bytes read. */
function readEveryByte(dir: string): number {
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  let total = 0;
  for (const file of listFiles(dir)) {
    const fd = fs.openSync(file.path, 'r');
    try {
      let read: number;
      while ((read = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0) total += read;
    } finally {
      fs.closeSync(fd);
    }
  }
  return total;
}

// --- the server under test ---

/** Spawns src/main.ts on `dataDir` and resolves once it logged `cohort ready`, with both times from spawn. */
function startServer(dataDir: string, live: Set<ChildProcess>): Promise<RunningServer> {
  // Through the transpile hook, as the other sections' servers (see scripts/register-typescript.js): the
  // start-up cost includes transpiling cohort's sources, the same for the baseline start.
  const spawnedAt = performance.now();
  const child = spawn(
    process.execPath,
    [
      '-r',
      TRANSPILE_HOOK,
      'src/main.ts',
      '--listen',
      '127.0.0.1:0',
      '--admin-listen',
      'off',
      '--kafka-listen',
      'off',
      '--data-dir',
      dataDir,
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  return new Promise<RunningServer>((resolve, reject) => {
    let listeningMs = NaN;
    let port = 0;
    const timeout = setTimeout(() => {
      reject(new Error(`the server on ${dataDir} was not ready after ${START_TIMEOUT_MS} ms`));
      child.kill('SIGKILL');
    }, START_TIMEOUT_MS);
    void exited.then(({ code, signal }) => {
      clearTimeout(timeout);
      reject(new Error(`the server on ${dataDir} exited (${code ?? signal}) before it was ready`));
    });
    createInterface({ input: child.stdout! }).on('line', (text) => {
      const now = performance.now();
      let parsed: { msg?: string; level?: number; port?: number } | undefined;
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch {
        return;
      }
      if (parsed?.level !== undefined && parsed.level >= 40) line(`   server: ${text}`);
      if (parsed?.msg === 'cohort listening' && typeof parsed.port === 'number') {
        listeningMs = now - spawnedAt;
        port = parsed.port;
      } else if (parsed?.msg === 'cohort ready') {
        clearTimeout(timeout);
        resolve({
          port,
          listeningMs,
          readyMs: now - spawnedAt,
          stop: async (signal) => {
            child.kill(signal);
            const { code, signal: endedBy } = await exited;
            const isExpected = signal === 'SIGTERM' ? code === 0 : endedBy === 'SIGKILL';
            if (!isExpected) {
              throw new Error(`the server stopped with ${signal} ended with ${code ?? endedBy}`);
            }
          },
        });
      }
    });
  });
}

function killAndWait(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Checks through the SDK's admin client that the restarted server serves what the build wrote; throws if not. */
async function verifyRestored(port: number, random: Random): Promise<void> {
  const client = new CohortClient({ address: `127.0.0.1:${port}`, clientId: 'bench-log-restart' });
  const fail = (what: string): Error => new Error(`after the restart, ${what}`);
  try {
    const admin = client.admin();
    const topics = await admin.describeTopics();
    const topic = topics.find((t) => t.name === RESTART_TOPIC);
    if (topic === undefined) {
      throw fail(`${RESTART_TOPIC} is not listed (topics: ${topics.map((t) => t.name).join(', ')})`);
    }
    if (topic.error !== null || topic.partitions.length !== LOG_PARTITIONS) {
      throw fail(
        `${RESTART_TOPIC} has ${topic.partitions.length} partitions (error ${topic.error?.message})`,
      );
    }
    const partitions = Array.from({ length: LOG_PARTITIONS }, (_, partition) => ({
      topic: RESTART_TOPIC,
      partition,
    }));
    for (const [spec, expected] of [
      ['earliest', 0n],
      ['latest', BigInt(RECORDS_PER_PARTITION)],
    ] as const) {
      const listed = await admin.listOffsets(partitions, spec);
      if (listed.length !== LOG_PARTITIONS) throw fail(`ListOffsets answered ${listed.length} partitions`);
      for (const offset of listed) {
        if (offset.error !== null || offset.offset !== expected) {
          throw fail(
            `the ${spec} offset of ${RESTART_TOPIC}-${offset.partition} is ${offset.offset} ` +
              `(error ${offset.error?.message}), not ${expected}`,
          );
        }
      }
    }

    const groups = await admin.listGroups();
    const restored = groups.filter(
      (g) =>
        g.groupId.startsWith('restart-group-') &&
        g.state === 'Empty' &&
        g.protocolType === CONSUMER_PROTOCOL_TYPE,
    );
    if (restored.length !== GROUPS || groups.length !== GROUPS) {
      throw fail(
        `${groups.length} groups are listed, ${restored.length} of them Empty consumer groups, not ${GROUPS}`,
      );
    }

    const sample = Array.from({ length: SAMPLED_GROUPS }, () => random.int(0, GROUPS - 1));
    const described = await admin.describeGroups(sample.map(groupIdOf));
    for (let i = 0; i < sample.length; i++) {
      const group = sample[i]!;
      const description = described[i]!;
      if (description.error !== null || description.generationId !== generationOf(group)) {
        throw fail(
          `${groupIdOf(group)} is at generation ${description.generationId} ` +
            `(error ${description.error?.message}), not ${generationOf(group)}`,
        );
      }
      const committed = await admin.fetchCommittedOffsets(groupIdOf(group));
      const partitionsSeen = new Set(committed.map((offset) => offset.partition));
      if (committed.length !== PARTITIONS_PER_GROUP || partitionsSeen.size !== PARTITIONS_PER_GROUP) {
        throw fail(
          `${groupIdOf(group)} has ${committed.length} committed offsets, not ${PARTITIONS_PER_GROUP}`,
        );
      }
      for (const offset of committed) {
        const expected = BigInt(committedOffsetOf(group, offset.partition));
        if (offset.topic !== committedTopicOf(group) || offset.offset !== expected) {
          throw fail(
            `${groupIdOf(group)} has ${offset.offset} for ${offset.topic}-${offset.partition}, ` +
              `not ${expected} for ${committedTopicOf(group)}-${offset.partition}`,
          );
        }
      }
    }
  } finally {
    await client.close();
  }
}

function formatMs(ms: number): string {
  return `${Math.round(ms).toLocaleString('en-US')} ms`;
}

function formatRatio(ratio: number): string {
  return `${ratio.toFixed(2)}×`;
}
