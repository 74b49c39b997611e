import { isDeepStrictEqual } from 'node:util';
import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { MAX_NESTING_DEPTH, Reader, WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_VARINT } from './proto-wire';

/**
 * The strict check every request decoded by protobufjs goes through first. protobufjs (through
 * proto-loader) acts on bytes that are not a message: it cuts a truncated string short and decodes the
 * rest, reads a field of the wrong wire type as its declared type, and turns invalid UTF-8 into U+FFFD. A
 * truncated DeleteGroups would delete the groups its prefix names; two group ids differing in one invalid
 * byte would share their offsets. So before protobufjs decodes a request, `checkMessage` walks its bytes
 * with proto-wire.ts's strict Reader (the one the hand-written decoders of the hot methods use) against
 * the request type's fields, from the .proto's own descriptors:
 * - every field is read to its end: a truncated tag, varint, fixed value or length, or a length past the
 *   end of its message (nested messages included), is refused;
 * - a known field must arrive with its declared type's wire type; a repeated numeric field may also arrive
 *   packed, a length-delimited run of whole values;
 * - every `string`, nested and repeated ones too, must be valid UTF-8;
 * - unknown fields are skipped, groups included (see proto-wire.ts).
 * A refusal is a RangeError, answered INVALID_ARGUMENT (undecodable-request.ts) before any domain code runs.
 * Once the bytes pass, protobufjs's decoding of them is the one protobuf defines, so it decodes them as
 * before: one walk over a request decoded on a cold path (JoinGroup, SyncGroup, Heartbeat and Produce, the
 * hot ones, are decoded by hand in one strict pass and never reach this check).
 *
 * Worked example, DeleteGroupsRequest { repeated string groups_names = 1 }: `0a 05 61 6c 70 68 61` is
 * ["alpha"]; its prefix `0a 05 61 6c` (the string cut after "al") is refused, where protobufjs gives
 * ["al"]; `0a 01 ff` is refused, where protobufjs gives ["\uFFFD"]; `08 01` (field 1 as a varint) is
 * refused, where protobufjs reads a string of length 1 from the next bytes.
 */

/** One field of a message, as the wire must carry it. */
interface FieldShape {
  readonly name: string;
  /** The wire type of one value: VARINT, FIXED64, FIXED32 or LEN. */
  readonly wireType: number;
  readonly isString: boolean;
  /** A repeated numeric field: a packed run (LEN) of values is accepted too. */
  readonly isPackable: boolean;
  /** The nested message's shape, for a message field; set once every shape exists (shapes may nest). */
  message: MessageShape | undefined;
}

/** A message's known fields by number, as `checkMessage` holds bytes against them. */
export interface MessageShape {
  /** The message's full name, for error messages: `cohort.v1.DeleteGroupsRequest`. */
  readonly name: string;
  readonly fields: ReadonlyMap<number, FieldShape>;
}

/** The parts of a DescriptorProto (as proto-loader gives it, enums as names) that the wire depends on. */
interface DescriptorLike {
  readonly name: string;
  readonly field: readonly {
    readonly name: string;
    readonly number: number;
    readonly label: string;
    readonly type: string;
    readonly typeName: string;
  }[];
  readonly nestedType: readonly DescriptorLike[];
}

const VALUE_WIRE_TYPE: Readonly<Record<string, number>> = {
  TYPE_INT32: WIRE_VARINT,
  TYPE_INT64: WIRE_VARINT,
  TYPE_UINT32: WIRE_VARINT,
  TYPE_UINT64: WIRE_VARINT,
  TYPE_SINT32: WIRE_VARINT,
  TYPE_SINT64: WIRE_VARINT,
  TYPE_BOOL: WIRE_VARINT,
  TYPE_ENUM: WIRE_VARINT,
  TYPE_FIXED64: WIRE_FIXED64,
  TYPE_SFIXED64: WIRE_FIXED64,
  TYPE_DOUBLE: WIRE_FIXED64,
  TYPE_FIXED32: WIRE_FIXED32,
  TYPE_SFIXED32: WIRE_FIXED32,
  TYPE_FLOAT: WIRE_FIXED32,
  TYPE_STRING: WIRE_LEN,
  TYPE_BYTES: WIRE_LEN,
  TYPE_MESSAGE: WIRE_LEN,
};

const MESSAGE_FORMAT = 'Protocol Buffer 3 DescriptorProto';

/** Every message descriptor of `packageDefinition` by full name, nested messages (and map entries) included. */
function messageDescriptors(packageDefinition: PackageDefinition): Map<string, DescriptorLike> {
  const descriptors = new Map<string, DescriptorLike>();
  const add = (name: string, descriptor: DescriptorLike): void => {
    descriptors.set(name, descriptor);
    for (const nested of descriptor.nestedType) add(`${name}.${nested.name}`, nested);
  };
  for (const [name, definition] of Object.entries(packageDefinition)) {
    if ((definition as { format?: unknown }).format === MESSAGE_FORMAT) {
      add(name, (definition as unknown as { type: DescriptorLike }).type);
    }
  }
  return descriptors;
}

/** `typeName` as written in a descriptor (relative, or absolute with a leading dot) resolved from `scope`. */
function resolveTypeName(
  descriptors: ReadonlyMap<string, DescriptorLike>,
  typeName: string,
  scope: string,
): string {
  const resolved = tryResolveTypeName(descriptors, typeName, scope);
  if (resolved === undefined) throw new Error(`cannot resolve message type ${typeName} from ${scope}`);
  return resolved;
}

