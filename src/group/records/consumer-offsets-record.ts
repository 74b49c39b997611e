import { CohortError, ErrorCode } from '../../errors';
import type { StoredGroup, StoredMember } from '../stored-group';
import type { Protocol } from '../group-protocol';
import type { CommittedOffset } from '../committed-offsets';

/**
 * The records of `__consumer_offsets`, after Kafka's GroupMetadataManager: two kinds of key, each with its
 * own value, both compacted by key. A record with a null value is a tombstone: it deletes its key.
 *
 *   key   = type u8 · fields                 value = version u8 · fields
 *   type 1, offset commit:  groupId · topic · partition i32
 *           value v0:       committedOffset i64 · committedLeaderEpoch i32 · metadata · commitTimestampMs i64
 *   type 2, group metadata: groupId
 *           value v0:       protocolType · generationId i32 · protocolName · leaderId
 *                           · currentStateTimestampMs i64 · memberCount u32 · members
 *           member:         memberId · groupInstanceId · clientId · clientHost · rebalanceTimeoutMs i32
 *                           · sessionTimeoutMs i32 · protocolCount u32 · (name · metadata bytes)*
 *                           · assignment bytes
 *
 * Big-endian; strings are u32 byte length + UTF-8, bytes are u32 length + bytes; "" stands for Kafka's
 * null. As in Kafka, the key's first byte says which schema the key has (so the cleaner and the loader can
 * tell offsets from groups without the value), and a value's first byte is its schema version, bumped when
 * a field is added; a reader refuses versions it does not know rather than guess. Two records with the same
 * logical key encode to the same bytes, which is what compaction compares.
 *
 * Example: group "g", topic "t", partition 0 → key 01 00000001 67 00000001 74 00000000.
 *
 * Unlike Kafka, a member keeps every protocol it offered (not only the chosen one's metadata), so a member
 * that rejoins unchanged after a restart is still recognised as unchanged.
 */
export const OFFSET_COMMIT_KEY_TYPE = 1;
export const GROUP_METADATA_KEY_TYPE = 2;
export const OFFSET_COMMIT_VALUE_VERSION = 0;
export const GROUP_METADATA_VALUE_VERSION = 0;

export interface OffsetCommitKey {
  readonly type: typeof OFFSET_COMMIT_KEY_TYPE;
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
}

export interface GroupMetadataKey {
  readonly type: typeof GROUP_METADATA_KEY_TYPE;
  readonly groupId: string;
}

export type ConsumerOffsetsKey = OffsetCommitKey | GroupMetadataKey;

/*
 * The values are the group layer's own types, field for field: an offset commit's is a CommittedOffset,
 * a group's the StoredGroup without its id (the key has it).
 */
export type OffsetCommitValue = CommittedOffset;
export type MemberProtocolValue = Protocol;
export type MemberMetadataValue = StoredMember;
export type GroupMetadataValue = Omit<StoredGroup, 'groupId'>;

const U8 = 1;
const I32 = 4;
const I64 = 8;

function stringSize(value: string): number {
  return I32 + Buffer.byteLength(value, 'utf8');
}

function bytesSize(value: Buffer): number {
  return I32 + value.length;
}

/** Writes into a buffer sized exactly beforehand; every record is sized first, then written once. */
class Writer {
  readonly buffer: Buffer;
  private position = 0;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  u8(value: number): this {
    this.position = this.buffer.writeUInt8(value, this.position);
    return this;
  }

  u32(value: number): this {
    this.position = this.buffer.writeUInt32BE(value, this.position);
    return this;
  }

  i32(value: number): this {
    this.position = this.buffer.writeInt32BE(value, this.position);
    return this;
  }

  i64(value: number): this {
    this.position = this.buffer.writeBigInt64BE(BigInt(value), this.position);
    return this;
  }

  string(value: string): this {
    const length = this.buffer.write(value, this.position + I32, 'utf8');
    this.buffer.writeUInt32BE(length, this.position);
    this.position += I32 + length;
    return this;
  }

