import type { PackageDefinition } from '@grpc/proto-loader';

/**
 * A protobuf encoding as a tree of fields, for tests that break well-formed messages in precise ways
 * (truncate a nested message, flip a tag's wire type, spoil a string's UTF-8) and re-encode every
 * enclosing length so that only the intended defect remains. Written apart from src/server's Reader, so a
 * test of that Reader does not rely on it: it parses only what protobufjs's encoder writes (wire types 0,
 * 1, 2 and 5, lengths below 2^31), and `encodeTree(parseTree(bytes))` gives back `bytes`.
 */

/** A field as a descriptor (proto-loader's DescriptorProto objects, enums as names) declares it. */
export interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  readonly type: string;
  readonly typeName: string;
}

export interface MessageDescriptor {
  readonly name: string;
  readonly field: readonly FieldDescriptor[];
}

export type WireNode =
  /** A varint or a fixed32/64 field: `body` is the value's bytes as on the wire. */
  | { readonly kind: 'scalar'; readonly tag: number; readonly body: Buffer }
  /** A string or bytes field. */
  | { readonly kind: 'bytes'; readonly tag: number; readonly payload: Buffer; readonly isString: boolean }
  /** A packed run of a repeated numeric field; `elementEnds` are the offsets where its values end. */
  | {
      readonly kind: 'packed';
      readonly tag: number;
      readonly payload: Buffer;
      readonly elementEnds: number[];
    }
  | {
      readonly kind: 'message';
      readonly tag: number;
      readonly typeName: string;
      readonly children: WireNode[];
    }
  /** Bytes written as they are (a test's own unknown fields). */
  | { readonly kind: 'raw'; readonly bytes: Buffer };

const NUMERIC = new Set(['TYPE_INT32', 'TYPE_INT64', 'TYPE_BOOL', 'TYPE_ENUM', 'TYPE_UINT32', 'TYPE_UINT64']);
const FIXED32 = new Set(['TYPE_FIXED32', 'TYPE_SFIXED32', 'TYPE_FLOAT']);
const FIXED64 = new Set(['TYPE_FIXED64', 'TYPE_SFIXED64', 'TYPE_DOUBLE']);

/** The wire types a field may arrive with: its type's, and LEN too for a repeated numeric field. */
export function validWireTypes(field: FieldDescriptor): number[] {
  const packable = field.label === 'LABEL_REPEATED';
  if (NUMERIC.has(field.type)) return packable ? [0, 2] : [0];
  if (FIXED64.has(field.type)) return packable ? [1, 2] : [1];
  if (FIXED32.has(field.type)) return packable ? [5, 2] : [5];
  return [2];
}

/** Message descriptors by full name; every cohort type lives in cohort.v1, so relative names resolve there. */
export class Descriptors {
  private readonly byName = new Map<string, MessageDescriptor>();

  constructor(packageDefinition: PackageDefinition) {
    for (const [name, definition] of Object.entries(packageDefinition)) {
      if ((definition as { format?: string }).format === 'Protocol Buffer 3 DescriptorProto') {
        this.byName.set(name, (definition as unknown as { type: MessageDescriptor }).type);
      }
    }
  }

  message(name: string): MessageDescriptor {
    const descriptor = this.byName.get(name);
    if (descriptor === undefined) throw new Error(`no message ${name}`);
    return descriptor;
  }

  field(typeName: string, fieldNumber: number): FieldDescriptor | undefined {
    return this.message(typeName).field.find((f) => f.number === fieldNumber);
  }

  /** The full name of a field's message type. */
  typeOf(field: FieldDescriptor, scope: string): string {
    const pkg = scope.slice(0, scope.lastIndexOf('.'));
    return field.typeName.startsWith('.') ? field.typeName.slice(1) : `${pkg}.${field.typeName}`;
  }
}

function readVarint(buf: Buffer, pos: number): [value: number, end: number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (pos >= buf.length) throw new Error('not what protobufjs writes: a varint cut short');
    const byte = buf[pos++]!;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return [value, pos];
  }
}

