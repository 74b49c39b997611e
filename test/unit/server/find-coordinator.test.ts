import { ErrorCode } from '../../../src/errors';
import type { MetadataResponse, PartitionMetadata } from '../../../src/log';
import { groupPartitionFor } from '../../../src/protocol/group-placement';
import { findCoordinatorHandler, GROUP_METADATA_TOPIC } from '../../../src/server/find-coordinator';

const NODES = [
  { nodeId: 1, host: '127.0.0.1', port: 7001 },
  { nodeId: 2, host: '127.0.0.1', port: 7002 },
  { nodeId: 3, host: '127.0.0.1', port: 7003 },
];

function partition(partitionIndex: number, leaderId: number): PartitionMetadata {
  return {
    partitionIndex,
    leaderId,
    replicaNodes: [1, 2, 3],
    isrNodes: [1, 2, 3],
    errorCode: ErrorCode.NONE,
    leaderEpoch: 4,
  };
}

/** Three partitions led by nodes 1, 2 and (offline) nobody. */
const VIEW: MetadataResponse = {
  controllerId: -1,
  brokers: NODES,
  topics: [
    {
      name: GROUP_METADATA_TOPIC,
      errorCode: ErrorCode.NONE,
      partitions: [partition(0, 1), partition(1, 2), partition(2, -1)],
      errorMessage: '',
    },
  ],
};

const MISSING: MetadataResponse = {
  controllerId: -1,
  brokers: NODES,
  topics: [
    {
      name: GROUP_METADATA_TOPIC,
      errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      partitions: [],
      errorMessage: '',
    },
  ],
};

/** A group id for each partition of a three-partition topic. */
function groupOn(partitionIndex: number): string {
  for (let i = 0; ; i++) if (groupPartitionFor(`g${i}`, 3) === partitionIndex) return `g${i}`;
}

describe('FindCoordinator', () => {
  it("answers each key with its partition's leader, and 15 for a partition without one", async () => {
    const find = findCoordinatorHandler({ metadata: () => Promise.resolve(VIEW) });
    const [a, b, c] = [groupOn(0), groupOn(1), groupOn(2)];
    const { coordinators } = await find({ keyType: 0, keys: [a, b, c] });
    expect(
      coordinators.map(({ key, nodeId, port, errorCode }) => ({ key, nodeId, port, errorCode })),
    ).toEqual([
      { key: a, nodeId: 1, port: 7001, errorCode: ErrorCode.NONE },
      { key: b, nodeId: 2, port: 7002, errorCode: ErrorCode.NONE },
      { key: c, nodeId: -1, port: -1, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE },
    ]);
    expect(coordinators[2]!.errorMessage).toContain(`${GROUP_METADATA_TOPIC}-2`);
  });

  it('answers 15 for every key while the node may have lost its session, and from its view again after', async () => {
    let isActive = false;
    const find = findCoordinatorHandler({
      metadata: () => Promise.resolve(VIEW),
      isViewCurrent: () => isActive,
    });
    const key = groupOn(0);
    const stale = await find({ keyType: 0, keys: [key] });
    expect(stale.coordinators).toEqual([
      expect.objectContaining({ key, nodeId: -1, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }),
    ]);
    expect(stale.coordinators[0]!.errorMessage).toContain('session');
    isActive = true;
    const current = await find({ keyType: 0, keys: [key] });
    expect(current.coordinators).toEqual([
      expect.objectContaining({ key, nodeId: 1, errorCode: ErrorCode.NONE }),
    ]);
  });

  it('answers 15 when the leader is not a live node of the view', async () => {
    const find = findCoordinatorHandler({
      metadata: () => Promise.resolve({ ...VIEW, brokers: NODES.filter((n) => n.nodeId !== 2) }),
    });
    const { coordinators } = await find({ keyType: 0, keys: [groupOn(1)] });
    expect(coordinators[0]!.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it('refuses key types other than groups, key by key', async () => {
    const find = findCoordinatorHandler({ metadata: () => Promise.resolve(VIEW) });
    const { coordinators } = await find({ keyType: 1, keys: ['txn-1', 'txn-2'] });
    expect(coordinators.map((c) => c.errorCode)).toEqual([
      ErrorCode.INVALID_REQUEST,
      ErrorCode.INVALID_REQUEST,
    ]);
  });

  it('asks for the topic to be created when it is missing, and answers 15 meanwhile', async () => {
    const onMissingTopic = jest.fn();
    const find = findCoordinatorHandler({ metadata: () => Promise.resolve(MISSING), onMissingTopic });
    const { coordinators } = await find({ keyType: 0, keys: ['a', 'b'] });
    expect(onMissingTopic).toHaveBeenCalledTimes(1);
    expect(coordinators.map((c) => c.errorCode)).toEqual([
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ]);
    expect(coordinators[0]!.errorMessage).toBe('__consumer_offsets does not exist yet');
  });

  it('says why the topic cannot be created when the creator knows', async () => {
    const find = findCoordinatorHandler({
      metadata: () => Promise.resolve(MISSING),
      onMissingTopic: () => '1 live node, fewer than --offsets-topic-replication-factor 3',
    });
    const { coordinators } = await find({ keyType: 0, keys: ['a'] });
    expect(coordinators.map((c) => [c.errorCode, c.errorMessage])).toEqual([
      [
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        '__consumer_offsets does not exist yet: 1 live node, fewer than --offsets-topic-replication-factor 3',
      ],
    ]);
  });

  it('names the local node for every key when no topic is hosted and nothing creates one', async () => {
    const local = NODES[2]!;
    const find = findCoordinatorHandler({ metadata: () => Promise.resolve(MISSING), localNode: () => local });
    const { coordinators } = await find({ keyType: 0, keys: ['a', ''] });
    expect(coordinators.map((c) => [c.key, c.nodeId, c.errorCode])).toEqual([
      ['a', 3, ErrorCode.NONE],
      ['', 3, ErrorCode.NONE],
    ]);
  });

  it('answers an empty key list with no coordinators and no lookup', async () => {
    const metadata = jest.fn(() => Promise.resolve(VIEW));
    const find = findCoordinatorHandler({ metadata });
    expect(await find({ keyType: 0, keys: [] })).toEqual({ coordinators: [] });
    expect(metadata).not.toHaveBeenCalled();
  });
});
