import { KafkaRecordsError } from './kafka-records-error';

/**
 * Decodes the LZ4 frame format (Kafka's codec 3: the Java client, librdkafka and KafkaJS all write
 * frames, never bare blocks) into at most `maxBytes`, so a small frame that claims or expands to a
 * huge output is refused as it grows, not after it was allocated.
 *
 * A frame is: magic 04 22 4D 18, a descriptor (FLG, BD, optional 8-byte content size, optional 4-byte
 * dictionary id, one header-checksum byte), blocks (a little-endian int32 size, its high bit set for a
 * block stored uncompressed; 0 ends the frame; an optional 4-byte checksum after each block), then an
 * optional 4-byte content checksum. Skippable frames (magic 5x 2A 4D 18) are skipped; several frames
 * may follow one another. The xxHash checksums are not verified: the record batch's CRC-32C already
 * covers these bytes.
 *
 * A block is a run of sequences: a token (high nibble: literal count, low nibble: match length - 4, 15
 * meaning "more bytes follow, each added, until one is below 255"), the literals, then a 2-byte
 * little-endian offset back into the output and the match, copied byte by byte so that it may overlap
 * itself (offset 1, length 5 repeats one byte five times). The last sequence of a block has literals
 * only. Independent blocks may only refer back within themselves; linked blocks to earlier output too.
 *
 * Example: the frame of "aaaaaaaa" may hold one block 11 61 01 00 (token 0x11: one literal 'a', then a
 * match of 1 + 4 at offset 1) followed by 30 61 61 61 (three final literals): 8 bytes.
 */
const FRAME_MAGIC = 0x184d2204;
const SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const UNCOMPRESSED_BLOCK_BIT = 0x80000000;
const BLOCK_MAX_BYTES = [0, 0, 0, 0, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024];
const MIN_MATCH = 4;

function corrupt(message: string): KafkaRecordsError {
  return new KafkaRecordsError('corrupt-compression', `lz4: ${message}`);
}

/** Output that grows by doubling up to a hard limit. */
class BoundedOutput {
  buffer: Buffer;
  length = 0;

  constructor(
    initialBytes: number,
    private readonly maxBytes: number,
  ) {
    this.buffer = Buffer.allocUnsafe(Math.max(64, Math.min(initialBytes, maxBytes)));
  }