export function varintBytes(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 128) {
    bytes.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** `buf`, a message of type `typeName` as protobufjs encodes it, as a tree. */
export function parseTree(descriptors: Descriptors, typeName: string, buf: Buffer): WireNode[] {
  const nodes: WireNode[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, afterTag] = readVarint(buf, pos);
    const field = descriptors.field(typeName, tag >>> 3);
    switch (tag & 7) {
      case 0: {
        const [, end] = readVarint(buf, afterTag);
        nodes.push({ kind: 'scalar', tag, body: buf.subarray(afterTag, end) });
        pos = end;
        break;
      }
      case 1:
      case 5: {
        const end = afterTag + ((tag & 7) === 1 ? 8 : 4);
        nodes.push({ kind: 'scalar', tag, body: buf.subarray(afterTag, end) });
        pos = end;
        break;
      }
      case 2: {
        const [length, start] = readVarint(buf, afterTag);
        const payload = buf.subarray(start, start + length);
        pos = start + length;
        if (field?.type === 'TYPE_MESSAGE') {
          const nested = descriptors.typeOf(field, typeName);
          nodes.push({
            kind: 'message',
            tag,
            typeName: nested,
            children: parseTree(descriptors, nested, payload),
          });
        } else if (field !== undefined && validWireTypes(field).length === 2) {
          nodes.push({ kind: 'packed', tag, payload, elementEnds: elementEnds(field, payload) });
        } else {
          nodes.push({ kind: 'bytes', tag, payload, isString: field?.type === 'TYPE_STRING' });
        }
        break;
      }
      default:
        throw new Error(`not what protobufjs writes: wire type ${tag & 7}`);
    }
  }
  return nodes;
}

function elementEnds(field: FieldDescriptor, payload: Buffer): number[] {
  const ends: number[] = [];
  const fixed = FIXED64.has(field.type) ? 8 : FIXED32.has(field.type) ? 4 : 0;
  for (let pos = 0; pos < payload.length;) {
    pos = fixed > 0 ? pos + fixed : readVarint(payload, pos)[1];
    ends.push(pos);
  }
  return ends;
}

/** The values of a packed run, each as its bytes on the wire. */
export function elementBytes(node: Extract<WireNode, { kind: 'packed' }>): Buffer[] {
  return node.elementEnds.map((end, i) => node.payload.subarray(i === 0 ? 0 : node.elementEnds[i - 1], end));
}

function encodeNode(node: WireNode): Buffer {
  switch (node.kind) {
    case 'raw':
      return node.bytes;
    case 'scalar':
      return Buffer.concat([varintBytes(node.tag), node.body]);
    case 'bytes':
    case 'packed':
      return Buffer.concat([varintBytes(node.tag), varintBytes(node.payload.length), node.payload]);
    case 'message': {
      const payload = encodeTree(node.children);
      return Buffer.concat([varintBytes(node.tag), varintBytes(payload.length), payload]);
    }
  }
}

export function encodeTree(nodes: readonly WireNode[]): Buffer {
  return Buffer.concat(nodes.map(encodeNode));
}

/** The offsets at which the fields of `nodes` end, encoded: where a shorter message may end. */
export function fieldEnds(nodes: readonly WireNode[]): Set<number> {
  const ends = new Set<number>([0]);
  let at = 0;
  for (const node of nodes) {
    at += encodeNode(node).length;
    ends.add(at);
  }
  return ends;
}

/** A node somewhere in a tree: the indexes of the message nodes leading to it, then its own. */
export type NodePath = readonly number[];

/** Every node of the tree with its path and the message type holding it, depth first. */
export function allNodes(
  nodes: readonly WireNode[],
  typeName: string,
  prefix: NodePath = [],
): { node: WireNode; path: NodePath; parentType: string }[] {
  const found: { node: WireNode; path: NodePath; parentType: string }[] = [];
  nodes.forEach((node, i) => {
    const path = [...prefix, i];
    found.push({ node, path, parentType: typeName });
    if (node.kind === 'message') found.push(...allNodes(node.children, node.typeName, path));
  });
  return found;
}

/** The tree with the node at `path` replaced by `replace(node)` (nodes, possibly none, spliced in). */
export function replaceAt(
  nodes: readonly WireNode[],
  path: NodePath,
  replace: (node: WireNode) => WireNode[],
): WireNode[] {
  const [i, ...rest] = path;
  const copy = [...nodes];
  const node = copy[i!]!;
  if (rest.length === 0) {
    copy.splice(i!, 1, ...replace(node));
  } else {
    if (node.kind !== 'message') throw new Error('a path runs through message nodes only');
    copy[i!] = { ...node, children: replaceAt(node.children, rest, replace) };
  }
  return copy;
}
