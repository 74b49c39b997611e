import { KAFKA_APIS, API_VERSIONS } from './kafka-apis';
import { KafkaProtocolError } from './kafka-protocol-error';
import { KafkaReader } from './kafka-reader';
import { KafkaWriter } from './kafka-writer';
import { decodeStruct, encodeStruct, type Struct } from './message-codec';
import { type ApiSchema, isFlexible } from './message-schema';

/**
 * A request frame (without its 4-byte size) into its header and body, and a response body into a frame
 * (size included). Request header v1 is apiKey, apiVersion, correlationId, clientId (a nullable INT16
 * string); v2, for flexible versions, adds tagged fields. Response header v0 is the correlationId; v1, for
 * flexible versions, adds tagged fields, except for ApiVersions, whose response header is always v0 (the
 * client must read it before it knows which versions the broker has).
 */
export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

export type DecodedRequest =
  | {
      readonly kind: 'request';
      readonly header: RequestHeader;
      readonly schema: ApiSchema;
      readonly body: Struct;
      /**
       * Bytes after the body, which Kafka's parser ignores (a newer client's field, a client's padding), and
       * so does cohort: they are only counted, for a debug log.
       */
      readonly trailingBytes: number;
    }
  /**
   * An ApiVersions version cohort does not serve: it is answered in v0 with UNSUPPORTED_VERSION and the
   * list of versions (KIP-511), so the client can pick one. Its body is not read.
   */
  | { readonly kind: 'unsupportedApiVersions'; readonly header: RequestHeader }
  /** Any other key or version: the connection is closed (as Kafka does). */
  | {
      readonly kind: 'unsupported';
      readonly apiKey: number;
      readonly apiVersion: number;
      readonly correlationId: number;
    };

const HEADER_PREFIX_BYTES = 8;

export function decodeRequest(frame: Buffer): DecodedRequest {
  if (frame.length < HEADER_PREFIX_BYTES) {
    throw new KafkaProtocolError(`a request of ${frame.length} bytes has no header`);
  }
  const reader = new KafkaReader(frame);
  const apiKey = reader.int16();
  const apiVersion = reader.int16();
  const correlationId = reader.int32();
  const schema = KAFKA_APIS.get(apiKey);
  const isServed = schema !== undefined && apiVersion >= schema.minVersion && apiVersion <= schema.maxVersion;
  if (!isServed) {
    if (apiKey === API_VERSIONS.apiKey) {
      // The client id is read when it is there, for the logs; a newer header's tags are not.
      let clientId: string | null = null;
      try {
        clientId = reader.nullableString(false);
      } catch {
        clientId = null;
      }
      return { kind: 'unsupportedApiVersions', header: { apiKey, apiVersion, correlationId, clientId } };
    }
    return { kind: 'unsupported', apiKey, apiVersion, correlationId };
  }
  const isCompact = isFlexible(schema, apiVersion);
  const clientId = reader.nullableString(false);
  if (isCompact) reader.skipTaggedFields();
  const body = decodeStruct(reader, schema.request, apiVersion, isCompact);
  return {
    kind: 'request',
    header: { apiKey, apiVersion, correlationId, clientId },
    schema,
    body,
    trailingBytes: reader.remaining,
  };
}

/**
 * Byte fields at least this long go into a response frame by reference (`encodeResponseChunks`): a Fetch
 * answer's record sets, read from the log into buffers of their own, reach the socket without a copy.
 */
export const REFERENCED_RESPONSE_BYTES_MIN = 16 * 1024;

/** A whole response frame: size, header, body. */
export function encodeResponse(
  schema: ApiSchema,
  apiVersion: number,
  correlationId: number,
  body: Struct,
): Buffer {
  return writeResponse(new KafkaWriter(), schema, apiVersion, correlationId, body).toBuffer();
}

/**
 * The same frame as the buffers a socket writes in order (one writev): the encoder's own bytes, with large
 * byte fields (record sets) referenced, not copied. The referenced buffers must not change until written.
 */
export function encodeResponseChunks(
  schema: ApiSchema,
  apiVersion: number,
  correlationId: number,
  body: Struct,
): Buffer[] {
  const writer = new KafkaWriter(256, REFERENCED_RESPONSE_BYTES_MIN);
  return writeResponse(writer, schema, apiVersion, correlationId, body).toChunks();
}

function writeResponse(
  writer: KafkaWriter,
  schema: ApiSchema,
  apiVersion: number,
  correlationId: number,
  body: Struct,
): KafkaWriter {
  const isCompact = isFlexible(schema, apiVersion);
  writer.int32(0);
  writer.int32(correlationId);
  if (isCompact && schema.apiKey !== API_VERSIONS.apiKey) writer.emptyTaggedFields();
  encodeStruct(writer, schema.response, apiVersion, body, isCompact);
  writer.int32At(0, writer.length - 4);
  return writer;
}

/** A request frame as a client writes it (header v1, or v2 when flexible): for tests and tools. */
export function encodeRequest(
  schema: ApiSchema,
  apiVersion: number,
  correlationId: number,
  clientId: string | null,
  body: Struct,
): Buffer {
  const isCompact = isFlexible(schema, apiVersion);
  const writer = new KafkaWriter();
  writer.int32(0).int16(schema.apiKey).int16(apiVersion).int32(correlationId).nullableString(clientId, false);
  if (isCompact) writer.emptyTaggedFields();
  encodeStruct(writer, schema.request, apiVersion, body, isCompact);
  writer.int32At(0, writer.length - 4);
  return writer.toBuffer();
}

/** Reads a response body (after the size and header v0/v1): for tests and tools. */
export function decodeResponseBody(schema: ApiSchema, apiVersion: number, frame: Buffer): Struct {
  const isCompact = isFlexible(schema, apiVersion);
  const reader = new KafkaReader(frame);
  reader.int32();
  if (isCompact && schema.apiKey !== API_VERSIONS.apiKey) reader.skipTaggedFields();
  return decodeStruct(reader, schema.response, apiVersion, isCompact);
}
