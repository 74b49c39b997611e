import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import fc from 'fast-check';
import { loadCohortProtos, PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../../src/server/load-protos';
import { bytesValue, GROUP_FIELD_15, textValue, unknownFields } from '../../support/protobuf-wire';
import {
  allNodes,
  Descriptors,
  elementBytes,
  encodeTree,
  fieldEnds,
  parseTree,
  replaceAt,
  validWireTypes,
  type WireNode,
} from '../../support/wire-tree';

// Every request the server receives is read strictly: by a hand-written decoder (group-wire.ts,
// broker-wire.ts) or by wire-schema.ts's check in front of protobufjs. These properties hold what the server
// installs (loadCohortProtos) against protobufjs's own encoder and decoder (proto-loader, as clients use it),
// method by method, on messages generated from the .proto's descriptors.

const generic = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
const descriptors = new Descriptors(generic);
const served = loadCohortProtos();
const SERVICES = {
  GroupCoordinator: served.groupCoordinator,
  Broker: served.broker,
  TestClock: served.testClock,
} as const;

/** Every method the server serves, one by one, with what decodes its request there. */
const METHODS = [
  ['GroupCoordinator', 'JoinGroup', 'by hand'],
  ['GroupCoordinator', 'SyncGroup', 'by hand'],
  ['GroupCoordinator', 'Heartbeat', 'by hand'],
  ['GroupCoordinator', 'HeartbeatStream', 'by hand'],
  ['GroupCoordinator', 'LeaveGroup', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'OffsetCommit', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'OffsetFetch', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'DescribeGroups', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'ListGroups', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'DeleteGroups', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'WatchGroups', 'checked, then by protobufjs'],
  ['GroupCoordinator', 'FindCoordinator', 'checked, then by protobufjs'],
  ['Broker', 'CreateTopics', 'checked, then by protobufjs'],
  ['Broker', 'Metadata', 'checked, then by protobufjs'],
  ['Broker', 'Produce', 'by hand'],
  ['Broker', 'Fetch', 'checked, then by protobufjs'],
  ['Broker', 'ListOffsets', 'checked, then by protobufjs'],
  ['Broker', 'OffsetForLeaderEpoch', 'checked, then by protobufjs'],
  ['TestClock', 'Advance', 'checked, then by protobufjs'],
  ['TestClock', 'Now', 'checked, then by protobufjs'],
] as const;

type Service = keyof typeof SERVICES;

function referenceMethod(service: Service, method: string): MethodDefinition<object, object> {
  return (generic[`cohort.v1.${service}`] as ServiceDefinition)[method] as MethodDefinition<object, object>;
}

function requestTypeOf(service: Service, method: string): string {
  const type = referenceMethod(service, method).requestType.type as unknown as { name: string };
  return `cohort.v1.${type.name}`;
}

const int32 = fc.oneof(fc.integer({ min: -5, max: 300 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const int64Text = fc.oneof(
  fc.integer({ min: -5, max: 1_000 }).map(String),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
);

const arbitraries = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

/** Messages of `typeName`, every field given (protobufjs leaves defaults out when it encodes them). */
function messageArbitrary(typeName: string): fc.Arbitrary<Record<string, unknown>> {
  let arbitrary = arbitraries.get(typeName);
  if (arbitrary === undefined) {
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const field of descriptors.message(typeName).field) {
      const value = valueArbitrary(field.type, () => messageArbitrary(descriptors.typeOf(field, typeName)));
      if (value === undefined)
        throw new Error(`${typeName}.${field.name}: add an arbitrary for ${field.type}`);
      record[field.name] = field.label === 'LABEL_REPEATED' ? fc.array(value, { maxLength: 3 }) : value;
    }
    arbitrary = fc.record(record);
    arbitraries.set(typeName, arbitrary);
  }
  return arbitrary;
}

function valueArbitrary(
  type: string,
  nested: () => fc.Arbitrary<unknown>,
): fc.Arbitrary<unknown> | undefined {
  switch (type) {
    case 'TYPE_STRING':
      return textValue;
    case 'TYPE_BYTES':
      return bytesValue;
    case 'TYPE_INT32':
    case 'TYPE_ENUM':
      return int32;
    case 'TYPE_INT64':
      return int64Text;
    case 'TYPE_BOOL':
      return fc.boolean();
    case 'TYPE_MESSAGE':
      return nested();
    default:
      return undefined;
  }
}

/**
 * `value` with int64 fields as decimal strings: protobufjs gives them so (`longs: String`), the hand-written
 * decoders as numbers when exact (broker-wire.ts); the values are the same.
 */
function normalized(value: unknown, typeName: string): unknown {
  const message = value as Record<string, unknown>;
  const result: Record<string, unknown> = { ...message };
  for (const field of descriptors.message(typeName).field) {
    const convert = (v: unknown): unknown =>
      field.type === 'TYPE_INT64'
        ? String(v)
        : field.type === 'TYPE_MESSAGE'
          ? normalized(v, descriptors.typeOf(field, typeName))
          : v;
    const v = message[field.name];
    result[field.name] = Array.isArray(v) ? v.map(convert) : convert(v);
  }
  return result;
}

/** Whether a message of `typeName`, or one nested in it, has a field that `has` holds for. */
function typeHas(typeName: string, has: (type: string) => boolean): boolean {
  return descriptors
    .message(typeName)
    .field.some(
      (f) => has(f.type) || (f.type === 'TYPE_MESSAGE' && typeHas(descriptors.typeOf(f, typeName), has)),
    );
}

/** Sequences no valid UTF-8 holds anywhere: inserted at any point of valid UTF-8, the result is invalid. */
const INVALID_UTF8: readonly (readonly number[])[] = [
  [0xff], // never a UTF-8 byte
  [0x80], // a continuation byte without its lead
  [0xe2, 0x82], // a three-byte sequence cut short
  [0xc0, 0x80], // an overlong NUL
  [0xed, 0xa0, 0x80], // a UTF-16 surrogate (U+D800)
  [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
];

/** Unknown fields of every wire type, groups included, as one raw node. */
const UNKNOWN: WireNode = {
  kind: 'raw',
  bytes: Buffer.concat([unknownFields(), Buffer.from(GROUP_FIELD_15)]),
};

/** The tree with unknown fields inserted in every message (at a place `seed` picks) and packed runs unpacked. */
function withUnknownFieldsAndUnpacked(
  nodes: readonly WireNode[],
  typeName: string,
  seed: number,
): WireNode[] {
  const result: WireNode[] = [];
  for (const node of nodes) {
    if (node.kind === 'message') {
      result.push({
        ...node,
        children: withUnknownFieldsAndUnpacked(node.children, node.typeName, seed * 7 + 3),
      });
    } else if (node.kind === 'packed') {
      const field = descriptors.field(typeName, node.tag >>> 3)!;
      const tag = (node.tag & ~7) | validWireTypes(field)[0]!;
      for (const body of elementBytes(node)) result.push({ kind: 'scalar', tag, body });
    } else {
      result.push(node);
    }
  }
  result.splice(seed % (result.length + 1), 0, UNKNOWN);
  return result;
}

const numRuns = 60;

describe.each(METHODS)('%s.%s, decoded %s', (service, method) => {
  const reference = referenceMethod(service, method);
  const strict = (SERVICES[service][method] as MethodDefinition<object, object>).requestDeserialize;
  const typeName = requestTypeOf(service, method);
  const requests = messageArbitrary(typeName).map((request) => reference.requestSerialize(request));
  const expectDecodedAsProtobufjs = (bytes: Buffer, reference_: Buffer = bytes) =>
    expect(normalized(strict(bytes), typeName)).toEqual(
      normalized(reference.requestDeserialize(reference_), typeName),
    );
  const hasNested = typeHas(typeName, (type) => type === 'TYPE_MESSAGE');
  const hasStrings = typeHas(typeName, (type) => type === 'TYPE_STRING');
  const hasFields = descriptors.message(typeName).field.length > 0;

  /** Runs `check` on generated requests; it returns whether the request gave it something to check. */
  const assertOften = (check: (bytes: Buffer, a: number, b: number) => boolean) => {
    let checked = 0;
    fc.assert(
      fc.property(requests, fc.nat(), fc.nat(), (bytes, a, b) => {
        if (check(bytes, a, b)) checked++;
      }),
      { numRuns },
    );
    expect(checked).toBeGreaterThan(numRuns / 4);
  };

  test('decodes what protobufjs encodes as protobufjs decodes it (property)', () => {
    fc.assert(
      fc.property(requests, (bytes) => expectDecodedAsProtobufjs(bytes)),
      { numRuns },
    );
  });

  test('skips unknown fields of every wire type at every level, and takes packed runs unpacked (property)', () => {
    fc.assert(
      fc.property(requests, fc.nat(), (bytes, seed) => {
        const tree = parseTree(descriptors, typeName, bytes);
        expect(encodeTree(tree)).toEqual(bytes); // the tree is the encoding
        expectDecodedAsProtobufjs(encodeTree(withUnknownFieldsAndUnpacked(tree, typeName, seed)), bytes);
      }),
      { numRuns },
    );
  });

  test('refuses every prefix that ends inside a field; one ending between fields is a shorter message (property)', () => {
    fc.assert(
      fc.property(requests, (bytes) => {
        const ends = fieldEnds(parseTree(descriptors, typeName, bytes));
        const accepted: number[] = [];
        for (let length = 0; length < bytes.length; length++) {
          const prefix = bytes.subarray(0, length);
          if (ends.has(length)) {
            expectDecodedAsProtobufjs(prefix);
            continue;
          }
          try {
            strict(prefix);
            accepted.push(length);
          } catch (error) {
            if (!(error instanceof RangeError)) throw error;
          }
        }
        expect(accepted).toEqual([]); // prefixes cut inside a field that were not refused
      }),
      { numRuns },
    );
  });

  if (hasNested) {
    test('refuses a nested message or packed run cut inside a field, enclosing lengths kept consistent (property)', () => {
      assertOften((bytes, pick, pickCut) => {
        const tree = parseTree(descriptors, typeName, bytes);
        const sites = allNodes(tree, typeName).filter(
          ({ node }) => (node.kind === 'message' && node.children.length > 0) || node.kind === 'packed',
        );
        if (sites.length === 0) return false;
        const { node, path } = sites[pick % sites.length]!;
        const payload =
          node.kind === 'message' ? encodeTree(node.children) : (node as { payload: Buffer }).payload;
        const ends =
          node.kind === 'message'
            ? fieldEnds(node.children)
            : new Set([0, ...(node as { elementEnds: number[] }).elementEnds]);
        const cuts = [...payload.keys()].filter((at) => !ends.has(at));
        if (cuts.length === 0) return false; // a packed run of one-byte values
        const cut = cuts[pickCut % cuts.length]!;
        const broken = encodeTree(
          replaceAt(tree, path, () => [
            {
              kind: 'bytes',
              tag: (node as { tag: number }).tag,
              payload: payload.subarray(0, cut),
              isString: false,
            },
          ]),
        );
        expect(() => strict(broken)).toThrow(RangeError);
        return true;
      });
    });
  }

  if (hasFields) {
    test('refuses a known field whose tag carries a wire type its type cannot have, at any depth (property)', () => {
      assertOften((bytes, pick, pickWireType) => {
        const tree = parseTree(descriptors, typeName, bytes);
        const sites = allNodes(tree, typeName);
        if (sites.length === 0) return false;
        const { node, path, parentType } = sites[pick % sites.length]!;
        const tag = (node as { tag: number }).tag;
        const valid = validWireTypes(descriptors.field(parentType, tag >>> 3)!);
        const wrong = [0, 1, 2, 3, 4, 5, 6, 7].filter((wireType) => !valid.includes(wireType));
        const wireType = wrong[pickWireType % wrong.length]!;
        const broken = encodeTree(
          replaceAt(tree, path, () => [{ ...node, tag: (tag & ~7) | wireType } as WireNode]),
        );
        expect(() => strict(broken)).toThrow(RangeError);
        return true;
      });
    });
  }

  if (hasStrings) {
    test('refuses a string that is not UTF-8, at any depth (property)', () => {
      assertOften((bytes, pick, pickSpoil) => {
        const tree = parseTree(descriptors, typeName, bytes);
        const sites = allNodes(tree, typeName).filter(({ node }) => node.kind === 'bytes' && node.isString);
        if (sites.length === 0) return false;
        const { node, path } = sites[pick % sites.length]!;
        const text = (node as { payload: Buffer }).payload;
        const spoil = Buffer.from(INVALID_UTF8[pickSpoil % INVALID_UTF8.length]!);
        const at = Math.floor(pickSpoil / INVALID_UTF8.length) % (text.length + 1);
        const payload = Buffer.concat([text.subarray(0, at), spoil, text.subarray(at)]);
        const broken = encodeTree(replaceAt(tree, path, () => [{ ...node, payload } as WireNode]));
        expect(() => strict(broken)).toThrow(RangeError);
        return true;
      });
    });
  }
});

test('the methods above are every method the server serves', () => {
  const served = Object.entries(SERVICES).flatMap(([service, definition]) =>
    Object.keys(definition).map((method) => `${service}.${method}`),
  );
  expect(served.sort()).toEqual(METHODS.map(([service, method]) => `${service}.${method}`).sort());
});
