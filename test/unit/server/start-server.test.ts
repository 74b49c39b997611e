import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { InvalidConfigError } from '../../../src/config';
import { ErrorCode } from '../../../src/errors';
import type { EmbeddedServer } from '../../../src/server/start-server';
import { startServer } from '../../../src/server/start-server';
import type { GroupCoordinatorClient } from '../../support/grpc-clients';
import { groupCoordinatorClient, testClockClient } from '../../support/grpc-clients';

/**
 * startServer is what users embed in their own test suites, so it is tested as they use it: a real server on
 * 127.0.0.1, reached over gRPC, closed in afterEach.
 */

const servers: EmbeddedServer[] = [];
const clients: { close(): void }[] = [];
let groupCounter = 0;

/** Closed in afterEach. */
function track<S extends EmbeddedServer>(server: S): S {
  servers.push(server);
  return server;
}

function coordinator(server: EmbeddedServer): GroupCoordinatorClient {
  const client = groupCoordinatorClient(server.address);
  clients.push(client);
  return client;
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function joinRequest(groupId: string, memberId = '') {
  return {
    groupId,
    memberId,
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('m') }],
    clientId: 'start-server-test',
  };
}

async function groupState(client: GroupCoordinatorClient, groupId: string): Promise<string> {
  return (await client.describeGroups({ groups: [groupId] })).groups[0].groupState;
}

