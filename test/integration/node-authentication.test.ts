import { Metadata, status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { ErrorCode } from '../../src/errors';
import type { BrokerRequestContext, FetchRequest } from '../../src/log/broker-protocol';
import type { CohortServer } from '../../src/server';
import {
  NODE_AUTH_METADATA_KEY,
  NODE_ID_METADATA_KEY,
  nodeAuthFor,
  UNCHECKABLE_NODE_MESSAGE,
  WRONG_NODE_MESSAGE,
} from '../../src/server/node-credentials';
import { TEST_CLUSTER_SECRET } from '../support/cluster-secret';
import { brokerClient, groupCoordinatorClient } from '../support/grpc-clients';
import { LogCluster, produceRequest } from './log-cluster';

const TOKEN = 'a-long-enough-client-token-0123456789';

function asNode(nodeId: number, secret = TEST_CLUSTER_SECRET): Metadata {
  const metadata = new Metadata();
  metadata.set(NODE_ID_METADATA_KEY, String(nodeId));
  metadata.set(NODE_AUTH_METADATA_KEY, nodeAuthFor(secret, nodeId));
  return metadata;
}

function rejection(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: ServiceError) => error,
  );
}

/** The authenticatedNodeId of every Fetch the node's replica manager is asked, by replica id. */
function recordFetchContexts(server: CohortServer): { replicaId: number; nodeId: number | undefined }[] {
  const seen: { replicaId: number; nodeId: number | undefined }[] = [];
  const replicaManager = server.replicaManager;
  const fetch = replicaManager.fetch.bind(replicaManager);
  jest
    .spyOn(replicaManager, 'fetch')
    .mockImplementation((request: FetchRequest, context?: BrokerRequestContext) => {
      seen.push({ replicaId: request.replicaId, nodeId: context?.authenticatedNodeId });
      return fetch(request, context);
    });
  return seen;
}

describe('node authentication with the cluster secret', () => {
  let cluster: LogCluster;
  const closers: { close(): void }[] = [];

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    for (const client of closers.splice(0)) client.close();
    jest.restoreAllMocks();
    await cluster.cleanup();
  });

  function client(target: string): ReturnType<typeof brokerClient> {
    const c = brokerClient(target);
    closers.push(c);
    return c;
  }

  it('hands the replica manager the node id a Fetch proves, and none to a client naming a replica id', async () => {
    const leader = await cluster.start('leader');
    const seen = recordFetchContexts(leader.server);
    const broker = client(leader.target);
    const request = { replicaId: 1, maxWaitMs: 0, minBytes: 0, maxBytes: 1024, topics: [] };

    await broker.fetch(request, { metadata: asNode(1) });
    await broker.fetch(request);
    await broker.fetch({ ...request, replicaId: -1 }, { metadata: asNode(1) });

    expect(seen).toEqual([
      { replicaId: 1, nodeId: 1 },
      // A client that sends a follower's replica_id is still a client: the log layer refuses it.
      { replicaId: 1, nodeId: undefined },
      { replicaId: -1, nodeId: 1 },
    ]);
  });

  it('refuses wrong, foreign or repeated node credentials with UNAUTHENTICATED before the log sees them', async () => {
    const leader = await cluster.start('leader');
    const seen = recordFetchContexts(leader.server);
    const broker = client(leader.target);
    const request = { replicaId: 1, maxWaitMs: 0, minBytes: 0, maxBytes: 1024, topics: [] };

    const otherNodes = asNode(2);
    otherNodes.set(NODE_ID_METADATA_KEY, '1');
    const repeated = asNode(1);
    repeated.add(NODE_ID_METADATA_KEY, '1');
    const refusals = await Promise.all(
      [otherNodes, asNode(1, `${TEST_CLUSTER_SECRET}-of-another-cluster`), repeated].map((metadata) =>
        rejection(broker.fetch(request, { metadata })),
      ),
    );

    expect(refusals.map((error) => error.code)).toEqual([
      status.UNAUTHENTICATED,
      status.UNAUTHENTICATED,
      status.UNAUTHENTICATED,
    ]);
    expect(refusals[0]!.details).toBe(WRONG_NODE_MESSAGE);
    expect(refusals.map((error) => error.details).join('\n')).not.toContain(TEST_CLUSTER_SECRET);
    expect(seen).toEqual([]);
  });

  it('refuses node credentials on a server without a cluster secret, which cannot check them', async () => {
    const single = await cluster.start('single', { clusterSecret: '' });
    const error = await rejection(
      client(single.target).fetch(
        { replicaId: 1, maxWaitMs: 0, minBytes: 0, maxBytes: 1024, topics: [] },
        { metadata: asNode(1) },
      ),
    );
    expect([error.code, error.details]).toEqual([status.UNAUTHENTICATED, UNCHECKABLE_NODE_MESSAGE]);
  });

  it('lets a node proven by the secret replicate without the client token, only replicate, and refuses wrong credentials even with it', async () => {
    const leader = await cluster.start('leader', { token: TOKEN });
    const broker = client(leader.target);
    const groups = groupCoordinatorClient(leader.target);
    closers.push(groups);
    const request = { replicaId: 1, maxWaitMs: 0, minBytes: 0, maxBytes: 1024, topics: [] };

    expect((await broker.fetch(request, { metadata: asNode(1) })).errorCode).toBe(ErrorCode.NONE);
    // A node's credentials stand in for the token on replication only: a captured one opens nothing else.
    expect((await rejection(groups.listGroups({}, { metadata: asNode(1) }))).code).toBe(
      status.UNAUTHENTICATED,
    );
    const produce = produceRequest('none', ['x'], 1);
    expect((await rejection(broker.produce(produce, { metadata: asNode(1) }))).code).toBe(
      status.UNAUTHENTICATED,
    );
    // Neither a token nor node credentials: a client without its token.
    expect((await rejection(broker.fetch(request))).code).toBe(status.UNAUTHENTICATED);
    const both = asNode(1, `${TEST_CLUSTER_SECRET}x`);
    both.set('authorization', `Bearer ${TOKEN}`);
    const wrong = await rejection(broker.fetch(request, { metadata: both }));
    expect([wrong.code, wrong.details]).toEqual([status.UNAUTHENTICATED, WRONG_NODE_MESSAGE]);
  });
});
