import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfig } from '../../src/config';
import { ErrorCode } from '../../src/errors';
import type { JoinGroupResponse, OffsetFetchResponse } from '../../src/group/group-protocol';
import { CONSUMER_OFFSETS_PARTITION_DIR } from '../../src/log/consumer-offsets';
import { type CohortServer, createServer } from '../../src/server';
import { captureLogger } from '../support/capture-logger';
import { groupCoordinatorClient } from '../support/grpc-clients';
import {
  storedGenerationOf,
  storedGroupIdOf,
  storedMemberIdOf,
  storedOffsetOf,
  writeStoredGroupsPartition,
} from '../support/stored-groups-partition';

const TOPIC = 'ready-commits';
/** Enough groups for the shard's restore to take several event-loop turns after the replay. */
const GROUPS = 400;
const LAYOUT = { groups: GROUPS, partitionsPerGroup: 4, membersPerGroup: 3, topic: TOPIC };
const CONTEXT = { clientHost: '/127.0.0.1' };

/** A stored member (not the leader, same protocols) rejoining: a Stable group answers at once. */
function rejoin(group: number): Parameters<CohortServer['coordinator']['joinGroup']>[0] {
  return {
    groupId: storedGroupIdOf(group),
    memberId: storedMemberIdOf(group, 1),
    groupInstanceId: '',
    sessionTimeoutMs: 45_000,
    rebalanceTimeoutMs: 60_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.alloc(32, 1) }],
    clientId: 'client-1',
    reason: '',
  };
}

function fetchOffsets(group: number): Parameters<CohortServer['coordinator']['offsetFetch']>[0] {
  return {
    groupId: storedGroupIdOf(group),
    topics: [{ name: TOPIC, partitionIndexes: [0, 3] }],
    requireStable: false,
  };
}

function expectStoredOffsets(response: OffsetFetchResponse, group: number): void {
  expect(response.errorCode).toBe(ErrorCode.NONE);
  expect(response.topics[0]!.partitions.map((p) => [p.errorCode, p.committedOffset])).toEqual([
    [ErrorCode.NONE, storedOffsetOf(group, 0)],
    [ErrorCode.NONE, storedOffsetOf(group, 3)],
  ]);
}

function expectRejoined(response: JoinGroupResponse, group: number): void {
  expect(response.errorCode).toBe(ErrorCode.NONE);
  expect(response.generationId).toBe(storedGenerationOf(group));
  expect(response.memberId).toBe(storedMemberIdOf(group, 1));
}

describe('a single-node server is ready only once its groups are restored', () => {
  let root: string;
  let server: CohortServer | undefined;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cohort-ready-'));
  });

  afterEach(async () => {
    await server?.close();
    server = undefined;
    rmSync(root, { recursive: true, force: true });
  });

  test('at the moment it is ready, stored groups answer, not COORDINATOR_LOAD_IN_PROGRESS', async () => {
    const dataDir = join(root, 'data');
    const partitionDir = join(dataDir, CONSUMER_OFFSETS_PARTITION_DIR);
    mkdirSync(partitionDir, { recursive: true });
    await writeStoredGroupsPartition(partitionDir, LAYOUT);
    const config = createConfig({ listen: '127.0.0.1:0', adminListen: '127.0.0.1:0', dataDir });
    const { logger } = captureLogger('warn');
    const started = createServer(config, { logger });
    server = started;
    const first = 0;
    const last = GROUPS - 1;
    // Asked in the very turn readiness is announced (health SERVING, /readyz 200, main's 'cohort ready').
    const atReady = started.ready().then(() => ({
      firstOffsets: started.coordinator.offsetFetch(fetchOffsets(first), CONTEXT),
      lastOffsets: started.coordinator.offsetFetch(fetchOffsets(last), CONTEXT),
      join: started.coordinator.joinGroup(rejoin(last), CONTEXT),
      readyz: fetch(`${started.adminAddress!.url}/readyz`),
    }));
    const { port } = await started.start();
    const asked = await atReady;
    expectStoredOffsets(await asked.firstOffsets, first);
    expectStoredOffsets(await asked.lastOffsets, last);
    expectRejoined(await asked.join, last);
    expect((await asked.readyz).status).toBe(200);
    // And over the wire, as a client polling for readiness then asking would.
    const client = groupCoordinatorClient(`127.0.0.1:${port}`);
    try {
      expectStoredOffsets(await client.offsetFetch(fetchOffsets(GROUPS / 2)), GROUPS / 2);
    } finally {
      client.close();
    }
  });
});
