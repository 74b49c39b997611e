import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { Decompress as ZstdDecompress } from 'fzstd';
import { compressFrameSync as lz4CompressFrame } from 'lz4-napi';
import { compressSync as snappyCompress, uncompressSync as snappyUncompress } from 'snappy';
import { gunzipSync, gzipSync } from 'node:zlib';
import { KafkaRecordsError } from './kafka-records-error';
import { decompressLz4Frames } from './lz4-frame';

/**
 * Kafka's record compression codecs (a batch's attributes bits 0-2), each behind `compress` and
 * `decompress` so that the door never names a package:
 *
 * - gzip: node:zlib; `maxOutputLength` stops a bomb where it passes the limit.
 * - snappy: the `snappy` package for blocks. Kafka's Java client writes xerial framing (a 16-byte header
 *   82 'SNAPPY' 00, version 1, compatible version 1, then chunks of a big-endian int32 length and one raw
 *   block); librdkafka writes one raw block. Both are read, told apart by the header; a raw block
 *   begins with its decoded length (an unsigned varint), checked against the limit before the block is
 *   decoded. xerial framing is written, as Kafka's broker does, and every client reads it.
 * - lz4: the LZ4 frame format. Decoded by `decompressLz4Frames` (bounded as it grows: the package's
 *   decoder has no limit and would allocate whatever a frame expands to); `lz4-napi` writes frames.
 * - zstd: Node 20's zlib has none. `fzstd` decodes as a stream of blocks, so a bomb is stopped at the
 *   first block past the limit; `@toondepauw/node-zstd` (native) encodes.
 *
 * `decompress` throws KafkaRecordsError: `too-large` past `maxBytes`, `corrupt-compression` for bytes
 * the codec cannot read, `unsupported-compression` for codec ids 5-7.
 */
export const CompressionCodec = {
  NONE: 0,
  GZIP: 1,
  SNAPPY: 2,
  LZ4: 3,
  ZSTD: 4,
} as const;
export type CompressionCodec = (typeof CompressionCodec)[keyof typeof CompressionCodec];

const XERIAL_HEADER = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
const XERIAL_VERSION = 1;
/** The xerial block size Kafka's Java client writes with. */
const XERIAL_CHUNK_BYTES = 32 * 1024;
const ZSTD_LEVEL = 3;
/** The largest window zstd's levels 1-19 use (window log 23). */
const ZSTD_MAX_WINDOW_BYTES = 8 * 1024 * 1024;

let zstdEncoder: ZstdEncoder | undefined;

export function isCompressionCodec(value: number): value is CompressionCodec {
  return value >= CompressionCodec.NONE && value <= CompressionCodec.ZSTD;
}

export function compress(codec: CompressionCodec, bytes: Buffer): Buffer {
  switch (codec) {
    case CompressionCodec.NONE:
      return bytes;
    case CompressionCodec.GZIP:
      return gzipSync(bytes);
    case CompressionCodec.SNAPPY:
      return compressXerialSnappy(bytes);
    case CompressionCodec.LZ4:
      return lz4CompressFrame(bytes);
    case CompressionCodec.ZSTD:
      return (zstdEncoder ??= new ZstdEncoder(ZSTD_LEVEL)).encodeSync(bytes);
  }
}

/** `bytes` decoded by `codec`, at most `maxBytes` long. */
export function decompress(codec: number, bytes: Buffer, maxBytes: number): Buffer {
  switch (codec) {
    case CompressionCodec.NONE:
      if (bytes.length > maxBytes) throw tooLarge(maxBytes);
      return bytes;
    case CompressionCodec.GZIP:
      return gunzip(bytes, maxBytes);
    case CompressionCodec.SNAPPY:
      return isXerial(bytes) ? decompressXerialSnappy(bytes, maxBytes) : decompressRawSnappy(bytes, maxBytes);
    case CompressionCodec.LZ4:
      return decompressLz4Frames(bytes, maxBytes);
    case CompressionCodec.ZSTD:
      return decompressZstd(bytes, maxBytes);
    default:
      throw new KafkaRecordsError('unsupported-compression', `compression codec ${codec} is unknown`);
  }
}

function tooLarge(maxBytes: number): KafkaRecordsError {
  return new KafkaRecordsError('too-large', `records decompress to more than the ${maxBytes}-byte limit`);
}

function corrupt(codec: string, cause: unknown): KafkaRecordsError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new KafkaRecordsError('corrupt-compression', `${codec} data is corrupt: ${detail}`, { cause });
}

