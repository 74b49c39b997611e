import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { PartitionLog } from '../../src/log/storage';
import { SYSTEM_TIME } from '../../src/time';
import { clusterBrokerClient, fetchOne, seenRecords } from './cluster-broker-client';
import type { PartitionMetadataWire } from './cluster-broker-client';
import { leaderFinder, monotonicMs, type LeaderInfo } from './cluster-clients';
import { freePorts, startEtcd, type EtcdProcess } from './etcd';
import { groupCoordinatorClient } from './grpc-clients';
import type { FinalReplicaLog, LogHistory, PartitionRef, SeenRecord } from './log-history';
import { spawnCohort, type CohortProcess } from './spawn-cohort';
import { stopProcess } from './stopped-process';
import { makeTlsFixtures, type TlsFixtures } from './tls-fixtures';

/**
 * A cohort cluster of real processes for fault tests and benches: one etcd (test/support/etcd.ts) and N
 * cohort nodes started as `npm start` starts one (spawn-cohort.ts), each with a fixed port (its
 * advertised address survives a restart), a data directory under one temporary root, the admin listener
 * on a free port, and one cluster secret shared by the nodes.
 *
 * Faults act on the real processes: `kill` (SIGKILL), `pause` / `resume` (SIGSTOP / SIGCONT), `restart`
 * (a new process on the same data directory and port), and the same for etcd. `stop` ends everything
 * and removes the root, whatever state it is in; call it in afterAll (and check there with
 * liveChildProcesses() that nothing is left). Every wait has a deadline and says what it waited for.
 *
 * `mode: 'single'` starts one node without etcd, as `npm start` runs by default: the baseline a bench
 * compares the cluster with, driven by the same clients and read back the same way. `lockedDownEtcd`
 * runs etcd with TLS, client certificates and authentication, and the nodes with what they need for it.
 */
export interface CohortClusterOptions {
  /** 'cluster' (default): etcd and `nodeCount` nodes; 'single': one node, no etcd, no cluster flags. */
  readonly mode?: 'cluster' | 'single';
  /** Default 3. */
  readonly nodeCount?: number;
  /** `--cluster-id`; a name of its own by default (two clusters may be given the same one on two etcds). */
  readonly clusterId?: string;
  /** `--node-session-timeout-ms` (default 3,000: etcd's minimum TTL is 2 s). */
  readonly sessionTimeoutMs?: number;
  /** `--min-insync-replicas` (default 2 in a cluster, 1 for a single node). */
  readonly minInsyncReplicas?: number;
  /** `--replica-lag-time-max-ms` (default 2,000: an ISR shrink happens within a test). */
  readonly replicaLagTimeMaxMs?: number;
  /** More arguments for every node. */
  readonly extraArgs?: readonly string[];
  /** How long a node may take from spawn to /readyz 200 (default 60 s: a loaded 2-core machine). */
  readonly readyTimeoutMs?: number;
  /**
   * Run etcd locked down as docs/operations.md says: TLS only, with client certificates
   * (--client-cert-auth), authentication on, the nodes' user allowed the cluster's prefix and nothing
   * else. Every node gets `--etcd-tls-ca`, `--etcd-tls-cert`, `--etcd-tls-key`, `--etcd-username` and
   * `--etcd-password-file`. `tokenTtlSeconds` is etcd's --auth-token-ttl (300 by default).
   */
  readonly lockedDownEtcd?: { readonly tokenTtlSeconds?: number };
}

export type NodeState = 'running' | 'paused' | 'killed' | 'stopped';

export interface ClusterNodeHandle {
  readonly nodeId: number;
  readonly port: number;
  /** 127.0.0.1:port, the broker address clients and peers use. */
  readonly target: string;
  readonly dataDir: string;
  readonly state: NodeState;
  /** host:port of the admin listener of the current process (changes with each restart). */
  readonly adminAddress: string | undefined;
  readonly process: CohortProcess | undefined;
}

interface NodeSlot {
  readonly nodeId: number;
  readonly port: number;
  readonly target: string;
  readonly dataDir: string;
  state: NodeState;
  adminAddress: string | undefined;
  process: CohortProcess | undefined;
}

