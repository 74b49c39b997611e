import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { type ManualClockServer, startServer } from '../../src/server/start-server';
import { type GroupCoordinatorClient, groupCoordinatorClient } from '../support/grpc-clients';

const RETENTION_MS = 60_000;
const CHECK_INTERVAL_MS = 1_000;

/**
 * Offset retention over gRPC, on the durable `__consumer_offsets` store: what expires is gone from reads at
 * once and, through the tombstones, after a restart too; what has not expired comes back.
 */
describe('offset retention on a real server', () => {
  let dataDir: string;
  let server: ManualClockServer | undefined;
  let client: GroupCoordinatorClient | undefined;

  async function start(): Promise<GroupCoordinatorClient> {
    server = await startServer({
      manualClock: true,
      dataDir,
      groupInitialRebalanceDelayMs: 0,
      offsetsRetentionMinutes: RETENTION_MS / 60_000,
      offsetsRetentionCheckIntervalMs: CHECK_INTERVAL_MS,
    });
    client = groupCoordinatorClient(server.address);
    return client;
  }

  async function stop(): Promise<void> {
    client?.close();
    client = undefined;
    await server?.close();
    server = undefined;
  }

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'cohort-retention-'));
  });

  afterEach(async () => {
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function commit(c: GroupCoordinatorClient, groupId: string, offset: number): Promise<void> {
    const response = await c.offsetCommit({
      groupId,
      generationId: -1,
      memberId: '',
      groupInstanceId: '',
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: '' },
          ],
        },
      ],
    });
    expect(response.topics[0]?.partitions[0]?.errorCode).toBe(ErrorCode.NONE);
  }

  async function committedOffset(c: GroupCoordinatorClient, groupId: string): Promise<number> {
    const response = await c.offsetFetch({
      groupId,
      topics: [{ name: 'orders', partitionIndexes: [0] }],
    });
    return response.topics[0]?.partitions[0]?.committedOffset ?? Number.NaN;
  }

  /** The removal is a durable append (an fsync): poll the reads until it shows, for up to 10 s. */
  async function eventuallyGone(c: GroupCoordinatorClient, groupId: string): Promise<number> {
    let offset = await committedOffset(c, groupId);
    for (let i = 0; i < 1_000 && offset !== -1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      offset = await committedOffset(c, groupId);
    }
    return offset;
  }

  it('removes expired offsets and their group, durably, and keeps the rest', async () => {
    let c = await start();
    await commit(c, 'old', 5);
    await server!.advanceClock(30_000);
    await commit(c, 'young', 7);

    await server!.advanceClock(RETENTION_MS - 30_000 - CHECK_INTERVAL_MS);
    expect(await committedOffset(c, 'old')).toBe(5);

    await server!.advanceClock(2 * CHECK_INTERVAL_MS);
    expect(await eventuallyGone(c, 'old')).toBe(-1);
    const described = await c.describeGroups({ groups: ['old'] });
    expect(described.groups[0]?.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await committedOffset(c, 'young')).toBe(7);

    await stop();
    // The next server's manual clock starts where the first one's did: "young" was committed 30 s in.
    c = await start();
    const listed = await c.listGroups({});
    expect(listed.groups.map((g) => g.groupId)).toEqual(['young']);
    expect(await committedOffset(c, 'old')).toBe(-1);
    expect(await committedOffset(c, 'young')).toBe(7);
    // Its commit time came back with it: it expires retention after that, not after the restart.
    await server!.advanceClock(30_000 + RETENTION_MS - CHECK_INTERVAL_MS);
    expect(await committedOffset(c, 'young')).toBe(7);
    await server!.advanceClock(2 * CHECK_INTERVAL_MS);
    expect(await eventuallyGone(c, 'young')).toBe(-1);
  });
});
