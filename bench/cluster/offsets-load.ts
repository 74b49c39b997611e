/**
 * bench:cluster, section load: how long a coordinator takes to load a `__consumer_offsets` partition
 * holding 100,000 committed offsets of 1,000 groups, and the longest event-loop turn while it does (goal
 * ≤ 50 ms: the node keeps serving its other partitions, groups and RPCs meanwhile). In this process, so
 * the probe (bench/support/turn-probe.ts, a 1 ms timer chain) sees the very loop that loads.
 *
 * The partition is written once with cohort's own storage code and encoders, as the coordinator writes
 * it (test/support/stored-groups-partition.ts): per group one OffsetCommit batch of 100 partitions, then
 * the group's metadata record, a Stable `consumer` group of 10 members (generation, protocol, leader, each
 * member's subscription and assignment), so the load restores 10,000 members and schedules their sessions
 * too. Every case loads with the production defaults (steps of 10 ms on the node's clock, TurnBudget;
 * the writer and the shard set them, not the server). Per round:
 * - the server: a whole cohort server (createServer, as main.ts builds it; single-node mode, whose start
 *   elects the partition) on that data directory, from start() to ready (every partition loaded into the
 *   router's shard, its groups restored);
 * - a fresh GroupCoordinatorRouter elected for the partition over its log's writer: the replay (election →
 *   the shard's replay of the records done) and the restore (→ the shard serving; in 10 ms steps) timed
 *   apart;
 * - baseline, bare replay: the same log opened and its records decoded and applied to offsets and groups
 *   by key (test/support/replayed-partition.ts), no server, no router, no shard;
 * - baseline, the bare replay unsliced: in one step (a clock that does not move, no byte bound), what one
 *   turn would hold without the steps;
 * - baseline, empty directory: the same server on an empty data directory (the fixed cost of a start).
 * After each server start a client reads back a sample of groups (Stable, 10 members, the generation)
 * and their committed offsets, and throws on any difference. The rounds alternate the order.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { CohortClient } from '../../src/client';
import { createConfig } from '../../src/config';
import {
  CONSUMER_OFFSETS_LOG_CONFIG,
  CONSUMER_OFFSETS_PARTITION_DIR,
  ConsumerOffsetsWriter,
  type ReplayOptions,
} from '../../src/log/consumer-offsets';
import { PartitionLog } from '../../src/log/storage';
import { GroupCoordinatorRouter, type GroupConfig } from '../../src/group';
import { createServer } from '../../src/server';
import { ManualTime, SYSTEM_TIME } from '../../src/time';
import {
  storedGenerationOf as generationOf,
  storedGroupIdOf as groupIdOf,
  storedOffsetOf as offsetOf,
  writeStoredGroupsPartition,
} from '../../test/support/stored-groups-partition';
import { ReplayedPartition } from '../../test/support/replayed-partition';
import { line, round, table, verdict } from '../support/report';
import { median } from '../support/stats';
import { TurnProbe } from '../support/turn-probe';

export const LOAD_GROUPS = 1_000;
const PARTITIONS_PER_GROUP = 100;
const MEMBERS_PER_GROUP = 10;
const LONGEST_TURN_GOAL_MS = 50;
/** The unsliced baseline: a clock that never moves and no byte bound, so the replay is one step. */
const UNSLICED: ReplayOptions = { time: new ManualTime(), maxBytesPerRead: Number.MAX_SAFE_INTEGER };
const SAMPLED_GROUPS = 10;
const TOPIC = 'load-commits';

interface Measured {
  readonly ms: number;
  /** The longest wait of a 1 ms timer (TurnProbe): what a session or purgatory timer was delayed by. */
  readonly longestTurnMs: number;
  readonly longestTaskCpuMs: number;
  /** The longest gap between two checks phases (an immediate chain): what an RPC's I/O waited. */
  readonly longestIterationMs: number;
}

/**
 * A setImmediate chain: consecutive runs are one loop iteration apart, so the longest gap is the longest
 * stretch without a poll phase (I/O: RPCs, replication). Only while measuring: it keeps the loop from
 * blocking in poll, spinning when idle.
 */