describe('startServer', () => {
  it('serves the group coordinator on 127.0.0.1 at the port it reports', async () => {
    const server = track(await startServer());
    expect(server.port).toBeGreaterThan(0);
    expect(server.address).toBe(`127.0.0.1:${server.port}`);
    const response = await coordinator(server).joinGroup(joinRequest(`start-${++groupCounter}`));
    expect(response.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(response.memberId).not.toBe('');
  });

  it('has no advanceClock on the system clock', async () => {
    const server = track(await startServer());
    expect(server.advanceClock).toBeUndefined();
  });

  it('moves time only through advanceClock with a manual clock, running what fell due before it resolves', async () => {
    const server = track(await startServer({ manualClock: true, groupInitialRebalanceDelayMs: 3_000 }));
    const client = coordinator(server);
    const groupId = `start-${++groupCounter}`;
    const { memberId } = await client.joinGroup(joinRequest(groupId));
    let answered = false;
    const join = client.joinGroup(joinRequest(groupId, memberId)).then((response) => {
      answered = true;
      return response;
    });
    // The join waits out the initial rebalance delay, which passes only when the test says so.
    while ((await groupState(client, groupId)) !== 'PreparingRebalance');
    await server.advanceClock(2_999);
    expect(await groupState(client, groupId)).toBe('PreparingRebalance');
    expect(answered).toBe(false);
    await server.advanceClock(1);
    expect(await groupState(client, groupId)).toBe('CompletingRebalance');
    expect(await join).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leaderId: memberId });
  });

  it('answers advanceClock with the server clock, as the TestClock service reads it', async () => {
    const server = track(await startServer({ manualClock: true }));
    const clock = testClockClient(server.address);
    clients.push(clock);
    const before = (await clock.now()).nowMs;
    const after = await server.advanceClock(1_500);
    expect(after).toBe(before + 1_500);
    expect((await clock.now()).nowMs).toBe(after);
    expect((await clock.advance({ ms: 500 })).nowMs).toBe(after + 500);
    expect(await server.advanceClock(0)).toBe(after + 500);
  });

  it('refuses to move the clock backwards, by a fraction, or once closed', async () => {
    const server = track(await startServer({ manualClock: true }));
    await expect(server.advanceClock(-1)).rejects.toThrow(RangeError);
    await expect(server.advanceClock(1.5)).rejects.toThrow(RangeError);
    await server.close();
    await expect(server.advanceClock(1)).rejects.toThrow(/closed/);
  });

  it('with a running clock, TestClock and advanceClock jump it ahead of wall time, which it keeps following', async () => {
    const server = track(await startServer({ manualClock: 'running' }));
    const clock = testClockClient(server.address);
    clients.push(clock);
    const wallBefore = Date.now();
    const before = (await clock.now()).nowMs;
    expect(before).toBeGreaterThanOrEqual(wallBefore - 1_000);
    const advanced = (await clock.advance({ ms: 3_600_000 })).nowMs;
    expect(advanced).toBeGreaterThanOrEqual(before + 3_600_000);
    const jumped = await server.advanceClock(60_000);
    expect(jumped).toBeGreaterThanOrEqual(advanced + 60_000);
    // Still running: it never reads less than wall time plus the jumps.
    expect((await clock.now()).nowMs).toBeGreaterThanOrEqual(Date.now() + 3_660_000 - 1_000);
  });

  it('with a running clock, a wait the server parked ends inside advanceClock when it jumps past it', async () => {
    const server = track(await startServer({ manualClock: 'running', groupInitialRebalanceDelayMs: 8_000 }));
    const client = coordinator(server);
    const groupId = `start-${++groupCounter}`;
    const { memberId } = await client.joinGroup(joinRequest(groupId));
    const join = client.joinGroup(joinRequest(groupId, memberId));
    while ((await groupState(client, groupId)) !== 'PreparingRebalance');
    await server.advanceClock(8_000); // less than the 10 s session: the member stays
    expect(await groupState(client, groupId)).toBe('CompletingRebalance');
    expect(await join).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leaderId: memberId });
  });

  it('makes a fresh data directory and removes it on close', async () => {
    const first = track(await startServer());
    const second = track(await startServer());
    expect(first.dataDir).not.toBe(second.dataDir);
    expect(existsSync(first.dataDir)).toBe(true);
    await first.close();
    expect(existsSync(first.dataDir)).toBe(false);
    expect(existsSync(second.dataDir)).toBe(true);
  });

  it('uses a data directory it is given and leaves it in place', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-start-server-test-'));
    try {
      const server = track(await startServer({ dataDir: dir }));
      expect(server.dataDir).toBe(dir);
      await server.close();
      expect(existsSync(dir)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a second server on a data directory in use, and lets one start once the first closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-start-server-test-'));
    try {
      const first = track(await startServer({ dataDir: dir }));
      await expect(startServer({ dataDir: dir })).rejects.toThrow(
        /could not start|already in use by another cohort server in this process/,
      );
      // The refused server changed nothing: the first still serves.
      const client = coordinator(first);
      const join = await client.joinGroup(joinRequest(`start-${++groupCounter}`));
      expect(join.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      await first.close();
      const second = track(await startServer({ dataDir: dir }));
      expect(second.dataDir).toBe(dir);
    } finally {
      await Promise.all(servers.splice(0).map((server) => server.close()));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('closes once however often close is called, and refuses calls afterwards', async () => {
    const server = track(await startServer());
    const client = coordinator(server);
    await client.joinGroup(joinRequest(`start-${++groupCounter}`));
    const closing = server.close();
    expect(server.close()).toBe(closing);
    await closing;
    const error = await client.joinGroup(joinRequest(`start-${++groupCounter}`), { deadlineMs: 5_000 }).then(
      () => undefined,
      (e: ServiceError) => e,
    );
    expect(error?.code).toBe(status.UNAVAILABLE);
  });

  it('answers a parked JoinGroup when it closes', async () => {
    const server = track(await startServer({ manualClock: true }));
    const client = coordinator(server);
    const groupId = `start-${++groupCounter}`;
    const { memberId } = await client.joinGroup(joinRequest(groupId));
    const parked = client.joinGroup(joinRequest(groupId, memberId));
    while ((await groupState(client, groupId)) !== 'PreparingRebalance');
    await server.close();
    expect((await parked).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it('rejects settings that do not fit together, listing the problem', async () => {
    await expect(
      startServer({ groupMinSessionTimeoutMs: 10_000, groupMaxSessionTimeoutMs: 5_000 }),
    ).rejects.toThrow(InvalidConfigError);
    await expect(startServer({ groupMaxSize: 0 })).rejects.toThrow(/groupMaxSize/);
  });
});