  /** Makes room for `bytes` more, or refuses once the output would pass `maxBytes`. */
  reserve(bytes: number): void {
    const needed = this.length + bytes;
    if (needed <= this.buffer.length) return;
    if (needed > this.maxBytes) {
      throw new KafkaRecordsError(
        'too-large',
        `lz4 data decompresses to more than the ${this.maxBytes}-byte limit`,
      );
    }
    const grown = Buffer.allocUnsafe(Math.min(this.maxBytes, Math.max(needed, this.buffer.length * 2)));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

export function decompressLz4Frames(input: Buffer, maxBytes: number): Buffer {
  const out = new BoundedOutput(input.length * 4, maxBytes);
  let position = 0;
  let frameCount = 0;
  while (position < input.length) {
    if (input.length - position < 4) throw corrupt('frame magic is truncated');
    const magic = input.readUInt32LE(position);
    position += 4;
    if ((magic & SKIPPABLE_MAGIC_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      if (input.length - position < 4) throw corrupt('skippable frame size is truncated');
      const size = input.readUInt32LE(position);
      position += 4;
      if (size > input.length - position) throw corrupt('skippable frame runs past the data');
      position += size;
      continue;
    }
    if (magic !== FRAME_MAGIC) throw corrupt(`unknown frame magic 0x${magic.toString(16)}`);
    position = decodeFrame(input, position, out);
    frameCount++;
  }
  if (frameCount === 0) throw corrupt('no frame');
  return out.buffer.subarray(0, out.length);
}

/** Decodes one frame whose magic ends at `position`; returns the position after it. */
function decodeFrame(input: Buffer, position: number, out: BoundedOutput): number {
  if (input.length - position < 3) throw corrupt('frame descriptor is truncated');
  const flags = input[position]!;
  const blockDescriptor = input[position + 1]!;
  if (flags >> 6 !== 1) throw corrupt(`frame version ${flags >> 6} is not 1`);
  if ((flags & 0x02) !== 0 || (blockDescriptor & 0x8f) !== 0) throw corrupt('reserved descriptor bits set');
  const isBlockIndependent = (flags & 0x20) !== 0;
  const hasBlockChecksum = (flags & 0x10) !== 0;
  const hasContentSize = (flags & 0x08) !== 0;
  const hasContentChecksum = (flags & 0x04) !== 0;
  const hasDictionaryId = (flags & 0x01) !== 0;
  const blockMaxBytes = BLOCK_MAX_BYTES[(blockDescriptor >> 4) & 0x07]!;
  if (blockMaxBytes === 0) throw corrupt('block maximum size is invalid');
  if (hasDictionaryId) throw corrupt('frames with a dictionary are not supported');
  position += 2;
  const descriptorEnd = position + (hasContentSize ? 8 : 0) + 1;
  if (descriptorEnd > input.length) throw corrupt('frame descriptor is truncated');
  if (hasContentSize) {
    const high = input.readUInt32LE(position + 4);
    const contentBytes = high * 0x1_0000_0000 + input.readUInt32LE(position);
    // Refused before a byte is decoded; the limit is checked again as the output grows.
    out.reserve(Math.min(contentBytes, Number.MAX_SAFE_INTEGER));
  }
  position = descriptorEnd;

  while (true) {
    if (input.length - position < 4) throw corrupt('block size is truncated');
    const word = input.readUInt32LE(position);
    position += 4;
    if (word === 0) break;
    const isUncompressed = (word & UNCOMPRESSED_BLOCK_BIT) !== 0;
    const size = (word & ~UNCOMPRESSED_BLOCK_BIT) >>> 0;
    if (size > blockMaxBytes) throw corrupt(`block of ${size} bytes exceeds the frame's ${blockMaxBytes}`);
    if (size > input.length - position) throw corrupt('block runs past the data');
    if (isUncompressed) {
      out.reserve(size);
      input.copy(out.buffer, out.length, position, position + size);
      out.length += size;
    } else {
      decodeBlock(input, position, position + size, out, isBlockIndependent ? out.length : 0, blockMaxBytes);
    }
    position += size;
    if (hasBlockChecksum) position += 4;
  }
  if (hasContentChecksum) position += 4;
  if (position > input.length) throw corrupt('checksum is truncated');
  return position;
}

/** Decodes one compressed block; matches may refer back as far as `windowStart` in the output. */
function decodeBlock(
  input: Buffer,
  position: number,
  end: number,
  out: BoundedOutput,
  windowStart: number,
  blockMaxBytes: number,
): void {
  const blockStart = out.length;
  while (true) {
    if (position >= end) throw corrupt('block ends inside a sequence');
    const token = input[position++]!;
    let literalBytes = token >> 4;
    if (literalBytes === 15) {
      let more: number;
      do {
        if (position >= end) throw corrupt('literal length runs past the block');
        more = input[position++]!;
        literalBytes += more;
      } while (more === 255);
    }
    if (literalBytes > end - position) throw corrupt('literals run past the block');
    if (out.length - blockStart + literalBytes > blockMaxBytes)
      throw corrupt('block decodes past its maximum');
    out.reserve(literalBytes);
    input.copy(out.buffer, out.length, position, position + literalBytes);
    out.length += literalBytes;
    position += literalBytes;
    if (position === end) return; // the last sequence: literals only
    if (end - position < 2) throw corrupt('match offset is truncated');
    const offset = input[position]! | (input[position + 1]! << 8);
    position += 2;
    if (offset === 0 || offset > out.length - windowStart)
      throw corrupt('match offset points before the window');
    let matchBytes = (token & 0x0f) + MIN_MATCH;
    if ((token & 0x0f) === 15) {
      let more: number;
      do {
        if (position >= end) throw corrupt('match length runs past the block');
        more = input[position++]!;
        matchBytes += more;
      } while (more === 255);
    }
    if (out.length - blockStart + matchBytes > blockMaxBytes) throw corrupt('block decodes past its maximum');
    out.reserve(matchBytes);
    const buffer = out.buffer;
    let from = out.length - offset;
    let to = out.length;
    if (offset >= matchBytes) {
      buffer.copy(buffer, to, from, from + matchBytes);
    } else {
      for (const stop = to + matchBytes; to < stop;) buffer[to++] = buffer[from++]!;
    }
    out.length += matchBytes;
  }
}
