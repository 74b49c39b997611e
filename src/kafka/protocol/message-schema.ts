/**
 * How an API's messages are described: one table per API (apis/*.ts) transcribed from Kafka's message
 * definitions (https://kafka.apache.org/protocol#protocol_messages), read by the one generic codec
 * (message-codec.ts). A field exists in a range of versions, may be nullable in a range, and has a default
 * the encoder uses when the value is absent (Kafka's `default`). Versions are written as Kafka writes
 * them: `'0+'`, `'3-5'`, `'2'`.
 */

export type PrimitiveType =
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'boolean'
  | 'string'
  | 'bytes'
  /** A RecordBatch set: nullable bytes kept raw, decoded by the records layer. */
  | 'records';

export interface FieldSpec {
  /** camelCase of Kafka's field name: the key of the decoded object. */
  readonly name: string;
  /** A primitive, `[]` + a primitive (an array of it), or `[]` with `fields` (an array of structs). */
  readonly type: PrimitiveType | `[]${PrimitiveType}` | '[]';
  readonly versions: string;
  readonly nullableVersions?: string;
  /** Used when encoding a value that is undefined, and when decoding a version without the field. */
  readonly default?: unknown;
  readonly fields?: readonly FieldSpec[];
}

export interface ApiSchema {
  readonly apiKey: number;
  readonly name: string;
  /** The versions cohort serves and advertises (whole ranges only). */
  readonly minVersion: number;
  readonly maxVersion: number;
  /** From which version the messages are flexible (KIP-482); undefined when none cohort serves is. */
  readonly flexibleFrom?: number;
  readonly request: readonly FieldSpec[];
  readonly response: readonly FieldSpec[];
}

export interface VersionRange {
  readonly min: number;
  readonly max: number;
}

const cache = new Map<string, VersionRange>();

/** `'0+'` → 0..∞, `'3-5'` → 3..5, `'2'` → 2..2. */
export function parseVersions(text: string): VersionRange {
  const cached = cache.get(text);
  if (cached !== undefined) return cached;
  let range: VersionRange;
  if (text.endsWith('+')) range = { min: Number(text.slice(0, -1)), max: Number.POSITIVE_INFINITY };
  else if (text.includes('-')) {
    const [min, max] = text.split('-').map(Number);
    range = { min, max };
  } else range = { min: Number(text), max: Number(text) };
  if (!Number.isInteger(range.min) || Number.isNaN(range.max)) throw new Error(`bad versions '${text}'`);
  cache.set(text, range);
  return range;
}

export function isInVersions(text: string | undefined, version: number): boolean {
  if (text === undefined) return false;
  const { min, max } = parseVersions(text);
  return version >= min && version <= max;
}

export function isFlexible(schema: ApiSchema, version: number): boolean {
  return schema.flexibleFrom !== undefined && version >= schema.flexibleFrom;
}