  bytes(value: Buffer): this {
    this.buffer.writeUInt32BE(value.length, this.position);
    value.copy(this.buffer, this.position + I32);
    this.position += I32 + value.length;
    return this;
  }

  done(): Buffer {
    if (this.position !== this.buffer.length) {
      throw new CohortError(
        ErrorCode.UNKNOWN_SERVER_ERROR,
        `record sized ${this.buffer.length} bytes but ${this.position} were written`,
      );
    }
    return this.buffer;
  }
}

function corrupt(what: string, detail: string): CohortError {
  return new CohortError(ErrorCode.CORRUPT_MESSAGE, `__consumer_offsets ${what}: ${detail}`);
}

/** Reads one key or value; any read past the end, or anything left over, is corruption. */
class Reader {
  private position = 0;

  constructor(
    private readonly buffer: Buffer,
    private readonly what: string,
  ) {}

  private take(size: number): number {
    const at = this.position;
    if (at + size > this.buffer.length) {
      throw corrupt(this.what, `needs ${size} bytes at ${at}, has ${this.buffer.length - at}`);
    }
    this.position = at + size;
    return at;
  }

  u8(): number {
    return this.buffer.readUInt8(this.take(U8));
  }

  u32(): number {
    return this.buffer.readUInt32BE(this.take(I32));
  }

  i32(): number {
    return this.buffer.readInt32BE(this.take(I32));
  }

  i64(): number {
    const value = this.buffer.readBigInt64BE(this.take(I64));
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw corrupt(this.what, `int64 ${value} is not a safe integer`);
    }
    return Number(value);
  }

  string(): string {
    const length = this.u32();
    const at = this.take(length);
    return this.buffer.toString('utf8', at, at + length);
  }

  /** A copy: a value must not pin the whole batch it was read from. */
  bytes(): Buffer {
    const length = this.u32();
    const at = this.take(length);
    return Buffer.from(this.buffer.subarray(at, at + length));
  }

  /** A count of items that each take at least `minItemBytes`: bounded by what is left, so a bad count cannot allocate. */
  count(minItemBytes: number): number {
    const count = this.u32();
    if (count * minItemBytes > this.buffer.length - this.position) {
      throw corrupt(this.what, `${count} items cannot fit in ${this.buffer.length - this.position} bytes`);
    }
    return count;
  }

  end(): void {
    if (this.position !== this.buffer.length) {
      throw corrupt(this.what, `${this.buffer.length - this.position} bytes left over`);
    }
  }
}

export function encodeOffsetCommitKey(groupId: string, topic: string, partition: number): Buffer {
  return new Writer(U8 + stringSize(groupId) + stringSize(topic) + I32)
    .u8(OFFSET_COMMIT_KEY_TYPE)
    .string(groupId)
    .string(topic)
    .i32(partition)
    .done();
}

export function encodeGroupMetadataKey(groupId: string): Buffer {
  return new Writer(U8 + stringSize(groupId)).u8(GROUP_METADATA_KEY_TYPE).string(groupId).done();
}

export function decodeKey(key: Buffer): ConsumerOffsetsKey {
  const reader = new Reader(key, 'key');
  const type = reader.u8();
  let decoded: ConsumerOffsetsKey;
  if (type === OFFSET_COMMIT_KEY_TYPE) {
    decoded = { type, groupId: reader.string(), topic: reader.string(), partition: reader.i32() };
  } else if (type === GROUP_METADATA_KEY_TYPE) {
    decoded = { type, groupId: reader.string() };
  } else {
    throw corrupt('key', `unknown key type ${type}`);
  }
  reader.end();
  return decoded;
}

export function encodeOffsetCommitValue(value: OffsetCommitValue): Buffer {
  return new Writer(U8 + I64 + I32 + stringSize(value.metadata) + I64)
    .u8(OFFSET_COMMIT_VALUE_VERSION)
    .i64(value.committedOffset)
    .i32(value.committedLeaderEpoch)
    .string(value.metadata)
    .i64(value.commitTimestampMs)
    .done();
}

