import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import type { LogConfig, LogRecoveryOptions } from './storage';
import { createLogConfig, PartitionLog } from './storage';
import { readCheckpointFile, writeCheckpointFileSync } from './storage/checkpoint-file';
import { ensureDirectory, fsyncDirectory, fsyncDirectorySync } from './storage/file-io';
import { topicNameProblem, topicPartitionKey } from './topic-partition';

/** A topic as the registry keeps it: its partitions and each one's replicas, the leader first. */
export interface TopicAssignment {
  readonly name: string;
  /**
   * The topic's id (Kafka's topic id), made when it is created: each of its partition directories holds
   * it in `partition.metadata`, so a directory of an earlier topic of the same name is never read as
   * this one's. Absent for topics created before topic ids.
   */
  readonly topicId?: string;
  readonly partitions: readonly { readonly partitionIndex: number; readonly replicas: readonly number[] }[];
}

interface TopicLogSettings {
  readonly config: LogConfig;
  readonly recovery: LogRecoveryOptions;
}

const TOPICS_DIR = 'topics';
/** Beside a partition's segments: the id of the topic the directory belongs to (Kafka's file and format). */
export const PARTITION_METADATA_FILE = 'partition.metadata';
/** A partition directory of an earlier incarnation of its topic, moved aside: `<topic>-<p>.<id>-stray`. */
export const STRAY_SUFFIX = '-stray';
const TOPIC_FILE_SUFFIX = '.json';
const TEMP_SUFFIX = '.tmp';

/**
 * The data directory (Kafka's LogManager, reduced): where each partition's log lives and which topics
 * exist.
 *
 *   <dataDir>/topics/<topic>.json   the topic registry: partitions and their replicas
 *   <dataDir>/<topic>-<partition>/  one PartitionLog per partition hosted here (see docs/storage.md)
 *
 * Creating a topic opens (creates) its partition logs first and writes its registry file last, through
 * a temporary file, fsync and rename: a crash in between leaves empty partition directories that belong
 * to no topic (and are reused if the topic is created again), never a registered topic missing a log.
 * Directory names cannot collide with topics/: a partition directory always ends in '-<digits>'.
 *
 * Nothing is written until the first topic is created, so a server that never stores anything leaves
 * no data directory behind.
 */
export class LogManager {
  readonly logConfig: LogConfig;
  private readonly topicConfigs = new Map<string, TopicLogSettings>();

  constructor(
    readonly dataDir: string,
    logConfig: Partial<LogConfig>,
    private readonly time: Time,
    /** What recovery may cut when a log opens, and whom it tells. */
    private readonly recovery: LogRecoveryOptions = {},
  ) {
    this.logConfig = createLogConfig(logConfig);
  }

  /**
   * Gives one topic its own log settings instead of the data directory's (Kafka's per-topic configs; the
   * internal `__consumer_offsets` is compacted and always opens with `truncateCorruptLogs`). `config` is
   * complete: it does not inherit the server's `--log-*` settings. Call before any of its logs opens.
   */
  setTopicConfig(
    topic: string,
    config: Partial<LogConfig>,
    recovery: Partial<LogRecoveryOptions> = {},
  ): void {
    this.topicConfigs.set(topic, {
      config: createLogConfig(config),
      recovery: { ...this.recovery, ...recovery },
    });
  }

  /** The settings a topic's logs open with. */
  configOf(topic: string): LogConfig {
    return this.topicConfigs.get(topic)?.config ?? this.logConfig;
  }

  /**
   * Every registered topic, read back. A registry file that does not parse stops the start-up with
   * UNKNOWN_SERVER_ERROR: silently forgetting a topic would lose its records.
   */
  loadTopics(): TopicAssignment[] {
    const dir = path.join(this.dataDir, TOPICS_DIR);
    if (!fs.existsSync(dir)) return [];
    const topics: TopicAssignment[] = [];
    for (const name of fs.readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      if (name.endsWith(TEMP_SUFFIX)) {
        // A registry write that never reached its rename: the topic was never created.
        fs.rmSync(file, { force: true });
        continue;
      }
      if (!name.endsWith(TOPIC_FILE_SUFFIX)) continue;
      topics.push(parseAssignment(fs.readFileSync(file, 'utf8'), file));
    }
    return topics;
  }

  /**
   * Opens (creating or recovering) the log of one partition; CorruptLogError if it is damaged. With the
   * topic's id, the directory is the topic's (see `claimDirectory`).
   */
  openLog(topic: string, partitionIndex: number, topicId?: string): PartitionLog {
    const dir = path.join(this.dataDir, topicPartitionKey(topic, partitionIndex));
    this.claimDirectory(dir, topicId);
    const log = PartitionLog.open(dir, {
      time: this.time,
      config: this.configOf(topic),
      recovery: this.recoveryOf(topic),
    });
    if (topicId !== undefined) writePartitionMetadata(dir, topicId, true);
    return log;
  }

