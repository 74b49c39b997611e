/**
 * gRPC's message framing over HTTP/2 (a 1-byte compressed flag and a 4-byte big-endian length before the
 * protobuf bytes), shared by the bench's hand-rolled clients, which send one uncompressed message per call
 * and expect exactly one back.
 */

export const GRPC_PREFIX_BYTES = 5;

/** `message` framed as one uncompressed gRPC message, in a new buffer. */
export function framedMessage(message: Buffer): Buffer {
  const framed = Buffer.allocUnsafe(GRPC_PREFIX_BYTES + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, GRPC_PREFIX_BYTES);
  return framed;
}

/**
 * The one message an answer's DATA carried, decoded; throws (naming `path`) unless `chunks` hold exactly one
 * uncompressed message, or if `decode` throws.
 */
export function decodeOnlyMessage<Res>(
  path: string,
  chunks: readonly Buffer[],
  decode: (bytes: Buffer) => Res,
): Res {
  const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  if (body.length < GRPC_PREFIX_BYTES || body[0] !== 0) {
    throw new Error(`${path}: not one uncompressed gRPC message (${body.length} bytes)`);
  }
  const length = body.readUInt32BE(1);
  if (body.length !== GRPC_PREFIX_BYTES + length) {
    throw new Error(`${path}: message of ${length} bytes in a body of ${body.length}`);
  }
  return decode(body.subarray(GRPC_PREFIX_BYTES));
}

/** An Error for whatever was thrown. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
