import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import type { JoinGroupRequest, JoinGroupResponse } from '../../src/group/group-protocol';
import { type GroupCoordinatorClient, groupCoordinatorClient } from '../support/grpc-clients';
import { withoutLastHeartbeats } from '../support/group-harness';
import { type CohortProcess, spawnCohort } from '../support/spawn-cohort';

const GROUP_ID = 'durable-group';
const TOPIC = 'orders';
const PARTITIONS = 6;
const SESSION_TIMEOUT_MS = 30_000;
/** Acknowledged commits to wait for before the kill; more keep coming while it lands. */
const ACKED_BEFORE_KILL = 60;

/** Polls `attempt` until `isDone` holds, at most `tries` times, `intervalMs` apart. */
async function eventually<T>(
  attempt: () => Promise<T>,
  isDone: (value: T) => boolean,
  tries = 200,
  intervalMs = 25,
): Promise<T> {
  let value = await attempt();
  for (let i = 1; i < tries && !isDone(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await attempt();
  }
  return value;
}

function joinRequest(name: string, memberId = ''): Partial<JoinGroupRequest> {
  return {
    groupId: GROUP_ID,
    memberId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: SESSION_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: [
      { name: 'range', metadata: Buffer.from(`${name}-range`) },
      { name: 'roundrobin', metadata: Buffer.from(`${name}-roundrobin`) },
    ],
    clientId: name,
  };
}

/** KIP-394: the first JoinGroup gets an id, the second (parked until the join completes) uses it. */
async function joinNew(client: GroupCoordinatorClient, name: string): Promise<JoinGroupResponse> {
  const first = await client.joinGroup(joinRequest(name));
  expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  return client.joinGroup(joinRequest(name, first.memberId));
}

describe('group state survives kill -9 of the cohort process', () => {
  let dataDir: string;
  let cohort: CohortProcess | undefined;
  const clients: GroupCoordinatorClient[] = [];

  async function startCohort(): Promise<GroupCoordinatorClient> {
    cohort = spawnCohort([
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      '--group-initial-rebalance-delay-ms',
      '0',
    ]);
    const { address } = await cohort.waitForLog('cohort listening');
    const client = groupCoordinatorClient(address as string);
    clients.push(client);
    return client;
  }

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'cohort-durable-'));
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await cohort?.kill();
    cohort = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps every acknowledged commit, the generation and the members with their sessions', async () => {
    const client = await startCohort();

    // Generation 1: member a alone. Generation 2: b joins, a learns of it by heartbeat and rejoins.
    const a1 = await joinNew(client, 'a');
    expect(a1).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leaderId: a1.memberId });
    const a = a1.memberId;
    expect((await client.syncGroup({ groupId: GROUP_ID, generationId: 1, memberId: a })).errorCode).toBe(
      ErrorCode.NONE,
    );
    const bJoin = joinNew(client, 'b');
    const heartbeat = await eventually(
      () => client.heartbeat({ groupId: GROUP_ID, generationId: 1, memberId: a }),
      (response) => response.errorCode === ErrorCode.REBALANCE_IN_PROGRESS,
    );
    expect(heartbeat.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const [a2, b2] = await Promise.all([client.joinGroup(joinRequest('a', a)), bJoin]);
    expect(a2).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: a });
    expect(b2).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: a });
    const b = b2.memberId;
    const assignments = [
      { memberId: a, assignment: Buffer.from('a-gets-0-2-4') },
      { memberId: b, assignment: Buffer.from('b-gets-1-3-5') },
    ];
    const [aSync, bSync] = await Promise.all([
      client.syncGroup({ groupId: GROUP_ID, generationId: 2, memberId: a, assignments }),
      client.syncGroup({ groupId: GROUP_ID, generationId: 2, memberId: b }),
    ]);
    expect(aSync).toMatchObject({ errorCode: ErrorCode.NONE, assignment: assignments[0].assignment });
    expect(bSync).toMatchObject({ errorCode: ErrorCode.NONE, assignment: assignments[1].assignment });
    const described = (await client.describeGroups({ groups: [GROUP_ID] })).groups[0];
    expect(described).toMatchObject({ groupState: 'Stable', protocolData: 'range' });

    // One committer per partition, each committing 1, 2, 3, ... as fast as acknowledgements come back,
    // until the process is killed under them.
    const sent = new Array<number>(PARTITIONS).fill(0);
    const acked = new Array<number>(PARTITIONS).fill(0);
    let ackCount = 0;
    let onEnoughAcks!: () => void;
    const enoughAcks = new Promise<void>((resolve) => (onEnoughAcks = resolve));
    const committers = Array.from({ length: PARTITIONS }, async (_, partition) => {
      const memberId = partition % 2 === 0 ? a : b;
      for (let offset = 1; ; offset++) {
        sent[partition] = offset;
        let response;
        try {
          response = await client.offsetCommit({
            groupId: GROUP_ID,
            generationId: 2,
            memberId,
            topics: [
              {
                name: TOPIC,
                partitions: [
                  {
                    partitionIndex: partition,
                    committedOffset: offset,
                    committedLeaderEpoch: 7,
                    committedMetadata: `at-${offset}`,
                  },
                ],
              },
            ],
          });
        } catch {
          return; // the process is gone: this commit was never acknowledged
        }
        expect(response.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
        acked[partition] = offset;
        if (++ackCount === ACKED_BEFORE_KILL) onEnoughAcks();
      }
    });
    await enoughAcks;
    cohort!.child.kill('SIGKILL');
    expect(await cohort!.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await Promise.all(committers);
    expect(ackCount).toBeGreaterThanOrEqual(ACKED_BEFORE_KILL);

    const restarted = await startCohort();
    // Until the group state is loaded, requests are answered COORDINATOR_LOAD_IN_PROGRESS; clients retry.
    const fetched = await eventually(
      () =>
        restarted.offsetFetch({
          groupId: GROUP_ID,
          topics: [{ name: TOPIC, partitionIndexes: [...Array(PARTITIONS).keys()] }],
        }),
      (response) => response.errorCode !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    );
    expect(fetched.errorCode).toBe(ErrorCode.NONE);
    const partitions = fetched.topics[0].partitions;
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const found = partitions.find((p) => p.partitionIndex === partition)!;
      // The last acknowledged commit, or the one in flight at the kill, never anything older.
      expect(found.errorCode).toBe(ErrorCode.NONE);
      expect(found.committedOffset).toBeGreaterThanOrEqual(acked[partition]);
      expect(found.committedOffset).toBeLessThanOrEqual(sent[partition]);
      expect(found).toMatchObject({ committedLeaderEpoch: 7, metadata: `at-${found.committedOffset}` });
    }

    // The group is back as it was: Stable, generation 2, both members with metadata and assignments. Their
    // last heartbeat is not part of the group's state: a loaded member's session starts at the load.
    expect(withoutLastHeartbeats((await restarted.describeGroups({ groups: [GROUP_ID] })).groups[0])).toEqual(
      withoutLastHeartbeats(described),
    );
    for (const memberId of [a, b]) {
      expect(await restarted.heartbeat({ groupId: GROUP_ID, generationId: 2, memberId })).toEqual({
        errorCode: ErrorCode.NONE,
      });
    }
    expect(await restarted.heartbeat({ groupId: GROUP_ID, generationId: 3, memberId: b })).toEqual({
      errorCode: ErrorCode.ILLEGAL_GENERATION,
    });
    // A follower that rejoins unchanged is handed generation 2 again: no rebalance was needed.
    expect(await restarted.joinGroup(joinRequest('b', b))).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      leaderId: a,
      memberId: b,
    });
    expect(
      (
        await restarted.offsetCommit({
          groupId: GROUP_ID,
          generationId: 2,
          memberId: a,
          topics: [
            {
              name: TOPIC,
              partitions: [
                {
                  partitionIndex: 0,
                  committedOffset: sent[0] + 1,
                  committedLeaderEpoch: 7,
                  committedMetadata: '',
                },
              ],
            },
          ],
        })
      ).topics[0].partitions[0].errorCode,
    ).toBe(ErrorCode.NONE);
  });
});