class IterationProbe {
  longestMs = 0;
  private lastMs = 0;
  private isOn = false;

  start(): void {
    this.longestMs = 0;
    this.lastMs = performance.now();
    this.isOn = true;
    setImmediate(this.tick);
  }

  stop(): void {
    this.tick();
    this.isOn = false;
  }

  private readonly tick = (): void => {
    if (!this.isOn) return;
    const nowMs = performance.now();
    if (nowMs - this.lastMs > this.longestMs) this.longestMs = nowMs - this.lastMs;
    this.lastMs = nowMs;
    setImmediate(this.tick);
  };
}

async function probed(work: () => Promise<void>): Promise<Measured> {
  const probe = new TurnProbe();
  const iterations = new IterationProbe();
  probe.start();
  iterations.start();
  const start = performance.now();
  try {
    await work();
  } finally {
    iterations.stop();
    probe.stop();
  }
  return {
    ms: performance.now() - start,
    longestTurnMs: probe.longestMs,
    longestTaskCpuMs: probe.longestCpuMs,
    longestIterationMs: iterations.longestMs,
  };
}

/** A whole server on `dataDir`, start() → ready; `verify` runs against it before it closes. */
async function serverStart(dataDir: string, verify: (target: string) => Promise<void>): Promise<Measured> {
  const config = createConfig({ listen: '127.0.0.1:0', dataDir, logLevel: 'warn' });
  const server = createServer(config, { logger: pino({ level: 'warn' }) });
  let port = 0;
  try {
    const measured = await probed(async () => {
      ({ port } = await server.start());
      await server.ready();
    });
    await verify(`127.0.0.1:${port}`);
    return measured;
  } finally {
    await server.close();
  }
}

async function verifyLoaded(target: string, sampled: readonly number[]): Promise<void> {
  const client = new CohortClient({ bootstrap: [target], clientId: 'bench-load' });
  try {
    const admin = client.admin();
    const described = await admin.describeGroups(sampled.map(groupIdOf));
    for (const [i, group] of sampled.entries()) {
      const d = described[i];
      if (
        d?.state !== 'Stable' ||
        d.members.length !== MEMBERS_PER_GROUP ||
        d.generationId !== generationOf(group)
      ) {
        throw new Error(`${groupIdOf(group)} came back as ${JSON.stringify(d)}`);
      }
      const partitions = Array.from({ length: PARTITIONS_PER_GROUP }, (_, partition) => ({
        topic: TOPIC,
        partition,
      }));
      const offsets = await admin.fetchCommittedOffsets(groupIdOf(group), partitions);
      for (const { partition } of partitions) {
        const found = offsets.find((o) => o.topic === TOPIC && o.partition === partition);
        if (found?.offset !== BigInt(offsetOf(group, partition))) {
          throw new Error(`${groupIdOf(group)} ${TOPIC}-${partition}: ${String(found?.offset)}`);
        }
      }
    }
  } finally {
    await client.close();
  }
}

/** The partition's records replayed on its log alone, with no shard (nothing is written). */
async function bareReplay(
  partitionDir: string,
  replay?: ReplayOptions,
): Promise<{ measured: Measured; offsets: number }> {
  let offsets = 0;
  const measured = await probed(async () => {
    const log = PartitionLog.open(partitionDir, { time: SYSTEM_TIME, config: CONSUMER_OFFSETS_LOG_CONFIG });
    try {
      const writer = new ConsumerOffsetsWriter(
        {
          key: CONSUMER_OFFSETS_PARTITION_DIR,
          log,
          highWatermark: 0,
          appendCommitted: () => Promise.reject(new Error('the bare replay writes nothing')),
          awaitHighWatermark: () => Promise.resolve(),
        },
        replay === undefined ? {} : { replay },
      );
      const loaded = await new ReplayedPartition(writer).load();
      offsets = loaded.offsets;
      writer.resign();
      await writer.close();
    } finally {
      await log.close();
    }
  });
  return { measured, offsets };
}

