import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { ErrorCode } from '../../src/errors';
import { brokerClient, healthClient } from '../support/grpc-clients';
import { openUnfinishedCall } from '../support/raw-http2';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/** One sample of a Prometheus text exposition, e.g. `cohort_groups{state="Stable"}`; undefined if absent. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

async function get(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: string; type: string | null }> {
  const response = await fetch(url, init);
  return { status: response.status, body: await response.text(), type: response.headers.get('content-type') };
}

const JOIN = {
  sessionTimeoutMs: 30_000,
  rebalanceTimeoutMs: 60_000,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: Buffer.from('subscription') }],
};

describe('the admin listener', () => {
  let t: TestServer | undefined;
  const closers: { close(): void }[] = [];

  afterEach(async () => {
    for (const client of closers.splice(0)) client.close();
    await t?.close();
    t = undefined;
  });

  it('binds a free port for port 0, exposes it on the handle, and answers /healthz and /readyz', async () => {
    t = await startTestServer({ adminListen: '127.0.0.1:0' });
    const admin = t.server.adminAddress;
    expect(admin?.port).toBeGreaterThan(0);
    expect(t.adminUrl).toBe(`http://127.0.0.1:${admin?.port}`);
    expect(await get(`${t.adminUrl}/healthz`)).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get(`${t.adminUrl}/readyz`)).toMatchObject({ status: 200, body: 'ready\n' });
    expect((await get(`${t.adminUrl}/readyz`, { method: 'HEAD' })).status).toBe(200);
    expect((await get(`${t.adminUrl}/nothing`)).status).toBe(404);
    expect((await get(`${t.adminUrl}/metrics`, { method: 'POST' })).status).toBe(405);
    // A page's select request takes POST only, and names a stream that is open.
    const select = await fetch(`${t.adminUrl}/api/stream/select?stream=gone&group=g`);
    expect(select.status).toBe(405);
    expect(select.headers.get('allow')).toBe('POST');
    expect((await get(`${t.adminUrl}/api/stream/select?stream=gone`, { method: 'POST' })).status).toBe(404);
  });

  it('fails to start on a taken port, naming the setting that moves it', async () => {
    const squatter = createNetServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    try {
      const taken = `127.0.0.1:${(squatter.address() as AddressInfo).port}`;
      await expect(startTestServer({ adminListen: taken })).rejects.toThrow(
        `the admin listener cannot listen on ${taken} (EADDRINUSE): set --admin-listen (COHORT_ADMIN_LISTEN) to a free HOST:PORT, or to off`,
      );
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it('is absent when adminListen is off', async () => {
    t = await startTestServer({ adminListen: 'off' });
    expect(t.server.adminAddress).toBeUndefined();
  });

  it('answers /readyz 503 while the server drains, with health NOT_SERVING, and closes after the drain', async () => {
    t = await startTestServer({ adminListen: '127.0.0.1:0' });
    const url = t.adminUrl!;
    // A call whose request never finishes arriving stays in flight, so the drain waits on it.
    const call = openUnfinishedCall(t.target, '/cohort.v1.GroupCoordinator/ListGroups');
    closers.push(call);
    await call.ready;
    const health = healthClient(t.target);
    closers.push(health);
    const watch = health.watch('');
    expect(await watch.next()).toBe('SERVING');
    const closed = t.server.close();
    expect(await watch.next()).toBe('NOT_SERVING');
    expect(await get(`${url}/readyz`)).toEqual({
      status: 503,
      body: 'not ready: shutting down\n',
      type: 'text/plain; charset=utf-8',
    });
    expect((await get(`${url}/healthz`)).status).toBe(200);
    call.close();
    await closed;
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('shows the purgatories live on /metrics: a parked join in Rebalance, a long-poll Fetch in Fetch, sessions in Heartbeat', async () => {
    t = await startTestServer({ adminListen: '127.0.0.1:0', manualClock: true });
    const scrape = async (): Promise<string> => {
      const response = await get(`${t!.adminUrl}/metrics`);
      expect(response.status).toBe(200);
      expect(response.type).toContain('text/plain');
      return response.body;
    };
    const coordinator = t.groupCoordinator();
    const clock = t.testClock();

    // Two members join; the group waits for its initial delay, which the manual clock has not reached.
    const ids: string[] = [];
    const parkedJoins = [];
    for (const clientId of ['a', 'b']) {
      const first = await coordinator.joinGroup({ ...JOIN, groupId: 'live', clientId });
      expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      ids.push(first.memberId);
      parkedJoins.push(
        coordinator.joinGroup({ ...JOIN, groupId: 'live', clientId, memberId: first.memberId }),
      );
    }
    // Calls on one channel are handled in order: once this answers, both joins are parked.
    await coordinator.listGroups({});
    let text = await scrape();
    expect(sample(text, 'cohort_purgatory_delayed_operations{purgatory="Rebalance"}')).toBe(1);
    expect(sample(text, 'cohort_purgatory_size{purgatory="Rebalance"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cohort_purgatory_delayed_operations{purgatory="Heartbeat"}')).toBe(2);
    expect(sample(text, 'cohort_groups{state="PreparingRebalance"}')).toBe(1);
    expect(sample(text, 'cohort_group_members{state="PreparingRebalance"}')).toBe(2);
    expect(sample(text, 'cohort_rebalances_total{reason="member-joined"}')).toBe(1);
    expect(
      sample(
        text,
        'cohort_rpc_duration_seconds_count{service="cohort.v1.GroupCoordinator",method="JoinGroup",code="MEMBER_ID_REQUIRED"}',
      ),
    ).toBe(2);

    // A consumer long-polls an empty topic: one Fetch parked on two partitions.
    const broker = brokerClient(t.target);
    closers.push(broker);
    const created = await broker.createTopics({
      topics: [{ name: 'events', numPartitions: 2, replicationFactor: 1 }],
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
    const parkedFetch = broker.fetch({
      replicaId: -1,
      maxWaitMs: 60_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        {
          name: 'events',
          partitions: [
            { partitionIndex: 0, fetchOffset: '0', partitionMaxBytes: 1 << 20 },
            { partitionIndex: 1, fetchOffset: '0', partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    await broker.createTopics({ topics: [] });
    text = await scrape();
    expect(sample(text, 'cohort_purgatory_delayed_operations{purgatory="Fetch"}')).toBe(1);
    expect(sample(text, 'cohort_purgatory_size{purgatory="Fetch"}')).toBe(2);
    expect(sample(text, 'cohort_purgatory_delayed_operations{purgatory="Produce"}')).toBe(0);

    // The initial delay passes twice (the second member extended it, KIP-134): the join completes and the
    // group waits for the leader's SyncGroup.
    await clock.advance({ ms: 3_000 });
    await clock.advance({ ms: 3_000 });
    const joined = await Promise.all(parkedJoins);
    expect(joined.map((j) => j.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    text = await scrape();
    expect(sample(text, 'cohort_groups{state="CompletingRebalance"}')).toBe(1);
    expect(sample(text, 'cohort_groups{state="PreparingRebalance"}')).toBe(0);

    // A record wakes the long poll, and its partition's offsets show it.
    await broker.produce({
      acks: 1,
      timeoutMs: 5_000,
      topics: [
        {
          name: 'events',
          partitions: [
            {
              partitionIndex: 1,
              records: [{ timestampMs: '0', key: Buffer.alloc(0), value: Buffer.from('hello'), headers: [] }],
            },
          ],
        },
      ],
    });
    expect((await parkedFetch).errorCode).toBe(ErrorCode.NONE);
    text = await scrape();
    expect(sample(text, 'cohort_purgatory_delayed_operations{purgatory="Fetch"}')).toBe(0);
    expect(sample(text, 'cohort_partition_log_end_offset{topic="events",partition="1"}')).toBe(1);
    expect(sample(text, 'cohort_partition_high_watermark{topic="events",partition="1"}')).toBe(1);
    expect(sample(text, 'cohort_partition_isr_size{topic="events",partition="1"}')).toBe(1);

    // The group commits offset 0 on the partition that holds one record: lag 1.
    const leader = joined.find((j) => j.memberId === j.leaderId)!;
    await coordinator.syncGroup({
      groupId: 'live',
      generationId: 1,
      memberId: leader.memberId,
      assignments: [],
    });
    await coordinator.offsetCommit({
      groupId: 'live',
      generationId: 1,
      memberId: leader.memberId,
      topics: [
        {
          name: 'events',
          partitions: [
            { partitionIndex: 1, committedOffset: 0, committedLeaderEpoch: -1, committedMetadata: '' },
          ],
        },
      ],
    });
    text = await scrape();
    expect(sample(text, 'cohort_groups{state="Stable"}')).toBe(1);
    expect(sample(text, 'cohort_consumer_lag{group="live",topic="events",partition="1"}')).toBe(1);
    expect(sample(text, 'cohort_consumer_group_lag{group="live"}')).toBe(1);
    expect(sample(text, 'cohort_rebalance_duration_seconds_count')).toBe(1);
    expect(sample(text, 'cohort_rebalance_duration_seconds_sum')).toBe(6);
    expect(sample(text, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('reads a burst larger than maxCallsPerLoopTurn over several turns: every call answered, the pauses counted', async () => {
    t = await startTestServer({ adminListen: '127.0.0.1:0', maxCallsPerLoopTurn: 8 });
    const coordinator = t.groupCoordinator();
    // 400 calls of ~1 KiB on one connection: grpc-js writes them together, ~400 KiB, more than one socket
    // read (64 KiB) carries, so the server must read again after pausing.
    const padding = 'x'.repeat(1_000);
    const answers = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        coordinator.heartbeat({ groupId: `burst-${i}-${padding}`, generationId: 1, memberId: 'nobody' }),
      ),
    );
    expect(answers.every((a) => a.errorCode === ErrorCode.UNKNOWN_MEMBER_ID)).toBe(true);
    const text = (await get(`${t.adminUrl}/metrics`)).body;
    expect(sample(text, 'cohort_read_pauses_total')).toBeGreaterThan(0);
    // The connection reads again once the burst is over.
    expect((await coordinator.heartbeat({ groupId: 'after', memberId: 'nobody' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });
});