/** A partition's offsets on one node, as its /metrics says. */
export interface ReplicaOffsets {
  readonly highWatermark: number;
  readonly logEndOffset: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const keyOf = (ref: PartitionRef): string => `${ref.topic}-${ref.partition}`;

/** Polls `check` every `intervalMs` until it returns a value, or throws saying what did not happen. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined> | T | undefined,
  intervalMs = 50,
): Promise<T> {
  const deadline = monotonicMs() + timeoutMs;
  let lastError: unknown;
  while (true) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (monotonicMs() >= deadline) {
      const cause = lastError === undefined ? '' : ` (last error: ${String(lastError)})`;
      throw new Error(`${what} did not happen within ${timeoutMs} ms${cause}`);
    }
    await sleep(intervalMs);
  }
}

/** The flags a node needs to reach a locked-down etcd, and the certificates to remove at the end. */
interface EtcdAccess {
  readonly args: readonly string[];
  readonly tls: TlsFixtures;
}

/** A node's flags for `etcd`'s TLS files and user, the password written to a file only its owner reads. */
function lockedDownEtcdArgs(etcd: EtcdProcess, root: string): string[] {
  const { tlsFiles } = etcd;
  const { credentials } = etcd.clientOptions;
  if (tlsFiles === undefined || credentials === undefined) throw new Error('etcd is not locked down');
  const passwordFile = join(root, 'etcd-password');
  writeFileSync(passwordFile, `${credentials.password}\n`, { mode: 0o600 });
  return [
    '--etcd-tls-ca',
    tlsFiles.ca,
    '--etcd-tls-cert',
    tlsFiles.cert,
    '--etcd-tls-key',
    tlsFiles.key,
    '--etcd-username',
    credentials.username,
    '--etcd-password-file',
    passwordFile,
  ];
}

export class CohortCluster {
  readonly sessionTimeoutMs: number;
  private readonly slots = new Map<number, NodeSlot>();
  private readonly secret = randomBytes(32).toString('hex');
  private isStopped = false;

  private constructor(
    readonly clusterId: string,
    /** Undefined for a single node. */
    readonly etcd: EtcdProcess | undefined,
    private readonly etcdAccess: EtcdAccess | undefined,
    readonly root: string,
    private readonly options: CohortClusterOptions,
    ports: readonly number[],
  ) {
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 3_000;
    ports.forEach((port, i) => {
      const nodeId = i + 1;
      const dataDir = join(root, `node-${nodeId}`);
      mkdirSync(dataDir, { recursive: true });
      this.slots.set(nodeId, {
        nodeId,
        port,
        target: `127.0.0.1:${port}`,
        dataDir,
        state: 'stopped',
        adminAddress: undefined,
        process: undefined,
      });
    });
  }

  /** Starts etcd and every node, and waits until each node's /readyz answers 200. */
  static async start(options: CohortClusterOptions = {}): Promise<CohortCluster> {
    const isSingle = options.mode === 'single';
    const clusterId = options.clusterId ?? `cohort-test-${process.pid}-${randomBytes(3).toString('hex')}`;
    const root = mkdtempSync(join(tmpdir(), 'cohort-cluster-'));
    let etcd: EtcdProcess | undefined;
    let tls: TlsFixtures | undefined;
    let cluster: CohortCluster | undefined;
    try {
      let access: EtcdAccess | undefined;
      if (isSingle) {
        etcd = undefined;
      } else if (options.lockedDownEtcd === undefined) {
        etcd = await startEtcd();
      } else {
        tls = makeTlsFixtures();
        const { tokenTtlSeconds } = options.lockedDownEtcd;
        etcd = await startEtcd({
          tls: { fixtures: tls },
          auth: { prefix: `/${clusterId}/`, ...(tokenTtlSeconds === undefined ? {} : { tokenTtlSeconds }) },
        });
        access = { args: lockedDownEtcdArgs(etcd, root), tls };
      }
      cluster = new CohortCluster(
        clusterId,
        etcd,
        access,
        root,
        options,
        await freePorts(isSingle ? 1 : (options.nodeCount ?? 3)),
      );
      const started = cluster;
      await Promise.all(cluster.nodeIds().map((nodeId) => started.startNode(nodeId)));
      return cluster;
    } catch (error) {
      if (cluster !== undefined) await cluster.stop();
      else {
        await etcd?.stop();
        tls?.cleanup();
        rmSync(root, { recursive: true, force: true });
      }
      throw error;
    }
  }

  nodeIds(): number[] {
    return [...this.slots.keys()];
  }

  node(nodeId: number): ClusterNodeHandle {
    const slot = this.slots.get(nodeId);
    if (slot === undefined) throw new Error(`no node ${nodeId}`);
    return slot;
  }