export function decodeOffsetCommitValue(value: Buffer): OffsetCommitValue {
  const reader = new Reader(value, 'offset commit value');
  const version = reader.u8();
  if (version !== OFFSET_COMMIT_VALUE_VERSION) {
    throw corrupt('offset commit value', `unknown version ${version}`);
  }
  const decoded: OffsetCommitValue = {
    committedOffset: reader.i64(),
    committedLeaderEpoch: reader.i32(),
    metadata: reader.string(),
    commitTimestampMs: reader.i64(),
  };
  reader.end();
  return decoded;
}

function memberSize(member: MemberMetadataValue): number {
  let size =
    stringSize(member.memberId) +
    stringSize(member.groupInstanceId) +
    stringSize(member.clientId) +
    stringSize(member.clientHost) +
    I32 +
    I32 +
    I32 +
    bytesSize(member.assignment);
  for (const protocol of member.protocols) size += stringSize(protocol.name) + bytesSize(protocol.metadata);
  return size;
}

/** The smallest encoded member: four empty strings, two timeouts, no protocols, an empty assignment. */
const MIN_MEMBER_BYTES = 4 * I32 + I32 + I32 + I32 + I32;
/** The smallest encoded protocol: an empty name and empty metadata. */
const MIN_PROTOCOL_BYTES = I32 + I32;

export function encodeGroupMetadataValue(value: GroupMetadataValue): Buffer {
  let size =
    U8 +
    stringSize(value.protocolType) +
    I32 +
    stringSize(value.protocolName) +
    stringSize(value.leaderId) +
    I64 +
    I32;
  for (const member of value.members) size += memberSize(member);
  const writer = new Writer(size)
    .u8(GROUP_METADATA_VALUE_VERSION)
    .string(value.protocolType)
    .i32(value.generationId)
    .string(value.protocolName)
    .string(value.leaderId)
    .i64(value.currentStateTimestampMs)
    .u32(value.members.length);
  for (const member of value.members) {
    writer
      .string(member.memberId)
      .string(member.groupInstanceId)
      .string(member.clientId)
      .string(member.clientHost)
      .i32(member.rebalanceTimeoutMs)
      .i32(member.sessionTimeoutMs)
      .u32(member.protocols.length);
    for (const protocol of member.protocols) writer.string(protocol.name).bytes(protocol.metadata);
    writer.bytes(member.assignment);
  }
  return writer.done();
}

export function decodeGroupMetadataValue(value: Buffer): GroupMetadataValue {
  const reader = new Reader(value, 'group metadata value');
  const version = reader.u8();
  if (version !== GROUP_METADATA_VALUE_VERSION) {
    throw corrupt('group metadata value', `unknown version ${version}`);
  }
  const protocolType = reader.string();
  const generationId = reader.i32();
  const protocolName = reader.string();
  const leaderId = reader.string();
  const currentStateTimestampMs = reader.i64();
  const memberCount = reader.count(MIN_MEMBER_BYTES);
  const members: MemberMetadataValue[] = new Array(memberCount);
  for (let i = 0; i < memberCount; i++) {
    const memberId = reader.string();
    const groupInstanceId = reader.string();
    const clientId = reader.string();
    const clientHost = reader.string();
    const rebalanceTimeoutMs = reader.i32();
    const sessionTimeoutMs = reader.i32();
    const protocolCount = reader.count(MIN_PROTOCOL_BYTES);
    const protocols: MemberProtocolValue[] = new Array(protocolCount);
    for (let j = 0; j < protocolCount; j++)
      protocols[j] = { name: reader.string(), metadata: reader.bytes() };
    members[i] = {
      memberId,
      groupInstanceId,
      clientId,
      clientHost,
      rebalanceTimeoutMs,
      sessionTimeoutMs,
      protocols,
      assignment: reader.bytes(),
    };
  }
  reader.end();
  return { protocolType, generationId, protocolName, leaderId, currentStateTimestampMs, members };
}