function gunzip(bytes: Buffer, maxBytes: number): Buffer {
  try {
    return gunzipSync(bytes, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(maxBytes);
    throw corrupt('gzip', error);
  }
}

function isXerial(bytes: Buffer): boolean {
  return bytes.length >= XERIAL_HEADER_BYTES && bytes.subarray(0, XERIAL_HEADER.length).equals(XERIAL_HEADER);
}

function compressXerialSnappy(bytes: Buffer): Buffer {
  const chunks: Buffer[] = [];
  let size = XERIAL_HEADER_BYTES;
  for (let start = 0; start < bytes.length; start += XERIAL_CHUNK_BYTES) {
    const chunk = snappyCompress(bytes.subarray(start, start + XERIAL_CHUNK_BYTES));
    chunks.push(chunk);
    size += 4 + chunk.length;
  }
  const out = Buffer.allocUnsafe(size);
  XERIAL_HEADER.copy(out, 0);
  out.writeInt32BE(XERIAL_VERSION, 8);
  out.writeInt32BE(XERIAL_VERSION, 12);
  let position = XERIAL_HEADER_BYTES;
  for (const chunk of chunks) {
    out.writeInt32BE(chunk.length, position);
    chunk.copy(out, position + 4);
    position += 4 + chunk.length;
  }
  return out;
}

function decompressXerialSnappy(bytes: Buffer, maxBytes: number): Buffer {
  const parts: Buffer[] = [];
  let total = 0;
  let position = XERIAL_HEADER_BYTES;
  while (position < bytes.length) {
    if (bytes.length - position < 4) throw corrupt('snappy', new Error('xerial chunk length is truncated'));
    const length = bytes.readInt32BE(position);
    position += 4;
    if (length < 0 || length > bytes.length - position) {
      throw corrupt('snappy', new Error('xerial chunk runs past the data'));
    }
    const part = decompressRawSnappy(bytes.subarray(position, position + length), maxBytes - total);
    total += part.length;
    parts.push(part);
    position += length;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

function decompressRawSnappy(bytes: Buffer, maxBytes: number): Buffer {
  // The decoded length leads the block (an unsigned varint of at most 5 bytes): checked before decoding.
  let decodedBytes = 0;
  let scale = 1;
  for (let i = 0; ; i++) {
    if (i >= bytes.length || i >= 5) throw corrupt('snappy', new Error('length preamble is invalid'));
    const byte = bytes[i]!;
    decodedBytes += (byte & 0x7f) * scale;
    scale *= 0x80;
    if (byte < 0x80) break;
  }
  if (decodedBytes > maxBytes) throw tooLarge(maxBytes);
  let out: Buffer;
  try {
    out = snappyUncompress(bytes, { asBuffer: true }) as Buffer;
  } catch (error) {
    throw corrupt('snappy', error);
  }
  if (out.length !== decodedBytes)
    throw corrupt('snappy', new Error('decoded length differs from its preamble'));
  return out;
}

/**
 * fzstd allocates each frame's window as its header declares it (up to 2^31 bytes, however small the
 * frame), so the headers are read first: a window larger than both the limit and ZSTD_MAX_WINDOW_BYTES
 * (what encoders use up to level 19) is refused before a byte is decoded. A frame is: magic
 * 28 B5 2F FD, a descriptor byte (bits 7-6 content-size field size, 5 single segment, 2 checksum, 1-0
 * dictionary id size), a window byte unless single segment (window = 2^(10 + bits 7-3) plus bits 2-0
 * eighths of it), the dictionary id, the content size (the window of a single-segment frame), then
 * blocks of a 3-byte little-endian header (bit 0 last, bits 1-2 type, bits 3-23 size; an RLE block
 * holds one byte), then a 4-byte checksum if flagged. Skippable frames (magic 5x 2A 4D 18) are skipped.
 */
function checkZstdWindows(bytes: Buffer, maxBytes: number): void {
  const limit = Math.max(maxBytes, ZSTD_MAX_WINDOW_BYTES);
  let position = 0;
  while (position + 4 <= bytes.length) {
    const magic = bytes.readUInt32LE(position);
    position += 4;
    if ((magic & 0xfffffff0) >>> 0 === 0x184d2a50) {
      if (position + 4 > bytes.length) return;
      position += 4 + bytes.readUInt32LE(position);
      continue;
    }
    if (magic !== 0xfd2fb528 || position >= bytes.length) return; // fzstd reports it
    const descriptor = bytes[position++]!;
    const isSingleSegment = (descriptor & 0x20) !== 0;
    const contentSizeBytes = [isSingleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
    let windowBytes = 0;
    if (!isSingleSegment) {
      if (position >= bytes.length) return;
      const window = bytes[position++]!;
      const base = 2 ** (10 + (window >> 3));
      windowBytes = base + (base / 8) * (window & 0x07);
    }
    position += [0, 1, 2, 4][descriptor & 0x03]!;
    if (isSingleSegment) {
      if (position + contentSizeBytes > bytes.length) return;
      windowBytes = bytes.readUIntLE(position, Math.min(contentSizeBytes, 6));
      if (contentSizeBytes === 8 && bytes.readUInt16LE(position + 6) !== 0) windowBytes = Infinity;
      if (contentSizeBytes === 2) windowBytes += 256;
    }
    if (windowBytes > limit) throw tooLarge(maxBytes);
    position += contentSizeBytes;
    while (true) {
      if (position + 3 > bytes.length) return;
      const header = bytes.readUIntLE(position, 3);
      const type = (header >> 1) & 0x03;
      position += 3 + (type === 1 ? 1 : header >>> 3);
      if ((header & 1) !== 0) break;
    }
    if ((descriptor & 0x04) !== 0) position += 4;
  }
}

function decompressZstd(bytes: Buffer, maxBytes: number): Buffer {
  checkZstdWindows(bytes, maxBytes);
  const parts: Uint8Array[] = [];
  let total = 0;
  const stream = new ZstdDecompress((chunk) => {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge(maxBytes);
    parts.push(chunk);
  });
  try {
    stream.push(bytes, true);
  } catch (error) {
    if (error instanceof KafkaRecordsError) throw error;
    throw corrupt('zstd', error);
  }
  if (parts.length === 1) return Buffer.from(parts[0]!.buffer, parts[0]!.byteOffset, parts[0]!.byteLength);
  return Buffer.concat(parts, total);
}