/** The server's group settings at their defaults (src/server's groupConfigOf of a default config). */
function defaultGroupConfig(): GroupConfig {
  const c = createConfig({});
  return {
    groupMinSessionTimeoutMs: c.groupMinSessionTimeoutMs,
    groupMaxSessionTimeoutMs: c.groupMaxSessionTimeoutMs,
    groupInitialRebalanceDelayMs: c.groupInitialRebalanceDelayMs,
    groupMaxSize: c.groupMaxSize,
    offsetMetadataMaxBytes: c.offsetMetadataMaxBytes,
    maxGroups: c.maxGroups,
    memberMetadataMaxBytes: c.memberMetadataMaxBytes,
    groupMaxMetadataBytes: c.groupMaxMetadataBytes,
    groupMaxCommittedPartitions: c.groupMaxCommittedPartitions,
    offsetsRetentionMinutes: c.offsetsRetentionMinutes,
    offsetsRetentionCheckIntervalMs: c.offsetsRetentionCheckIntervalMs,
  };
}

interface RouterLoad extends Measured {
  /** Election → the shard's replay done (the log read into its state). */
  readonly replayMs: number;
  /** The replay done → the shard serving: its groups restored (in 10 ms steps). */
  readonly restoreMs: number;
  /** The longest iteration from the replay's end to the shard serving: the longest restore slice. */
  readonly restoreLongestIterationMs: number;
}

/**
 * A fresh GroupCoordinatorRouter elected for the partition over its log's writer, as the server elects one
 * (the writer's and the shard's default steps, the server's), until the shard says it is loaded.
 */
async function routerElection(partitionDir: string): Promise<RouterLoad> {
  let replayedAtMs = 0;
  let loadedAtMs = 0;
  let startMs = 0;
  const restoreProbe = new IterationProbe();
  const log = PartitionLog.open(partitionDir, { time: SYSTEM_TIME, config: CONSUMER_OFFSETS_LOG_CONFIG });
  const writer = new ConsumerOffsetsWriter({
    key: CONSUMER_OFFSETS_PARTITION_DIR,
    log,
    highWatermark: log.logEndOffset,
    appendCommitted: () => Promise.reject(new Error('the load writes nothing')),
    awaitHighWatermark: () => Promise.resolve(),
  });
  let router: GroupCoordinatorRouter | undefined;
  try {
    const measured = await probed(
      () =>
        new Promise<void>((resolve, reject) => {
          router = new GroupCoordinatorRouter(defaultGroupConfig(), SYSTEM_TIME, {
            numPartitions: 1,
            listener: {
              onShardLoaded: () => {
                loadedAtMs = performance.now();
                restoreProbe.stop();
                resolve();
              },
              onShardLoadFailed: (_p, _e, error) => reject(error),
              // Before the shard's own reaction to the replay: its end, the start of the restore.
              onPartitionReplayed: () => {
                replayedAtMs = performance.now();
                restoreProbe.start();
              },
            },
          });
          startMs = performance.now();
          void router.onElection(0, 0, writer);
        }),
    );
    if (router!.numGroups !== LOAD_GROUPS) throw new Error(`the router holds ${router!.numGroups} groups`);
    return {
      ...measured,
      replayMs: replayedAtMs - startMs,
      restoreMs: loadedAtMs - replayedAtMs,
      restoreLongestIterationMs: restoreProbe.longestMs,
    };
  } finally {
    router?.shutdown();
    writer.resign();
    await writer.close();
    await log.close();
  }
}

