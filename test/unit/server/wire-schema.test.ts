import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import { loadCohortProtos, PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../../src/server/load-protos';
import { checkMessage, requestShapes, withStrictRequestDecoding } from '../../../src/server/wire-schema';

const generic = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
const genericCoordinator = generic['cohort.v1.GroupCoordinator'] as ServiceDefinition;
const served = loadCohortProtos();
const deleteGroups = served.groupCoordinator.DeleteGroups as MethodDefinition<object, object>;
const offsetFetch = served.groupCoordinator.OffsetFetch as MethodDefinition<object, object>;

describe('the strict check in front of protobufjs (DeleteGroups, the worked example)', () => {
  const lenient = genericCoordinator.DeleteGroups as MethodDefinition<object, object>;

  test('decodes a well-formed request as protobufjs does', () => {
    const bytes = Buffer.from([0x0a, 0x05, ...Buffer.from('alpha')]);
    expect(deleteGroups.requestDeserialize(bytes)).toEqual({ groupsNames: ['alpha'] });
  });

  test('refuses a string cut short, which protobufjs decodes as a shorter group id', () => {
    const cut = Buffer.from([0x0a, 0x05, 0x61, 0x6c]);
    expect(lenient.requestDeserialize(cut)).toEqual({ groupsNames: ['al'] });
    expect(() => deleteGroups.requestDeserialize(cut)).toThrow(RangeError);
  });

  test('refuses invalid UTF-8, which protobufjs decodes as U+FFFD', () => {
    const invalid = Buffer.from([0x0a, 0x01, 0xff]);
    expect(lenient.requestDeserialize(invalid)).toEqual({ groupsNames: ['\uFFFD'] });
    expect(() => deleteGroups.requestDeserialize(invalid)).toThrow(RangeError);
  });

  test('refuses a string field sent as a varint, which protobufjs reads as a string anyway', () => {
    const misTyped = Buffer.from([0x08, 0x01, 0x61]);
    expect(lenient.requestDeserialize(misTyped)).toEqual({ groupsNames: ['a'] });
    expect(() => deleteGroups.requestDeserialize(misTyped)).toThrow(RangeError);
  });
});

describe('repeated numeric fields (OffsetFetchTopic.partition_indexes)', () => {
  const topic = (partitions: number[]) => [0x0a, 0x01, 0x74, ...partitions];
  const request = (topicBytes: number[]) => Buffer.from([0x12, topicBytes.length, ...topicBytes]);
  const expected = { groupId: '', requireStable: false, topics: [{ name: 't', partitionIndexes: [1, 300] }] };

  test('are taken packed and unpacked, even mixed', () => {
    expect(offsetFetch.requestDeserialize(request(topic([0x12, 0x03, 0x01, 0xac, 0x02])))).toEqual(expected);
    expect(offsetFetch.requestDeserialize(request(topic([0x10, 0x01, 0x10, 0xac, 0x02])))).toEqual(expected);
    expect(offsetFetch.requestDeserialize(request(topic([0x10, 0x01, 0x12, 0x02, 0xac, 0x02])))).toEqual(
      expected,
    );
  });

  test('refuse a packed run that ends inside a value', () => {
    expect(() => offsetFetch.requestDeserialize(request(topic([0x12, 0x02, 0x01, 0xac])))).toThrow(
      RangeError,
    );
  });

  test('refuse a wire type neither packed nor their own', () => {
    expect(() => offsetFetch.requestDeserialize(request(topic([0x15, 1, 0, 0, 0])))).toThrow(RangeError);
  });
});

describe('withStrictRequestDecoding', () => {
  test('changes only the request decoder of each method', () => {
    const strict = withStrictRequestDecoding(generic, 'cohort.v1.GroupCoordinator');
    expect(Object.keys(strict)).toEqual(Object.keys(genericCoordinator));
    for (const [name, rpc] of Object.entries(genericCoordinator)) {
      expect(strict[name]!.requestDeserialize).not.toBe(rpc.requestDeserialize);
      expect({ ...strict[name], requestDeserialize: undefined }).toEqual({
        ...rpc,
        requestDeserialize: undefined,
      });
    }
  });

  test('is what the server loads for the methods not decoded by hand', () => {
    expect(() => served.broker.Fetch!.requestDeserialize(Buffer.from([0x08]))).toThrow(RangeError);
    expect(() => served.testClock.Advance!.requestDeserialize(Buffer.from([0x08, 0x80]))).toThrow(RangeError);
  });
});

describe('message shapes from any .proto', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-wire-schema-'));
    writeFileSync(
      join(dir, 'shapes.proto'),
      `syntax = "proto3";
      package shapes.v1;
      import "google/protobuf/empty.proto";
      message Tree {
        message Leaf { string label = 1; }
        Tree child = 1;
        repeated Leaf leaves = 2;
        map<string, int32> counts = 3;
        repeated fixed32 weights = 4;
      }
      message Empty { string note = 1; }
      service Trees {
        rpc Plant(Tree) returns (Tree);
        rpc Prune(google.protobuf.Empty) returns (Tree);
        rpc Water(Empty) returns (Tree);
      }`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('find request types in other packages, and tell apart messages of the same name', () => {
    const shapes = requestShapes(
      loadSync('shapes.proto', { ...PROTO_LOADER_OPTIONS, includeDirs: [dir] }),
      'shapes.v1.Trees',
    );
    expect(shapes.get('Prune')!.name).toBe('google.protobuf.Empty');
    expect(shapes.get('Water')!.name).toBe('shapes.v1.Empty');
    expect(() => checkMessage(shapes.get('Water')!, Buffer.from([0x0a, 0x01, 0xff]))).toThrow(RangeError);
    expect(() => checkMessage(shapes.get('Prune')!, Buffer.from([0x0a, 0x01, 0xff]))).not.toThrow();
  });

  const treeShape = () =>
    requestShapes(
      loadSync('shapes.proto', { ...PROTO_LOADER_OPTIONS, includeDirs: [dir] }),
      'shapes.v1.Trees',
    ).get('Plant')!;

  test('resolve nested types and map entries, checking strings in both', () => {
    const shape = treeShape();
    expect(shape.name).toBe('shapes.v1.Tree');
    const leaf = [0x0a, 0x01, 0xff]; // label: invalid UTF-8
    expect(() => checkMessage(shape, Buffer.from([0x12, leaf.length, ...leaf]))).toThrow(RangeError);
    const entry = [0x0a, 0x01, 0xff, 0x10, 0x01]; // counts key: invalid UTF-8
    expect(() => checkMessage(shape, Buffer.from([0x1a, entry.length, ...entry]))).toThrow(RangeError);
    const valid = [0x0a, 0x01, 0x6b, 0x10, 0x01];
    expect(() => checkMessage(shape, Buffer.from([0x1a, valid.length, ...valid]))).not.toThrow();
  });

  test('take packed fixed32 runs only in whole values', () => {
    const shape = treeShape();
    expect(() => checkMessage(shape, Buffer.from([0x22, 0x08, 1, 0, 0, 0, 2, 0, 0, 0]))).not.toThrow();
    expect(() => checkMessage(shape, Buffer.from([0x25, 1, 0, 0, 0]))).not.toThrow();
    expect(() => checkMessage(shape, Buffer.from([0x22, 0x06, 1, 0, 0, 0, 2, 0]))).toThrow(RangeError);
  });

  test('refuse messages nested deeper than protobuf lets them', () => {
    const shape = treeShape();
    const nested = (depth: number): Buffer => {
      let bytes = Buffer.alloc(0);
      for (let i = 1; i < depth; i++)
        bytes = Buffer.concat([Buffer.from([0x0a]), varint(bytes.length), bytes]);
      return bytes;
    };
    expect(() => checkMessage(shape, nested(100))).not.toThrow();
    expect(() => checkMessage(shape, nested(101))).toThrow(RangeError);
  });
});

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 128) {
    bytes.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}
