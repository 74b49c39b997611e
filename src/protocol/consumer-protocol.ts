/**
 * The consumer protocol: how members of a `protocolType: 'consumer'` group describe their subscription in
 * JoinGroup metadata and how the leader's assignment travels in SyncGroup. The layout is Kafka's
 * ConsumerProtocol in spirit (big-endian, length-prefixed, versioned), with cohort's own field set.
 *
 * Subscription, version 1:
 * ```
 * int16  version                      1
 * int32  topic count, then each:      string topic
 * bytes  userData                     int32 length (-1 = null) + bytes
 * int32  owned-topic count, then each: string topic, int32 partition count, int32 partition…
 * int32  generationId                 -1 = unknown
 * ```
 * Assignment, version 1:
 * ```
 * int16  version                      1
 * int32  topic count, then each:      string topic, int32 partition count, int32 partition…
 * bytes  userData                     int32 length (-1 = null) + bytes
 * ```
 * `string` is an int16 byte length followed by UTF-8. Newer versions only append fields, so a decoder reads
 * the fields it knows from any version ≥ 1 and ignores the rest (as Kafka's does); at version 1 exactly,
 * trailing bytes are an error. An EMPTY assignment buffer means "no partitions": the coordinator sends it to
 * a member the leader left out.
 *
 * Decoding checks every length against the bytes left, rejects negative or duplicate partitions and
 * invalid UTF-8, and throws `ConsumerProtocolError` naming the field and byte offset.
 */
import { ConsumerProtocolError } from './consumer-protocol-error';
import { compareTopicPartitions, topicPartitionKey, type TopicPartition } from './topic-partition';

/** What a member told the group when it joined (Kafka's `ConsumerPartitionAssignor.Subscription`). */
export interface Subscription {
  /** Topics the member wants partitions of. */
  readonly topics: readonly string[];
  /** Partitions the member owned when it joined; only sticky assignors read it. */
  readonly ownedPartitions?: readonly TopicPartition[];
  /** Opaque bytes for custom assignors. */
  readonly userData?: Buffer | null;
  /**
   * The generation in which the member last owned `ownedPartitions`; -1 or absent if unknown. When members
   * disagree, only the claims of the highest generation count (an older claim is stale).
   */
  readonly generationId?: number;
}

/** The `protocolType` of consumer groups. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer';
/** The version this SDK writes. */
export const CONSUMER_PROTOCOL_VERSION = 1;

/** A decoded subscription: every field present. */
export interface DecodedSubscription extends Subscription {
  readonly topics: string[];
  readonly ownedPartitions: TopicPartition[];
  readonly userData: Buffer | null;
  readonly generationId: number;
}

/** What the leader sends one member. */
export interface ConsumerAssignment {
  readonly partitions: readonly TopicPartition[];
  readonly userData?: Buffer | null;
}

/** A decoded assignment: partitions sorted by topic, then partition. */
export interface DecodedAssignment extends ConsumerAssignment {
  readonly partitions: TopicPartition[];
  readonly userData: Buffer | null;
}

const MAX_STRING_BYTES = 0x7fff;

/** Encodes a subscription as JoinGroup metadata. */
export function encodeSubscription(subscription: Subscription): Buffer {
  const topics = subscription.topics.map(utf8);
  const owned = groupByTopic(subscription.ownedPartitions ?? []);
  const userData = subscription.userData ?? null;
  let size = 2 + 4 + 4 + (userData?.length ?? 0) + 4 + 4;
  for (const topic of topics) size += 2 + topic.length;
  for (const [topic, partitions] of owned) size += 2 + topic.length + 4 + 4 * partitions.length;
  const w = new Writer(size);
  w.int16(CONSUMER_PROTOCOL_VERSION);
  w.int32(topics.length);
  for (const topic of topics) w.string(topic);
  w.bytes(userData);
  w.partitionsByTopic(owned);
  w.int32(subscription.generationId ?? -1);
  return w.done();
}

/** Decodes JoinGroup metadata written by `encodeSubscription` (any version ≥ 1). */
export function decodeSubscription(bytes: Buffer): DecodedSubscription {
  const r = new Reader(bytes, 'subscription');
  const version = r.version();
  const topicCount = r.count('topic count', 2);
  const topics: string[] = [];
  for (let i = 0; i < topicCount; i++) topics.push(r.string('topic'));
  const userData = r.bytes('userData');
  const ownedPartitions = r.partitionsByTopic('owned partitions');
  const generationId = r.int32('generationId');
  r.end(version);
  return { topics, ownedPartitions, userData, generationId };
}

/** Encodes one member's assignment for SyncGroup. */
export function encodeAssignment(assignment: ConsumerAssignment): Buffer {
  const byTopic = groupByTopic(assignment.partitions);
  const userData = assignment.userData ?? null;
  let size = 2 + 4 + 4 + (userData?.length ?? 0);
  for (const [topic, partitions] of byTopic) size += 2 + topic.length + 4 + 4 * partitions.length;
  const w = new Writer(size);
  w.int16(CONSUMER_PROTOCOL_VERSION);
  w.partitionsByTopic(byTopic);
  w.bytes(userData);
  return w.done();
}

/** Decodes a SyncGroup assignment; an empty buffer is an empty assignment. */
export function decodeAssignment(bytes: Buffer): DecodedAssignment {
  if (bytes.length === 0) return { partitions: [], userData: null };
  const r = new Reader(bytes, 'assignment');
  const version = r.version();
  const partitions = r.partitionsByTopic('partitions');
  const userData = r.bytes('userData');
  r.end(version);
  return { partitions, userData };
}