  /** Every node's id and broker address, whatever its state (a call to a dead one fails fast). */
  readonly nodeTargets = (): ReadonlyMap<number, string> =>
    new Map([...this.slots.values()].map((slot) => [slot.nodeId, slot.target]));

  runningNodeIds(): number[] {
    return [...this.slots.values()].filter((slot) => slot.state === 'running').map((slot) => slot.nodeId);
  }

  /** Spawns the node (again, on its data directory and port) and waits for /readyz. */
  async startNode(nodeId: number): Promise<void> {
    const slot = this.slot(nodeId);
    const child = this.spawnNode(nodeId);
    const readyTimeoutMs = this.options.readyTimeoutMs ?? 60_000;
    let timeout: NodeJS.Timeout | undefined;
    const listening = await Promise.race([
      child.waitForLog('cohort listening'),
      new Promise<never>((_, reject) => {
        timeout = setTimeout(
          () =>
            reject(new Error(`node ${nodeId} did not log 'cohort listening' within ${readyTimeoutMs} ms`)),
          readyTimeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timeout));
    slot.adminAddress = (listening.adminAddress as string | null) ?? undefined;
    if (slot.adminAddress === undefined) throw new Error(`node ${nodeId} has no admin listener`);
    await waitFor(`node ${nodeId} /readyz to answer 200`, readyTimeoutMs, async () =>
      (await httpGet(slot.adminAddress!, '/readyz')).status === 200 ? true : undefined,
    );
  }

  /**
   * Spawns the node (again, on its data directory and port) without waiting for anything: for a node
   * expected to refuse to start, or to stay unready.
   */
  spawnNode(nodeId: number): CohortProcess {
    const slot = this.slot(nodeId);
    if (slot.state === 'running' || slot.state === 'paused') throw new Error(`node ${nodeId} is running`);
    const clusterArgs =
      this.etcd === undefined
        ? []
        : [
            '--advertised-address',
            slot.target,
            '--etcd-endpoints',
            this.etcd.endpoints.join(','),
            '--cluster-id',
            this.clusterId,
            '--node-session-timeout-ms',
            String(this.sessionTimeoutMs),
            ...(this.etcdAccess?.args ?? []),
          ];
    const args = [
      '--listen',
      slot.target,
      '--data-dir',
      slot.dataDir,
      '--node-id',
      String(nodeId),
      ...clusterArgs,
      '--min-insync-replicas',
      String(this.options.minInsyncReplicas ?? (this.etcd === undefined ? 1 : 2)),
      '--replica-lag-time-max-ms',
      String(this.options.replicaLagTimeMaxMs ?? 2_000),
      ...(this.options.extraArgs ?? []),
    ];
    const child = spawnCohort(args, this.etcd === undefined ? {} : { COHORT_CLUSTER_SECRET: this.secret });
    slot.process = child;
    slot.state = 'running';
    slot.adminAddress = undefined;
    void child.exited.then(() => {
      if (slot.process === child && slot.state !== 'stopped') slot.state = 'killed';
    });
    child.waitForLog('cohort listening').then(
      (listening) => {
        if (slot.process === child)
          slot.adminAddress = (listening.adminAddress as string | null) ?? undefined;
      },
      () => undefined, // exited first: a node that refuses to start has no admin listener
    );
    return child;
  }

  /** SIGTERM, and waits for the exit (SIGKILL after 10 s): a clean stop; the data directory stays. */
  async stopNode(nodeId: number): Promise<void> {
    await this.stopSlot(this.slot(nodeId));
  }

  /**
   * A request to the node's admin listener (the address its current process logged): `/readyz`, or
   * `POST /recover-metadata?nodes=...`. Rejects when the node does not answer.
   */
  admin(
    nodeId: number,
    path: string,
    method: 'GET' | 'POST' = 'GET',
  ): Promise<{ status: number; body: string }> {
    const address = this.slot(nodeId).adminAddress;
    if (address === undefined) return Promise.reject(new Error(`node ${nodeId} has no admin address yet`));
    return httpGet(address, path, method);
  }

  /** SIGKILL; the data directory stays for `restart`. */
  async kill(nodeId: number): Promise<void> {
    const slot = this.slot(nodeId);
    if (slot.process === undefined) return;
    slot.process.child.kill('SIGCONT');
    await slot.process.kill();
    slot.state = 'killed';
  }

  /**
   * SIGSTOP, resolved once every thread has stopped: the node answers nothing and renews no session;
   * its sockets stay open.
   */
  async pause(nodeId: number): Promise<void> {
    const slot = this.slot(nodeId);
    if (slot.state !== 'running') throw new Error(`node ${nodeId} is ${slot.state}, not running`);
    slot.state = 'paused';
    await stopProcess(slot.process!.child);
  }

  resume(nodeId: number): void {
    const slot = this.slot(nodeId);
    if (slot.state !== 'paused') throw new Error(`node ${nodeId} is ${slot.state}, not paused`);
    slot.process!.child.kill('SIGCONT');
    slot.state = 'running';
  }

  /** Kills the node if it runs, then starts it again on the same data directory and port. */
  async restart(nodeId: number): Promise<void> {
    await this.kill(nodeId);
    await this.startNode(nodeId);
  }

  /**
   * The node that coordinates `groupId` (FindCoordinator), asked of each running node in turn until one
   * names a node other than `except`; a node that does not answer is skipped.
   */
  async coordinatorOf(groupId: string, except?: number, timeoutMs = 60_000): Promise<number> {
    const other = except === undefined ? '' : ` other than node ${except}`;
    return waitFor(`a coordinator of ${groupId}${other}`, timeoutMs, async () => {
      for (const id of this.runningNodeIds()) {
        const client = groupCoordinatorClient(this.node(id).target);
        try {
          const { coordinators } = await client.findCoordinator({ keyType: 0, keys: [groupId] });
          const found = coordinators[0];
          if (found?.errorCode === ErrorCode.NONE && found.nodeId !== except) return found.nodeId;
        } catch {
          // that node is not answering: ask the next
        } finally {
          client.close();
        }
      }
      return undefined;
    });
  }

  /** Creates a topic through the first node that accepts it (the request may reach one before the controller knows it is one). */
  async createTopic(
    name: string,
    numPartitions: number,
    replicationFactor: number,
    timeoutMs = 30_000,
  ): Promise<void> {
    let answered = false;
    await waitFor(`topic ${name} to be created`, timeoutMs, async () => {
      for (const nodeId of this.runningNodeIds()) {
        const client = clusterBrokerClient(this.slot(nodeId).target);
        try {
          const answer = await client.createTopics(
            { topics: [{ name, numPartitions, replicationFactor }] },
            5_000,
          );
          const code = answer.topics[0]?.errorCode;
          // After an answer that was lost, the topic may already exist: that is ours.
          if (code === ErrorCode.NONE || (answered && code === ErrorCode.TOPIC_ALREADY_EXISTS)) return true;
        } catch {
          answered = true;
        } finally {
          client.close();
        }
      }
      return undefined;
    });
  }

  /** The partition's metadata as `nodeId` answers it (undefined if it does not answer or knows no such partition). */
  async partitionMetadata(nodeId: number, ref: PartitionRef): Promise<PartitionMetadataWire | undefined> {
    const client = clusterBrokerClient(this.slot(nodeId).target);
    try {
      const answer = await client.metadata({ topics: [ref.topic] }, 1_000);
      const topic = answer.topics.find((t) => t.name === ref.topic);
      return topic?.partitions.find((p) => p.partitionIndex === ref.partition);
    } catch {
      return undefined;
    } finally {
      client.close();
    }
  }

  /** Waits until the nodes name a leader of the partition (the one at the highest leader epoch). */
  async leaderOf(ref: PartitionRef, timeoutMs = 30_000, history?: LogHistory): Promise<LeaderInfo> {
    const finder = leaderFinder(this.nodeTargets, ref, history);
    try {
      return await waitFor(`a leader of ${keyOf(ref)}`, timeoutMs, () => finder.find(), 100);
    } finally {
      finder.close();
    }
  }

  /** Waits until the leader of the partition reports `isr` (in any order) as its in-sync replicas. */
  async awaitIsr(ref: PartitionRef, isr: readonly number[], timeoutMs = 30_000): Promise<LeaderInfo> {
    const wanted = [...isr].sort().join();
    return waitFor(`ISR of ${keyOf(ref)} to be [${wanted}]`, timeoutMs, async () => {
      const leader = await this.leaderOf(ref, 2_000);
      const metadata = await this.partitionMetadata(leader.nodeId, ref);
      return metadata !== undefined && [...metadata.isrNodes].sort().join() === wanted ? leader : undefined;
    });
  }

  /** A running node's /metrics text (Prometheus exposition), or undefined if it is not running. */
  async metrics(nodeId: number): Promise<string | undefined> {
    const slot = this.slot(nodeId);
    if (slot.state !== 'running' || slot.adminAddress === undefined) return undefined;
    const { status, body } = await httpGet(slot.adminAddress, '/metrics');
    return status === 200 ? body : undefined;
  }

  /** The partition's HW and LEO on a node, from its /metrics (undefined if it is not running or hosts none). */
  async replicaOffsets(nodeId: number, ref: PartitionRef): Promise<ReplicaOffsets | undefined> {
    const body = await this.metrics(nodeId);
    if (body === undefined) return undefined;
    const highWatermark = metricOf(body, 'cohort_partition_high_watermark', ref);
    const logEndOffset = metricOf(body, 'cohort_partition_log_end_offset', ref);
    return highWatermark === undefined || logEndOffset === undefined
      ? undefined
      : { highWatermark, logEndOffset };
  }

  /**
   * Waits until the partition is at rest: every running node holds it with one LEO, and every HW has
   * reached it. Call with no client producing. Returns each running node's offsets.
   */
  async quiesce(ref: PartitionRef, timeoutMs = 30_000): Promise<Map<number, ReplicaOffsets>> {
    let last = new Map<number, ReplicaOffsets>();
    try {
      return await waitFor(
        `${keyOf(ref)} to be replicated to every running node`,
        timeoutMs,
        async () => {
          const offsets = new Map<number, ReplicaOffsets>();
          for (const nodeId of this.runningNodeIds()) {
            const found = await this.replicaOffsets(nodeId, ref);
            if (found !== undefined) offsets.set(nodeId, found);
          }
          last = offsets;
          const all = [...offsets.values()];
          const leo = all[0]?.logEndOffset;
          const isAtRest =
            offsets.size === this.runningNodeIds().length &&
            all.every((o) => o.logEndOffset === leo && o.highWatermark === leo);
          return isAtRest ? offsets : undefined;
        },
        200,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify([...last])}`);
    }
  }

  /**
   * The end of a run: for each partition, waits for rest, reads the leader's log as a consumer up to its
   * HW (recorded in the partition's history as reads of "final-reader"), notes each running node's HW
   * and LEO, then stops every node and reads each replica's whole log from its data directory. The nodes
   * are stopped afterwards (etcd still runs until `stop`).
   */
  async collectFinalLogs(
    refs: readonly PartitionRef[],
    historyOf: (ref: PartitionRef) => LogHistory | undefined = () => undefined,
  ): Promise<FinalReplicaLog[]> {
    const atRest = new Map<string, { leader: LeaderInfo; offsets: Map<number, ReplicaOffsets> }>();
    for (const ref of refs) {
      const history = historyOf(ref);
      const offsets = await this.quiesce(ref);
      const leader = await this.leaderOf(ref, 10_000, history);
      await this.readAsConsumer(leader, ref, offsets.get(leader.nodeId)!.highWatermark, history);
      atRest.set(keyOf(ref), { leader, offsets });
    }
    const stoppedNodes = this.runningNodeIds();
    await this.stopNodes();
    const logs: FinalReplicaLog[] = [];
    for (const ref of refs) {
      const { leader, offsets } = atRest.get(keyOf(ref))!;
      for (const nodeId of stoppedNodes) {
        const replica = offsets.get(nodeId);
        const dir = join(this.slot(nodeId).dataDir, keyOf(ref));
        if (replica === undefined || !existsSync(dir)) continue;
        const { records, logEndOffset } = await readPartitionDir(dir);
        logs.push({
          ...ref,
          nodeId,
          isLeader: nodeId === leader.nodeId,
          records,
          highWatermark: replica.highWatermark,
          logEndOffset,
          source: 'data-dir',
        });
      }
    }
    return logs;
  }

  /** Kills etcd (SIGKILL); its data stays for `restartEtcd`. */
  killEtcd(): Promise<void> {
    return this.requireEtcd().kill();
  }

  restartEtcd(): Promise<void> {
    return this.requireEtcd().restart();
  }

  private requireEtcd(): EtcdProcess {
    if (this.etcd === undefined) throw new Error('a single node runs without etcd');
    return this.etcd;
  }

  /** The tail of every node's output, for a failed test's message. */
  describeNodes(lines = 30): string {
    return [...this.slots.values()]
      .map((slot) => {
        const out = (slot.process?.lines ?? [])
          .slice(-lines)
          .map((l) => (typeof l === 'string' ? l : JSON.stringify(l)));
        return `node ${slot.nodeId} (${slot.state}, ${slot.target}):\n${out.join('\n')}\n${slot.process?.stderr().slice(-2_000) ?? ''}`;
      })
      .join('\n');
  }

  /** Ends every node (SIGTERM, SIGKILL after 10 s), then etcd, and removes the data. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.isStopped) return;
    this.isStopped = true;
    try {
      await this.stopNodes();
    } finally {
      await this.etcd?.stop();
      this.etcdAccess?.tls.cleanup();
      rmSync(this.root, { recursive: true, force: true });
    }
  }

  private async stopNodes(): Promise<void> {
    await Promise.all([...this.slots.values()].map((slot) => this.stopSlot(slot)));
  }

  private async stopSlot(slot: NodeSlot): Promise<void> {
    const child = slot.process;
    if (child === undefined) return;
    slot.state = 'stopped';
    if (child.child.exitCode === null && child.child.signalCode === null) {
      child.child.kill('SIGCONT');
      child.child.kill('SIGTERM');
      const timeout = setTimeout(() => child.child.kill('SIGKILL'), 10_000);
      await child.exited;
      clearTimeout(timeout);
    }
  }

  private async readAsConsumer(
    leader: LeaderInfo,
    ref: PartitionRef,
    highWatermark: number,
    history: LogHistory | undefined,
  ): Promise<void> {
    const { nodeId, leaderEpoch } = leader;
    const client = clusterBrokerClient(this.slot(nodeId).target);
    try {
      let offset = 0;
      while (offset < highWatermark) {
        const pending = history?.invokeFetch('final-reader', { ...ref, nodeId }, offset);
        const answer = await client.fetch(
          fetchOne(ref.topic, ref.partition, offset, { maxWaitMs: 0, currentLeaderEpoch: leaderEpoch }),
          10_000,
        );
        const p = answer.responses[0]?.partitions[0];
        if (p === undefined || p.errorCode !== ErrorCode.NONE || p.records.length === 0) {
          pending?.fail(`error ${p?.errorCode ?? answer.errorCode}`);
          throw new Error(
            `node ${nodeId} served no records of ${keyOf(ref)} at ${offset} below its HW ${highWatermark}`,
          );
        }
        const records = seenRecords(p.records);
        pending?.ok(records, p.highWatermark);
        offset = records[records.length - 1]!.offset + 1;
      }
    } finally {
      client.close();
    }
  }

  private slot(nodeId: number): NodeSlot {
    const slot = this.slots.get(nodeId);
    if (slot === undefined) throw new Error(`no node ${nodeId}`);
    return slot;
  }
}

/** Every record of a stopped node's partition directory, through the log's own reader. */
async function readPartitionDir(dir: string): Promise<{ records: SeenRecord[]; logEndOffset: number }> {
  const log = PartitionLog.open(dir, { time: SYSTEM_TIME, syncDirectories: false });
  try {
    const records: SeenRecord[] = [];
    let offset = log.logStartOffset;
    while (offset < log.logEndOffset) {
      const read = log.read(offset, 16 * 1024 * 1024);
      for (const record of read.records)
        records.push({ offset: record.offset, value: record.value?.toString() ?? '' });
      if (read.nextFetchOffset <= offset) break;
      offset = read.nextFetchOffset;
    }
    return { records, logEndOffset: log.logEndOffset };
  } finally {
    await log.close();
  }
}

/** A gauge's value for one partition in Prometheus text, or undefined. */
function metricOf(body: string, name: string, ref: PartitionRef): number | undefined {
  for (const line of body.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labels = line.slice(name.length + 1, line.indexOf('}'));
    if (labels.includes(`topic="${ref.topic}"`) && labels.includes(`partition="${ref.partition}"`))
      return Number(line.slice(line.indexOf('}') + 1).trim());
  }
  return undefined;
}

function httpGet(
  address: string,
  path: string,
  method: 'GET' | 'POST' = 'GET',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`http://${address}${path}`, { method, timeout: 10_000 }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('timeout', () => request.destroy(new Error(`${method} ${path} on ${address} timed out`)));
    request.on('error', reject);
    request.end();
  });
}