  /**
   * Opens (creating) the log of one partition of a topic being created, without an fsync on the event
   * loop: `syncNewLogs` must follow, before the topic is registered. Thousands of partitions cost three
   * synchronous fsyncs each otherwise, and under I/O load a slice of them held the loop for 0.6 s.
   */
  createLog(topic: string, partitionIndex: number, topicId?: string): PartitionLog {
    ensureDirectory(this.dataDir);
    const dir = path.join(this.dataDir, topicPartitionKey(topic, partitionIndex));
    this.claimDirectory(dir, topicId);
    const log = PartitionLog.open(dir, {
      time: this.time,
      config: this.configOf(topic),
      // A directory left by a create that crashed is reused, and recovered like any other.
      recovery: this.recoveryOf(topic),
      syncDirectories: false,
    });
    // Not fsynced, as the directory is not: a crash before the topic is registered loses a topic nobody
    // wrote to, and a directory without the file is taken by the next topic of its name.
    if (topicId !== undefined) writePartitionMetadata(dir, topicId, false);
    return log;
  }

  /** The topic id a partition directory's `partition.metadata` names; undefined without one. */
  topicIdOf(topic: string, partitionIndex: number): string | undefined {
    return readPartitionMetadata(path.join(this.dataDir, topicPartitionKey(topic, partitionIndex)));
  }

  /**
   * Keeps a directory of another incarnation of the topic from being read as this one's (Kafka's topic
   * ids): when its `partition.metadata` names another topic id, the directory is moved aside, to
   * `<topic>-<p>.<its topic id>-stray` (as Kafka names stray logs; never read again, left for the operator
   * to delete), and the log opens empty. A directory without the file (written before topic ids, or a
   * create that crashed before writing it) is taken as this topic's.
   */
  private claimDirectory(dir: string, topicId: string | undefined): void {
    if (topicId === undefined) return;
    const found = readPartitionMetadata(dir);
    if (found === undefined || found === topicId) return;
    // An earlier stray directory of the same id is kept too: the next free name.
    let stray = `${dir}.${found}${STRAY_SUFFIX}`;
    for (let n = 1; fs.existsSync(stray); n++) stray = `${dir}.${found}.${n}${STRAY_SUFFIX}`;
    fs.renameSync(dir, stray);
    fsyncDirectorySync(this.dataDir);
    this.recovery.listener?.onStrayLog?.(dir, stray, found, topicId);
  }

  /**
   * Makes the directories `createLog` made durable in the data directory: one fsync, on libuv's thread
   * pool. (Each log fsyncs its own directory with its first flush, before any append is acknowledged.)
   */
  syncNewLogs(): Promise<void> {
    return fsyncDirectory(this.dataDir);
  }

  private recoveryOf(topic: string): LogRecoveryOptions {
    return this.topicConfigs.get(topic)?.recovery ?? this.recovery;
  }

  /** Whether a topic is in the registry (its file exists). */
  hasTopic(name: string): boolean {
    return fs.existsSync(path.join(this.dataDir, TOPICS_DIR, `${name}${TOPIC_FILE_SUFFIX}`));
  }

  /**
   * Every partition directory under the data directory (`<topic>-<index>`, a valid topic name), whether a
   * topic names it or not: what this node holds on disk.
   */
  partitionDirectories(): { readonly topic: string; readonly partitionIndex: number }[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dataDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const found: { topic: string; partitionIndex: number }[] = [];
    for (const name of names.sort()) {
      const match = /^(.+)-(\d+)$/.exec(name);
      if (match === null || topicNameProblem(match[1]!) !== null) continue;
      const partitionIndex = Number(match[2]);
      if (!Number.isSafeInteger(partitionIndex)) continue;
      if (!fs.statSync(path.join(this.dataDir, name)).isDirectory()) continue;
      found.push({ topic: match[1]!, partitionIndex });
    }
    return found;
  }

  /** Whether the partition's directory exists (a log, or what a create that crashed left of one). */
  hasLog(topic: string, partitionIndex: number): boolean {
    return fs.existsSync(path.join(this.dataDir, topicPartitionKey(topic, partitionIndex)));
  }

  /**
   * Deletes a partition's directory and everything in it, for a create that failed before its registry
   * file was written (the log must be closed first). `syncDataDir` makes a batch of deletions durable.
   */
  deleteLog(topic: string, partitionIndex: number): void {
    fs.rmSync(path.join(this.dataDir, topicPartitionKey(topic, partitionIndex)), {
      recursive: true,
      force: true,
    });
  }

