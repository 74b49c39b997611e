import { KafkaProtocolError } from './kafka-protocol-error';
import { KafkaReader } from './kafka-reader';
import { KafkaWriter } from './kafka-writer';
import { type FieldSpec, isInVersions, type PrimitiveType } from './message-schema';

/**
 * The one codec: walks a schema table (message-schema.ts) for one version, reading or writing each field
 * that exists in it. Decoding fills absent fields with their defaults, so handlers see every field of the
 * newest version; encoding writes only the fields of the version asked for and takes the default for a
 * value left undefined. Flexible versions use compact lengths and end each struct with tagged fields
 * (skipped when read, written empty).
 */
export type Struct = Record<string, unknown>;

function defaultOf(field: FieldSpec, version: number): unknown {
  if (field.default !== undefined) return field.default;
  if (field.type.startsWith('[]')) return isInVersions(field.nullableVersions, version) ? null : [];
  switch (field.type as PrimitiveType) {
    case 'int8':
    case 'int16':
    case 'int32':
    case 'int64':
      return 0;
    case 'boolean':
      return false;
    case 'string':
      return isInVersions(field.nullableVersions, version) ? null : '';
    case 'bytes':
      return isInVersions(field.nullableVersions, version) ? null : Buffer.alloc(0);
    case 'records':
      return null;
  }
}

function readPrimitive(
  reader: KafkaReader,
  type: PrimitiveType,
  isNullable: boolean,
  isCompact: boolean,
): unknown {
  switch (type) {
    case 'int8':
      return reader.int8();
    case 'int16':
      return reader.int16();
    case 'int32':
      return reader.int32();
    case 'int64':
      return reader.int64();
    case 'boolean':
      return reader.boolean();
    case 'string':
      return isNullable ? reader.nullableString(isCompact) : reader.string(isCompact);
    case 'bytes':
      return isNullable ? reader.nullableBytes(isCompact) : reader.bytes(isCompact);
    case 'records':
      return reader.nullableBytesView(isCompact);
  }
}

export function decodeStruct(
  reader: KafkaReader,
  fields: readonly FieldSpec[],
  version: number,
  isCompact: boolean,
): Struct {
  const struct: Struct = {};
  for (const field of fields) {
    if (!isInVersions(field.versions, version)) {
      struct[field.name] = defaultOf(field, version);
      continue;
    }
    const isNullable = isInVersions(field.nullableVersions, version);
    if (field.type.startsWith('[]')) {
      const length = reader.arrayLength(isCompact);
      if (length === -1) {
        if (!isNullable) throw new KafkaProtocolError(`null array in ${field.name}`);
        struct[field.name] = null;
        continue;
      }
      const items: unknown[] = [];
      const element = field.type.slice(2) as PrimitiveType | '';
      for (let i = 0; i < length; i++) {
        items.push(
          element === ''
            ? decodeStruct(reader, field.fields ?? [], version, isCompact)
            : readPrimitive(reader, element, false, isCompact),
        );
      }
      struct[field.name] = items;
    } else {
      struct[field.name] = readPrimitive(reader, field.type as PrimitiveType, isNullable, isCompact);
    }
  }
  if (isCompact) reader.skipTaggedFields();
  return struct;
}

function writePrimitive(
  writer: KafkaWriter,
  type: PrimitiveType,
  value: unknown,
  name: string,
  isCompact: boolean,
): void {
  switch (type) {
    case 'int8':
      writer.int8(value as number);
      return;
    case 'int16':
      writer.int16(value as number);
      return;
    case 'int32':
      writer.int32(value as number);
      return;
    case 'int64':
      writer.int64(value as number);
      return;
    case 'boolean':
      writer.boolean(value as boolean);
      return;
    case 'string':
      writer.nullableString(value as string | null, isCompact);
      return;
    case 'bytes':
    case 'records':
      writer.nullableBytes(value as Uint8Array | null, isCompact);
      return;
  }
  throw new Error(`unknown type of ${name}`);
}

export function encodeStruct(
  writer: KafkaWriter,
  fields: readonly FieldSpec[],
  version: number,
  struct: Struct,
  isCompact: boolean,
): void {
  for (const field of fields) {
    if (!isInVersions(field.versions, version)) continue;
    const given = struct[field.name];
    const value = given === undefined ? defaultOf(field, version) : given;
    const isNullable = isInVersions(field.nullableVersions, version);
    if (value === null && !isNullable && field.type !== 'records') {
      // A broken invariant of a handler, not of the client: Kafka's serializer refuses it too.
      throw new Error(`${field.name} is null in a version where it is not nullable (v${version})`);
    }
    if (field.type.startsWith('[]')) {
      if (value === null) {
        writer.arrayLength(-1, isCompact);
        continue;
      }
      const items = value as readonly unknown[];
      writer.arrayLength(items.length, isCompact);
      const element = field.type.slice(2) as PrimitiveType | '';
      for (const item of items) {
        if (element === '') encodeStruct(writer, field.fields ?? [], version, item as Struct, isCompact);
        else writePrimitive(writer, element, item, field.name, isCompact);
      }
    } else {
      writePrimitive(writer, field.type as PrimitiveType, value, field.name, isCompact);
    }
  }
  if (isCompact) writer.emptyTaggedFields();
}
