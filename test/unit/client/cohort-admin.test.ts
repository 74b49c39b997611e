import { CohortAdmin } from '../../../src/client/cohort-admin';
import { encodeAssignment } from '../../../src/client/consumer-protocol';
import type * as m from '../../../src/protocol/group-messages';
import type { GroupAdminTransport } from '../../../src/client/group-admin-transport';
import { CohortError, ErrorCode } from '../../../src/errors';
import { ManualTime } from '../../../src/time';
import { InMemoryBroker } from './support/in-memory-broker';
import { flush } from './support/scripted-transport';

/** A coordinator for admin calls: groups as given, offsets as committed, answers after a microtask. */
class FakeCoordinator implements GroupAdminTransport {
  groups: m.DescribedGroup[] = [];
  committed = new Map<string, number>();
  /** Codes ListGroups answers with before it answers NONE. */
  listGroupsCodes: ErrorCode[] = [];
  deleteCodes = new Map<string, ErrorCode>();
  calls: string[] = [];

  describeGroups(request: m.DescribeGroupsRequest): Promise<m.DescribeGroupsResponse> {
    this.calls.push('describeGroups');
    return Promise.resolve({
      groups: request.groups.map(
        (id) =>
          this.groups.find((g) => g.groupId === id) ?? {
            errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
            errorMessage: '',
            groupId: id,
            groupState: 'Dead',
            generationId: -1,
            protocolType: '',
            protocolData: '',
            members: [],
          },
      ),
    });
  }

  listGroups(): Promise<m.ListGroupsResponse> {
    this.calls.push('listGroups');
    const errorCode = this.listGroupsCodes.shift() ?? ErrorCode.NONE;
    return Promise.resolve({
      errorCode,
      groups:
        errorCode === ErrorCode.NONE
          ? this.groups.map((g) => ({
              groupId: g.groupId,
              protocolType: g.protocolType,
              groupState: g.groupState,
            }))
          : [],
    });
  }

  deleteGroups(request: m.DeleteGroupsRequest): Promise<m.DeleteGroupsResponse> {
    this.calls.push('deleteGroups');
    return Promise.resolve({
      results: request.groupsNames.map((groupId) => ({
        groupId,
        errorCode: this.deleteCodes.get(groupId) ?? ErrorCode.NONE,
      })),
    });
  }

  offsetFetch(request: m.OffsetFetchRequest): Promise<m.OffsetFetchResponse> {
    this.calls.push(`offsetFetch requireStable=${request.requireStable}`);
    const byTopic = new Map<string, m.OffsetFetchPartition[]>();
    for (const [key, committedOffset] of this.committed) {
      const [name, partition] = key.split('/');
      let list = byTopic.get(name);
      if (list === undefined) byTopic.set(name, (list = []));
      list.push({
        partitionIndex: Number(partition),
        committedOffset,
        committedLeaderEpoch: -1,
        metadata: '',
        errorCode: ErrorCode.NONE,
      });
    }
    return Promise.resolve({
      errorCode: ErrorCode.NONE,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    });
  }
}

function member(memberId: string, partitions: number[], protocolType = 'consumer'): m.DescribedGroupMember {
  return {
    memberId,
    groupInstanceId: '',
    clientId: `client-${memberId}`,
    clientHost: '10.0.0.1',
    memberMetadata: Buffer.alloc(0),
    memberAssignment:
      protocolType === 'consumer'
        ? encodeAssignment({ partitions: partitions.map((partition) => ({ topic: 'orders', partition })) })
        : Buffer.from('opaque'),
    lastHeartbeatMs: 0,
  };
}

function stableGroup(
  groupId: string,
  members: m.DescribedGroupMember[],
  protocolType = 'consumer',
): m.DescribedGroup {
  return {
    errorCode: 0,
    errorMessage: '',
    groupId,
    groupState: 'Stable',
    generationId: 3,
    protocolType,
    protocolData: 'range',
    members,
  };
}

function setup() {
  const time = new ManualTime();
  const coordinator = new FakeCoordinator();
  const broker = new InMemoryBroker(time).addTopic('orders', 3);
  const admin = new CohortAdmin(
    { requestTimeoutMs: 2_000, retryBackoffMs: 100, retryBackoffMaxMs: 100 },
    { groupTransport: coordinator, brokerTransport: broker, time, random: () => 0.5 },
  );
  return { time, coordinator, broker, admin };
}