function tryResolveTypeName(
  descriptors: ReadonlyMap<string, DescriptorLike>,
  typeName: string,
  scope: string,
): string | undefined {
  if (typeName.startsWith('.')) return descriptors.has(typeName.slice(1)) ? typeName.slice(1) : undefined;
  // protobuf's scoping: the innermost enclosing scope first, then outwards to the root.
  for (let outer = scope; ;) {
    const candidate = outer === '' ? typeName : `${outer}.${typeName}`;
    if (descriptors.has(candidate)) return candidate;
    if (outer === '') return undefined;
    const dot = outer.lastIndexOf('.');
    outer = dot < 0 ? '' : outer.slice(0, dot);
  }
}

/**
 * The full name of a method's request type, which its definition gives only as a descriptor (its name
 * without the package): the one message with that very descriptor, or, when several share it, the one the
 * service's scope resolves its name to. Anything else fails loudly, at load.
 */
function requestTypeName(
  descriptors: ReadonlyMap<string, DescriptorLike>,
  serviceName: string,
  requestType: DescriptorLike,
): string {
  const matching = [...descriptors]
    .filter(([, descriptor]) => isDeepStrictEqual(descriptor, requestType))
    .map(([name]) => name);
  if (matching.length === 1) return matching[0]!;
  const resolved = tryResolveTypeName(descriptors, requestType.name, serviceName);
  if (resolved !== undefined && matching.includes(resolved)) return resolved;
  throw new Error(`${serviceName}: cannot tell which message ${requestType.name} is`);
}

/** The shapes of the message `name` and of every message it nests, built once each. */
function shapeOf(
  descriptors: ReadonlyMap<string, DescriptorLike>,
  name: string,
  shapes: Map<string, MessageShape>,
): MessageShape {
  const known = shapes.get(name);
  if (known !== undefined) return known;
  const descriptor = descriptors.get(name)!;
  const fields = new Map<number, FieldShape>();
  const shape: MessageShape = { name, fields };
  shapes.set(name, shape); // before the fields: a message may nest itself
  for (const field of descriptor.field) {
    const wireType = VALUE_WIRE_TYPE[field.type];
    if (wireType === undefined) throw new Error(`${name}.${field.name}: no wire shape for ${field.type}`);
    const isRepeated = field.label === 'LABEL_REPEATED';
    const shapeOfField: FieldShape = {
      name: field.name,
      wireType,
      isString: field.type === 'TYPE_STRING',
      isPackable: isRepeated && wireType !== WIRE_LEN,
      message: undefined,
    };
    fields.set(field.number, shapeOfField);
    if (field.type === 'TYPE_MESSAGE') {
      shapeOfField.message = shapeOf(descriptors, resolveTypeName(descriptors, field.typeName, name), shapes);
    }
  }
  return shape;
}

/**
 * The shape of each method's request type of the service `serviceName` in `packageDefinition`, by method
 * name.
 */
export function requestShapes(
  packageDefinition: PackageDefinition,
  serviceName: string,
): Map<string, MessageShape> {
  const descriptors = messageDescriptors(packageDefinition);
  const shapes = new Map<string, MessageShape>();
  const byMethod = new Map<string, MessageShape>();
  const service = packageDefinition[serviceName] as ServiceDefinition;
  for (const [method, definition] of Object.entries(service)) {
    const requestType = (definition as MethodDefinition<object, object>).requestType as unknown as {
      type: DescriptorLike;
    };
    byMethod.set(
      method,
      shapeOf(descriptors, requestTypeName(descriptors, serviceName, requestType.type), shapes),
    );
  }
  return byMethod;
}

/** Refuses, with a RangeError, `buf` unless it is a well-formed message of `shape` (see the top of the file). */
export function checkMessage(shape: MessageShape, buf: Buffer): void {
  checkFields(new Reader(buf, 0, buf.length), shape, 1);
}

function checkFields(r: Reader, shape: MessageShape, depth: number): void {
  if (depth > MAX_NESTING_DEPTH) throw new RangeError('messages nested too deep');
  while (!r.isDone) {
    const tag = r.tag();
    const field = shape.fields.get(tag >>> 3);
    const wireType = tag & 7;
    if (field === undefined) {
      r.skipField(tag);
    } else if (wireType === field.wireType) {
      if (field.message !== undefined) checkFields(r.message(), field.message, depth + 1);
      else if (field.isString) r.skipString();
      else r.skipField(tag);
    } else if (wireType === WIRE_LEN && field.isPackable) {
      const run = r.message();
      while (!run.isDone) run.skipValue(field.wireType, 0, 0);
    } else {
      throw new RangeError(
        `${shape.name}.${field.name} (field ${tag >>> 3}) arrived with wire type ${wireType}, not ${field.wireType}`,
      );
    }
  }
}

/**
 * The service `serviceName` of `packageDefinition` with `checkMessage` in front of each method's request
 * decoder. Install hand-written strict decoders (group-wire.ts, broker-wire.ts) on top of this: they
 * replace the decoder whole.
 */
export function withStrictRequestDecoding(
  packageDefinition: PackageDefinition,
  serviceName: string,
): ServiceDefinition {
  const service = packageDefinition[serviceName] as ServiceDefinition;
  const shapes = requestShapes(packageDefinition, serviceName);
  const result: ServiceDefinition = { ...service };
  for (const [method, definition] of Object.entries(service)) {
    const rpc = definition as MethodDefinition<object, object>;
    const shape = shapes.get(method)!;
    const decode = rpc.requestDeserialize;
    result[method] = {
      ...rpc,
      requestDeserialize: (bytes: Buffer) => {
        checkMessage(shape, bytes);
        return decode(bytes);
      },
    };
  }
  return result;
}
