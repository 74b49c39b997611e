import {
  Server,
  ServerCredentials,
  status as Status,
  type ServerUnaryCall,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { CohortClient, ErrorCode, GrpcTransport, RANGE_ASSIGNOR, type HeartbeatStream } from '../../src';
import { groupCoordinatorClient } from '../../src/client/group-coordinator-proto';
import { partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * SDK members heartbeating over HeartbeatStreams against a real server on the manual clock. The clock never
 * moves here, so no session or rebalance timeout can end anything: what moves the group is the members'
 * own calls and the coordinator's pushes.
 */

const TOPIC = 'orders';
const PARTITIONS = partitionsOf(TOPIC, 8);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness();

/** A GrpcTransport that counts the HeartbeatStreams it opens. */
class CountingTransport extends GrpcTransport {
  streamsOpened = 0;
  override openHeartbeatStream(onPush: (code: ErrorCode) => void): HeartbeatStream {
    this.streamsOpened++;
    return super.openHeartbeatStream(onPush);
  }
}

/**
 * A GroupCoordinator of an older server: its unary calls are forwarded to `upstream`, and it has no
 * HeartbeatStream, which grpc-js answers with UNIMPLEMENTED, as such a server does. Returns its address.
 */
async function serverWithoutStreams(
  server: Server,
  upstream: GrpcTransport,
  heartbeats: { count: number },
): Promise<string> {
  const forward =
    (method: 'joinGroup' | 'syncGroup' | 'heartbeat' | 'leaveGroup') =>
    (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      if (method === 'heartbeat') heartbeats.count++;
      upstream[method](call.request as never, { timeoutMs: 30_000 }).then(
        (response) => callback(null, response),
        () => callback({ code: Status.UNAVAILABLE, details: 'upstream failed' }),
      );
    };
  const implementation: UntypedServiceImplementation = {
    joinGroup: forward('joinGroup'),
    syncGroup: forward('syncGroup'),
    heartbeat: forward('heartbeat'),
    leaveGroup: forward('leaveGroup'),
  };
  server.addService(groupCoordinatorClient().service, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return `127.0.0.1:${port}`;
}

describe('SDK heartbeats over a stream', () => {
  it('Stable members whose heartbeats cannot get through rejoin at once when a fourth joins, told by a push', async () => {
    const h = harness();
    const groupId = h.groupId('push');
    const clients = [0, 1, 2].map((i) => h.newClient(`stream-${i}`, { heartbeatStreams: true }));
    const join = (c: (typeof clients)[number]) =>
      c.join({ groupId, topics: [TOPIC], partitionsPerTopic, protocols: [RANGE_ASSIGNOR] });
    const members = clients.map(join);
    const formed = await settled(members, PARTITIONS);
    // One heartbeat on each stream makes the coordinator watch it; then no heartbeat gets through any more,
    // so only a push can tell the three that the group is rebalancing.
    await Promise.all(
      clients.map((c) => c.transport.next('heartbeat', (o) => o.overStream === true && o.code === 0)),
    );
    for (const c of clients) c.transport.hold('heartbeat');
    expect(
      clients.flatMap((c) => c.transport.outcomes.filter((o) => o.method === 'heartbeat' && !o.overStream)),
    ).toEqual([]);

    const fourth = h.newClient('stream-3', { heartbeatStreams: true });
    const all = [...members, join(fourth)];
    expect(await settled(all, PARTITIONS)).toBe(formed + 1);
    for (const c of clients) expect(c.transport.pushes.at(-1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(all.map((m) => m.assignment?.length)).toEqual([2, 2, 2, 2]);
    for (const c of clients) c.transport.release('heartbeat');
  });

  it('a member of a server without HeartbeatStream heartbeats unary, having tried the stream once', async () => {
    const h = harness();
    const upstream = new GrpcTransport({ address: h.address });
    const server = new Server();
    const heartbeats = { count: 0 };
    let client: CohortClient | undefined;
    try {
      const address = await serverWithoutStreams(server, upstream, heartbeats);
      const transport = new CountingTransport({ address });
      client = new CohortClient({ address, clientId: 'old-server', transport });
      const member = client.join({
        groupId: h.groupId('unary'),
        topics: [TOPIC],
        partitionsPerTopic,
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 20,
      });
      const errors: Error[] = [];
      member.on('error', (error) => errors.push(error));
      await settled([member], PARTITIONS);
      while (heartbeats.count < 4) await new Promise((resolve) => setImmediate(resolve));
      expect(member.state).toBe('stable');
      expect(transport.streamsOpened).toBe(1);
      expect(errors).toEqual([]);
      await member.close();
    } finally {
      await client?.close();
      upstream.close();
      server.forceShutdown();
    }
  });
});