describe('CohortAdmin', () => {
  it('creates topics and reports each outcome, with the server’s reason as the cause', async () => {
    const { admin } = setup();
    const results = await admin.createTopics([{ name: 'payments', numPartitions: 4 }, { name: 'orders' }]);
    expect(results.map((r) => [r.name, r.error?.code ?? ErrorCode.NONE])).toEqual([
      ['payments', ErrorCode.NONE],
      ['orders', ErrorCode.TOPIC_ALREADY_EXISTS],
    ]);
    expect((results[1].error?.cause as Error).message).toMatch(/already exists/);
    const described = await admin.describeTopics(['payments', 'missing']);
    expect(described.map((t) => [t.name, t.partitions.length, t.error?.code ?? 0])).toEqual([
      ['missing', 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ['payments', 4, 0],
    ]);
    expect(await admin.listTopics()).toEqual(['orders', 'payments']);
  });

  it('lists offsets of each partition, with errors as values', async () => {
    const { admin, broker } = setup();
    broker.append('orders', 1, 'a', 'b');
    const tps = [
      { topic: 'orders', partition: 1 },
      { topic: 'nope', partition: 0 },
    ];
    const latest = await admin.listOffsets(tps, 'latest');
    expect(latest.map((o) => [o.offset, o.error?.code ?? 0])).toEqual([
      [2n, 0],
      [null, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
    expect((await admin.listOffsets(tps.slice(0, 1), 'earliest'))[0].offset).toBe(0n);
    await expect(admin.listOffsets(tps, { timestampMs: -3 })).rejects.toThrow(RangeError);
  });

  it('describes groups, decoding consumer assignments and leaving other protocols’ bytes alone', async () => {
    const { admin, coordinator } = setup();
    coordinator.groups = [
      stableGroup('billing', [member('m-1', [0, 2]), member('m-2', [1])]),
      stableGroup('connect', [member('w-1', [], 'connect')], 'connect'),
    ];
    const [billing, connect, missing] = await admin.describeGroups(['billing', 'connect', 'gone']);
    expect(
      billing.members.map((x) => [
        x.memberId,
        x.clientId,
        x.clientHost,
        x.assignment?.map((tp) => tp.partition),
      ]),
    ).toEqual([
      ['m-1', 'client-m-1', '10.0.0.1', [0, 2]],
      ['m-2', 'client-m-2', '10.0.0.1', [1]],
    ]);
    expect([billing.state, billing.protocol, billing.error]).toEqual(['Stable', 'range', null]);
    expect(connect.members[0].assignment).toBeNull();
    expect(connect.members[0].assignmentBytes.toString()).toBe('opaque');
    expect(missing.error?.code).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  it('describes a consumer group with lag = high watermark - committed, per assigned or committed partition', async () => {
    const { admin, coordinator, broker } = setup();
    broker.addTopic('old', 1);
    broker.append('orders', 0, 'a', 'b', 'c', 'd', 'e');
    broker.append('orders', 1, 'a', 'b');
    broker.append('old', 0, 'x');
    coordinator.groups = [stableGroup('billing', [member('m-1', [0, 1]), member('m-2', [2])])];
    coordinator.committed.set('orders/0', 3);
    coordinator.committed.set('orders/1', 2);
    coordinator.committed.set('old/0', 0);
    const group = await admin.describeConsumerGroup('billing');
    expect(
      group.partitions.map((p) => [
        `${p.topic}-${p.partition}`,
        p.committedOffset,
        p.highWatermark,
        p.lag,
        p.memberId,
      ]),
    ).toEqual([
      ['old-0', 0n, 1n, 1n, null],
      ['orders-0', 3n, 5n, 2n, 'm-1'],
      ['orders-1', 2n, 2n, 0n, 'm-1'],
      ['orders-2', null, 0n, null, 'm-2'],
    ]);
    // An operator's look reads what is committed now, without waiting for commits in flight.
    expect(coordinator.calls).toContain('offsetFetch requireStable=false');
    const missing = await admin.describeConsumerGroup('gone');
    expect([missing.error?.code, missing.partitions]).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, []]);
  });

  it('deletes groups, reporting a group that still has members', async () => {
    const { admin, coordinator } = setup();
    coordinator.deleteCodes.set('busy', ErrorCode.NON_EMPTY_GROUP);
    const results = await admin.deleteGroups(['idle', 'busy']);
    expect(results.map((r) => [r.groupId, r.error?.code ?? 0])).toEqual([
      ['idle', 0],
      ['busy', ErrorCode.NON_EMPTY_GROUP],
    ]);
  });

  it('asks again while the coordinator is loading, with backoff, until it answers', async () => {
    const { admin, coordinator, time } = setup();
    coordinator.groups = [stableGroup('billing', [])];
    coordinator.listGroupsCodes = [
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ];
    let groups: unknown;
    void admin.listGroups().then((g) => (groups = g));
    await flush();
    expect(coordinator.calls).toEqual(['listGroups']);
    time.advance(100);
    await flush();
    time.advance(100);
    await flush();
    expect(coordinator.calls).toEqual(['listGroups', 'listGroups', 'listGroups']);
    expect(groups).toEqual([{ groupId: 'billing', protocolType: 'consumer', state: 'Stable' }]);
  });

  it('gives up after requestTimeoutMs with the last retriable error, and at once on one that is not', async () => {
    const { admin, broker, time } = setup();
    const unreachable = new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'connection refused');
    broker.script('metadata', ...Array.from({ length: 30 }, () => unreachable));
    let failure: unknown;
    void admin.listTopics().catch((e: unknown) => (failure = e));
    for (let i = 0; i < 25 && failure === undefined; i++) {
      await flush();
      time.advance(100);
    }
    expect(failure).toBe(unreachable);
    expect(time.monotonicMs()).toBeLessThanOrEqual(2_000);

    const other = setup();
    other.broker.script('metadata', new CohortError(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'no token'));
    await expect(other.admin.listTopics()).rejects.toMatchObject({
      code: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    });
    expect(other.broker.callsOf('metadata')).toHaveLength(1);
  });
});