  /**
   * Removes a topic's registry file (and a temporary one), for a create that failed while writing it. Best
   * effort: the failure being handled is the one to report, and a temporary file left is removed at start.
   */
  deleteTopicFile(name: string): void {
    const file = path.join(this.dataDir, TOPICS_DIR, `${name}${TOPIC_FILE_SUFFIX}`);
    try {
      fs.rmSync(file, { force: true });
      fs.rmSync(`${file}${TEMP_SUFFIX}`, { force: true });
    } catch {
      // ignored: see above
    }
  }

  syncDataDir(): void {
    fsyncDirectorySync(this.dataDir);
  }

  /** `writeTopic` with every fsync on libuv's thread pool, for CreateTopics (see writeTopicFile). */
  writeTopicAsync(assignment: TopicAssignment): Promise<void> {
    return writeTopicFile(this.dataDir, assignment);
  }

  /** Writes (or replaces) a topic's registry file durably. */
  writeTopic(assignment: TopicAssignment): void {
    const dir = path.join(this.dataDir, TOPICS_DIR);
    ensureDirectory(dir);
    const file = path.join(dir, `${assignment.name}${TOPIC_FILE_SUFFIX}`);
    const temp = `${file}${TEMP_SUFFIX}`;
    const fd = fs.openSync(temp, 'w');
    try {
      fs.writeSync(fd, `${JSON.stringify(assignment)}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, file);
    fsyncDirectorySync(dir);
  }
}

/** `writeTopic` off the event loop: the same steps, each fsync on libuv's thread pool. */
export async function writeTopicFile(dataDir: string, assignment: TopicAssignment): Promise<void> {
  const dir = path.join(dataDir, TOPICS_DIR);
  ensureDirectory(dir);
  const file = path.join(dir, `${assignment.name}${TOPIC_FILE_SUFFIX}`);
  const temp = `${file}${TEMP_SUFFIX}`;
  const handle = await fs.promises.open(temp, 'w');
  try {
    await handle.writeFile(`${JSON.stringify(assignment)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.promises.rename(temp, file);
  await fsyncDirectory(dir);
}

function parseAssignment(text: string, file: string): TopicAssignment {
  const broken = (why: string): CohortError =>
    new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `the topic registry file ${file} ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `the topic registry file ${file} is not JSON`, {
      cause: error,
    });
  }
  const topic = value as { name?: unknown; topicId?: unknown; partitions?: unknown };
  if (typeof topic.name !== 'string' || topicNameProblem(topic.name) !== null)
    throw broken('has no valid name');
  if (!Array.isArray(topic.partitions) || topic.partitions.length === 0) throw broken('lists no partitions');
  const partitions = topic.partitions.map((entry: unknown, i: number) => {
    const partition = entry as { partitionIndex?: unknown; replicas?: unknown };
    const isValid =
      partition.partitionIndex === i &&
      Array.isArray(partition.replicas) &&
      partition.replicas.length > 0 &&
      partition.replicas.every((id) => Number.isSafeInteger(id) && (id as number) >= 0);
    if (!isValid) throw broken(`has an invalid partition ${i}`);
    return { partitionIndex: i, replicas: partition.replicas as number[] };
  });
  if (topic.topicId !== undefined && (typeof topic.topicId !== 'string' || topic.topicId === '')) {
    throw broken('has an invalid topicId');
  }
  return topic.topicId === undefined
    ? { name: topic.name, partitions }
    : { name: topic.name, topicId: topic.topicId, partitions };
}

/** The topic id in a directory's `partition.metadata`; undefined when it has none or it does not read. */
function readPartitionMetadata(dir: string): string | undefined {
  let text: string | null;
  try {
    text = readCheckpointFile(path.join(dir, PARTITION_METADATA_FILE));
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' ||
      (error as NodeJS.ErrnoException).code === 'ENOTDIR'
    ) {
      return undefined;
    }
    throw error;
  }
  // A file torn by a crash can only be one a create never finished: as if there were none.
  const match = text === null ? null : /^topic_id: *(\S+) *$/m.exec(text);
  return match?.[1];
}

function writePartitionMetadata(dir: string, topicId: string, isDurable: boolean): void {
  const file = path.join(dir, PARTITION_METADATA_FILE);
  if (readPartitionMetadata(dir) === topicId) return;
  const text = `version: 0\ntopic_id: ${topicId}\n`;
  if (isDurable) writeCheckpointFileSync(file, text);
  else fs.writeFileSync(file, text);
}