/** Runs the section in a temporary directory (removed at the end); returns its figures. */
export async function benchOffsetsLoad(rounds: number): Promise<Record<string, number>> {
  line('');
  line(
    `6. Load: a __consumer_offsets partition of ${(LOAD_GROUPS * PARTITIONS_PER_GROUP).toLocaleString('en-US')} ` +
      `offsets of ${LOAD_GROUPS.toLocaleString('en-US')} groups (${MEMBERS_PER_GROUP} members each), in ` +
      'this process: time (ms) and the longest event-loop turn while loading',
  );
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-bench-load-'));
  try {
    const dataDir = path.join(root, 'data');
    const partitionDir = path.join(dataDir, CONSUMER_OFFSETS_PARTITION_DIR);
    const logBytes = await writeStoredGroupsPartition(partitionDir, {
      groups: LOAD_GROUPS,
      partitionsPerGroup: PARTITIONS_PER_GROUP,
      membersPerGroup: MEMBERS_PER_GROUP,
      topic: TOPIC,
    });
    line(`   partition log: ${logBytes.toLocaleString('en-US')} bytes (page cache warm: just written)`);
    const step = Math.floor(LOAD_GROUPS / SAMPLED_GROUPS);
    const sampled = Array.from({ length: SAMPLED_GROUPS }, (_, i) => i * step + (i % step));
    const verify = (target: string): Promise<void> => verifyLoaded(target, sampled);
    // Not counted: the first start reads the code paths and the files in.
    await serverStart(dataDir, verify);
    const server: Measured[] = [];
    const bare: Measured[] = [];
    const empty: Measured[] = [];
    const unsliced: Measured[] = [];
    const routed: RouterLoad[] = [];
    for (let r = 0; r < rounds; r++) {
      const cases = [
        async () => server.push(await serverStart(dataDir, verify)),
        async () => {
          const replayed = await bareReplay(partitionDir);
          if (replayed.offsets !== LOAD_GROUPS * PARTITIONS_PER_GROUP)
            throw new Error(`the bare replay found ${replayed.offsets} offsets`);
          bare.push(replayed.measured);
        },
        async () => void routed.push(await routerElection(partitionDir)),
        async () => {
          const replayed = await bareReplay(partitionDir, UNSLICED);
          if (replayed.offsets !== LOAD_GROUPS * PARTITIONS_PER_GROUP)
            throw new Error(`the unsliced bare replay found ${replayed.offsets} offsets`);
          unsliced.push(replayed.measured);
        },
        async () => {
          const emptyDir = path.join(root, `empty-${r}`);
          fs.mkdirSync(emptyDir);
          empty.push(await serverStart(emptyDir, async () => undefined));
        },
      ];
      for (const run of r % 2 === 0 ? cases : [...cases].reverse()) await run();
    }
    const med = <M>(values: M[], key: keyof M): number =>
      round(median(values.map((v) => v[key] as number)), 1);
    const figures = {
      load_offsets: LOAD_GROUPS * PARTITIONS_PER_GROUP,
      load_groups: LOAD_GROUPS,
      load_members: LOAD_GROUPS * MEMBERS_PER_GROUP,
      load_rounds: rounds,
      load_server_ready_ms: med(server, 'ms'),
      load_server_longest_turn_ms: med(server, 'longestTurnMs'),
      load_server_longest_turn_max_ms: round(Math.max(...server.map((m) => m.longestTurnMs)), 1),
      load_server_longest_iteration_max_ms: round(Math.max(...server.map((m) => m.longestIterationMs)), 1),
      load_server_longest_task_cpu_ms: med(server, 'longestTaskCpuMs'),
      load_server_longest_iteration_ms: med(server, 'longestIterationMs'),
      load_router_loaded_ms: med(routed, 'ms'),
      load_router_longest_turn_ms: med(routed, 'longestTurnMs'),
      load_router_longest_turn_max_ms: round(Math.max(...routed.map((m) => m.longestTurnMs)), 1),
      load_router_longest_iteration_max_ms: round(Math.max(...routed.map((m) => m.longestIterationMs)), 1),
      load_router_longest_task_cpu_ms: med(routed, 'longestTaskCpuMs'),
      load_router_longest_iteration_ms: med(routed, 'longestIterationMs'),
      load_router_replay_ms: med(routed, 'replayMs'),
      load_router_restore_ms: med(routed, 'restoreMs'),
      load_router_restore_max_ms: round(Math.max(...routed.map((m) => m.restoreMs)), 1),
      load_router_restore_longest_iteration_ms: med(routed, 'restoreLongestIterationMs'),
      load_router_restore_longest_iteration_max_ms: round(
        Math.max(...routed.map((m) => m.restoreLongestIterationMs)),
        1,
      ),
      load_bare_replay_ms: med(bare, 'ms'),
      load_bare_replay_longest_turn_ms: med(bare, 'longestTurnMs'),
      load_bare_replay_longest_task_cpu_ms: med(bare, 'longestTaskCpuMs'),
      load_bare_replay_longest_iteration_ms: med(bare, 'longestIterationMs'),
      load_bare_replay_unsliced_ms: med(unsliced, 'ms'),
      load_bare_replay_unsliced_longest_iteration_ms: med(unsliced, 'longestIterationMs'),
      load_empty_server_ready_ms: med(empty, 'ms'),
      load_empty_server_longest_turn_ms: med(empty, 'longestTurnMs'),
      load_empty_server_longest_task_cpu_ms: med(empty, 'longestTaskCpuMs'),
      load_empty_server_longest_iteration_ms: med(empty, 'longestIterationMs'),
    };
    table([
      ['case (median of rounds)', 'ms', 'longest timer wait', 'longest task CPU', 'longest iteration'],
      [
        'server start → ready, loaded partition',
        figures.load_server_ready_ms,
        figures.load_server_longest_turn_ms,
        figures.load_server_longest_task_cpu_ms,
        figures.load_server_longest_iteration_ms,
      ],
      [
        'router elected → shard loaded',
        figures.load_router_loaded_ms,
        figures.load_router_longest_turn_ms,
        figures.load_router_longest_task_cpu_ms,
        figures.load_router_longest_iteration_ms,
      ],
      [
        '  of which replay / restore (in slices)',
        `${figures.load_router_replay_ms} / ${figures.load_router_restore_ms}`,
        '',
        '',
        '',
      ],
      [
        'bare replay (records alone, no shard)',
        figures.load_bare_replay_ms,
        figures.load_bare_replay_longest_turn_ms,
        figures.load_bare_replay_longest_task_cpu_ms,
        figures.load_bare_replay_longest_iteration_ms,
      ],
      [
        'bare replay unsliced (one step; baseline)',
        figures.load_bare_replay_unsliced_ms,
        '',
        '',
        figures.load_bare_replay_unsliced_longest_iteration_ms,
      ],
      [
        'server start → ready, empty directory',
        figures.load_empty_server_ready_ms,
        figures.load_empty_server_longest_turn_ms,
        figures.load_empty_server_longest_task_cpu_ms,
        figures.load_empty_server_longest_iteration_ms,
      ],
    ]);
    const goal = (ms: number): string => `≤ ${LONGEST_TURN_GOAL_MS} ${verdict(ms <= LONGEST_TURN_GOAL_MS)}`;
    table([
      ['figure, worst round (ms)', 'value', 'goal'],
      [
        'longest timer wait, server start → ready',
        figures.load_server_longest_turn_max_ms,
        goal(figures.load_server_longest_turn_max_ms),
      ],
      [
        'longest iteration, server start → ready',
        figures.load_server_longest_iteration_max_ms,
        goal(figures.load_server_longest_iteration_max_ms),
      ],
      [
        'longest iteration, router elected → loaded',
        figures.load_router_longest_iteration_max_ms,
        goal(figures.load_router_longest_iteration_max_ms),
      ],
      [
        'longest timer wait, router elected → loaded',
        figures.load_router_longest_turn_max_ms,
        goal(figures.load_router_longest_turn_max_ms),
      ],
      [
        'longest iteration of the restore (shard)',
        figures.load_router_restore_longest_iteration_max_ms,
        goal(figures.load_router_restore_longest_iteration_max_ms),
      ],
      ['restore, all slices (shard; no goal)', figures.load_router_restore_max_ms, ''],
    ]);
    return figures;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