function utf8(topic: string): Buffer {
  const bytes = Buffer.from(topic, 'utf8');
  if (bytes.length > MAX_STRING_BYTES) {
    throw new RangeError(
      `topic name is ${bytes.length} bytes long; the consumer protocol allows ${MAX_STRING_BYTES}`,
    );
  }
  return bytes;
}

/** Partitions grouped by topic, both sorted, duplicates and invalid numbers rejected. */
function groupByTopic(partitions: readonly TopicPartition[]): [Buffer, number[]][] {
  const sorted = [...partitions].sort(compareTopicPartitions);
  const groups: [Buffer, number[]][] = [];
  let last: TopicPartition | null = null;
  for (const tp of sorted) {
    if (!Number.isInteger(tp.partition) || tp.partition < 0 || tp.partition > 0x7fffffff) {
      throw new RangeError(`partition ${tp.partition} of topic "${tp.topic}" is not a non-negative int32`);
    }
    if (last !== null && topicPartitionKey(last) === topicPartitionKey(tp)) {
      throw new RangeError(`partition ${tp.partition} of topic "${tp.topic}" is listed twice`);
    }
    if (last === null || last.topic !== tp.topic) groups.push([utf8(tp.topic), []]);
    groups[groups.length - 1][1].push(tp.partition);
    last = tp;
  }
  return groups;
}

class Writer {
  private readonly buffer: Buffer;
  private offset = 0;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  int16(value: number): void {
    this.offset = this.buffer.writeInt16BE(value, this.offset);
  }

  int32(value: number): void {
    this.offset = this.buffer.writeInt32BE(value, this.offset);
  }

  string(bytes: Buffer): void {
    this.int16(bytes.length);
    this.offset += bytes.copy(this.buffer, this.offset);
  }

  bytes(value: Buffer | null): void {
    if (value === null) return this.int32(-1);
    this.int32(value.length);
    this.offset += value.copy(this.buffer, this.offset);
  }

  partitionsByTopic(groups: [Buffer, number[]][]): void {
    this.int32(groups.length);
    for (const [topic, partitions] of groups) {
      this.string(topic);
      this.int32(partitions.length);
      for (const partition of partitions) this.int32(partition);
    }
  }

  done(): Buffer {
    if (this.offset !== this.buffer.length) throw new Error('consumer protocol writer: size mismatch');
    return this.buffer;
  }
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  private offset = 0;

  constructor(
    private readonly buffer: Buffer,
    private readonly what: string,
  ) {}

  private fail(problem: string): never {
    throw new ConsumerProtocolError(
      `cannot decode consumer-protocol ${this.what}: ${problem} at byte ${this.offset} of ${this.buffer.length}`,
      this.offset,
    );
  }

  private need(bytes: number, field: string): void {
    if (this.buffer.length - this.offset < bytes) this.fail(`${field} is cut short`);
  }

  version(): number {
    this.need(2, 'version');
    const version = this.buffer.readInt16BE(this.offset);
    if (version < 1) this.fail(`version ${version} is not a version this SDK writes or reads (1 and up)`);
    this.offset += 2;
    return version;
  }

  int32(field: string): number {
    this.need(4, field);
    const value = this.buffer.readInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  /** A count of items of at least `minItemBytes` each, checked against the bytes left. */
  count(field: string, minItemBytes: number): number {
    const at = this.offset;
    const count = this.int32(field);
    if (count < 0 || count * minItemBytes > this.buffer.length - this.offset) {
      this.offset = at;
      this.fail(`${field} ${count} does not fit the bytes left`);
    }
    return count;
  }

  string(field: string): string {
    this.need(2, `${field} length`);
    const length = this.buffer.readInt16BE(this.offset);
    if (length < 0) this.fail(`${field} length ${length} is negative`);
    this.offset += 2;
    this.need(length, field);
    let text: string;
    try {
      text = STRICT_UTF8.decode(this.buffer.subarray(this.offset, this.offset + length));
    } catch {
      this.fail(`${field} is not valid UTF-8`);
    }
    this.offset += length;
    return text;
  }

  bytes(field: string): Buffer | null {
    const at = this.offset;
    const length = this.int32(`${field} length`);
    if (length === -1) return null;
    if (length < -1 || length > this.buffer.length - this.offset) {
      this.offset = at;
      this.fail(`${field} length ${length} does not fit the bytes left`);
    }
    const value = Buffer.from(this.buffer.subarray(this.offset, this.offset + length)); // a copy: callers keep it
    this.offset += length;
    return value;
  }

  partitionsByTopic(field: string): TopicPartition[] {
    const topicCount = this.count(`${field} topic count`, 6);
    const out: TopicPartition[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < topicCount; i++) {
      const topic = this.string(`${field} topic`);
      const count = this.count(`${field} partition count of "${topic}"`, 4);
      for (let k = 0; k < count; k++) {
        const partition = this.int32(`${field} partition`);
        if (partition < 0) this.fail(`${field}: partition ${partition} of "${topic}" is negative`);
        const tp = { topic, partition };
        const key = topicPartitionKey(tp);
        if (seen.has(key)) this.fail(`${field}: partition ${partition} of "${topic}" appears twice`);
        seen.add(key);
        out.push(tp);
      }
    }
    return out.sort(compareTopicPartitions);
  }

  end(version: number): void {
    if (version === CONSUMER_PROTOCOL_VERSION && this.offset !== this.buffer.length) {
      this.fail(`${this.buffer.length - this.offset} unexpected trailing bytes`);
    }
  }
}
