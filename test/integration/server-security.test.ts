import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { createConfig } from '../../src/config';
import { ErrorCode } from '../../src/errors';
import { createServer } from '../../src/server';
import { REPEATED_TOKEN_MESSAGE } from '../../src/server/bearer-token-interceptor';
import { captureLogger } from '../support/capture-logger';
import { TEST_CLUSTER_SECRET } from '../support/cluster-secret';
import { FakeGroupCoordinator } from '../support/fake-group-coordinator';
import type { ChannelSettings } from '../support/grpc-clients';
import {
  brokerClient,
  groupCoordinatorClient,
  healthClient,
  listServicesByReflection,
} from '../support/grpc-clients';
import { FRAME, rawHttp2Call } from '../support/raw-http2';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import type { TlsFixtures } from '../support/tls-fixtures';
import { makeTlsFixtures } from '../support/tls-fixtures';

const TOKEN = 'a-long-enough-test-token-0123456789';

function bearer(token: string): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${token}`);
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

const closers: { close(): void }[] = [];
function track<C extends { close(): void }>(client: C): C {
  closers.push(client);
  return client;
}

let t: TestServer | undefined;
afterEach(async () => {
  for (const client of closers.splice(0)) client.close();
  await t?.close();
  t = undefined;
});

describe('bearer-token authentication', () => {
  it('serves a call that carries the token and refuses one without it, or with another, before the coordinator sees it', async () => {
    const coordinator = new FakeGroupCoordinator({ listGroups: async () => ({ errorCode: 0, groups: [] }) });
    t = await startTestServer(
      { token: TOKEN, adminListen: '127.0.0.1:0' },
      { coordinatorFactory: () => coordinator },
    );
    const client = track(groupCoordinatorClient(t.target));

    expect(await client.listGroups({}, { metadata: bearer(TOKEN) })).toEqual({ errorCode: 0, groups: [] });
    expect(coordinator.calls).toHaveLength(1);

    const missing = await rejection(client.listGroups({}));
    expect(missing.code).toBe(status.UNAUTHENTICATED);
    expect(missing.details).toContain('authorization: Bearer <token>');
    const wrong = await rejection(client.listGroups({}, { metadata: bearer(`${TOKEN}x`) }));
    expect(wrong.code).toBe(status.UNAUTHENTICATED);
    expect(wrong.details).toBe('the bearer token was not accepted');
    expect(wrong.details).not.toContain(TOKEN);
    const basic = new Metadata();
    basic.set('authorization', `Basic ${TOKEN}`);
    expect((await rejection(client.listGroups({}, { metadata: basic }))).code).toBe(status.UNAUTHENTICATED);
    expect(coordinator.calls).toHaveLength(1);

    // The refusals are counted, and the connection keeps serving calls that carry the token.
    const metrics = await (
      await fetch(`${t.adminUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(metrics).toMatch(/^cohort_unauthenticated_calls_total 3$/m);
    expect(await client.listGroups({}, { metadata: bearer(TOKEN) })).toEqual({ errorCode: 0, groups: [] });
  });

  it('refuses with UNAUTHENTICATED a request that carries two authorization headers, whichever comes first', async () => {
    const coordinator = new FakeGroupCoordinator({ listGroups: async () => ({ errorCode: 0, groups: [] }) });
    t = await startTestServer(
      { token: TOKEN, adminListen: '127.0.0.1:0', logLevel: 'debug' },
      { coordinatorFactory: () => coordinator },
    );
    const listGroups = '/cohort.v1.GroupCoordinator/ListGroups';
    const right = ['authorization', `Bearer ${TOKEN}`] as const;
    const wrong = ['authorization', 'Bearer not-the-token-at-all'] as const;
    // A hand-written HTTP/2 client puts both headers on the wire, as any client or proxy could.
    const served = await rawHttp2Call(t.port, listGroups, [right], Buffer.alloc(0));
    expect(served.map((f) => f.type)).toEqual([FRAME.HEADERS, FRAME.DATA, FRAME.HEADERS]);
    expect(coordinator.calls).toHaveLength(1);
    for (const headers of [
      [right, wrong],
      [wrong, right],
      [right, right],
    ]) {
      // Refused: one trailers-only HEADERS frame that ends the stream, no response message.
      const refused = await rawHttp2Call(t.port, listGroups, headers, Buffer.alloc(0));
      expect(refused.map((f) => f.type)).toEqual([FRAME.HEADERS]);
    }
    expect(coordinator.calls).toHaveLength(1);
    expect(
      t.logs.filter((line) => line.msg === 'call refused: no valid bearer token').map((line) => line.reason),
    ).toEqual([REPEATED_TOKEN_MESSAGE, REPEATED_TOKEN_MESSAGE, REPEATED_TOKEN_MESSAGE]);
    const metrics = await (
      await fetch(`${t.adminUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(metrics).toMatch(/^cohort_unauthenticated_calls_total 3$/m);
  });

  it('never serves a grpc-js call whose metadata has the token twice: Node will not send it', async () => {
    const coordinator = new FakeGroupCoordinator({ listGroups: async () => ({ errorCode: 0, groups: [] }) });
    t = await startTestServer({ token: TOKEN }, { coordinatorFactory: () => coordinator });
    const client = track(groupCoordinatorClient(t.target));
    const twice = bearer(TOKEN);
    twice.add('authorization', `Bearer ${TOKEN}`);
    const error = await rejection(client.listGroups({}, { metadata: twice }));
    // The client fails the call itself: Node's HTTP/2 refuses two values of a single-value header.
    expect(error.code).toBe(status.INTERNAL);
    expect(error.details).toContain('"authorization" metadata cannot have multiple values');
    expect(coordinator.calls).toEqual([]);
    expect((await client.listGroups({}, { metadata: bearer(TOKEN) })).errorCode).toBe(ErrorCode.NONE);
  });

  it('guards the Broker service too', async () => {
    t = await startTestServer({ token: TOKEN });
    const broker = track(brokerClient(t.target));
    const request = { topics: [{ name: 'guarded', numPartitions: 1, replicationFactor: 1 }] };
    expect((await rejection(broker.createTopics(request))).code).toBe(status.UNAUTHENTICATED);
    const created = await broker.createTopics(request, { metadata: bearer(TOKEN) });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
  });

  it('lets health checks and reflection through without a token', async () => {
    t = await startTestServer({ token: TOKEN });
    const health = track(healthClient(t.target));
    expect(await health.check('')).toBe('SERVING');
    expect(await listServicesByReflection(t.target)).toEqual([
      'cohort.v1.Broker',
      'cohort.v1.GroupCoordinator',
      'grpc.health.v1.Health',
    ]);
  });

  it('reads the token from --token-file, ignoring its trailing newline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-token-'));
    try {
      const tokenFile = join(dir, 'token');
      writeFileSync(tokenFile, `${TOKEN}\n`);
      t = await startTestServer({ tokenFile });
      const client = track(groupCoordinatorClient(t.target));
      expect((await client.listGroups({}, { metadata: bearer(TOKEN) })).errorCode).toBe(ErrorCode.NONE);
      expect((await rejection(client.listGroups({}))).code).toBe(status.UNAUTHENTICATED);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('token strength', () => {
  const WEAK_TOKEN_WARNING = expect.stringContaining('the bearer token looks easy to guess');

  it('warns at start-up about a token that only meets the length rule, never showing it, and still serves it', async () => {
    const weak = 'xxxxxxxxxxxxxxxx';
    t = await startTestServer({ token: weak });
    const warnings = t.logs.filter((line) => line.level === 40 && line.msg.includes('easy to guess'));
    expect(warnings).toEqual([
      expect.objectContaining({ msg: WEAK_TOKEN_WARNING, tokenFrom: 'COHORT_TOKEN' }),
    ]);
    expect(warnings[0].msg).toContain('openssl rand -base64 32');
    expect(JSON.stringify(t.logs)).not.toContain(weak);
    const client = track(groupCoordinatorClient(t.target));
    expect((await client.listGroups({}, { metadata: bearer(weak) })).errorCode).toBe(ErrorCode.NONE);
  });

  it('warns about a weak token read from --token-file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-token-'));
    try {
      const tokenFile = join(dir, 'token');
      writeFileSync(tokenFile, '0123456789abcdef\n');
      t = await startTestServer({ tokenFile });
      expect(t.logs).toContainEqual(
        expect.objectContaining({ level: 40, msg: WEAK_TOKEN_WARNING, tokenFrom: '--token-file' }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('warns about node credentials in clear text on a reachable address, not on loopback', async () => {
    const CLEAR_TEXT =
      'node credentials travel in clear text on a reachable address: give --tls-cert and --tls-key too';
    const warned = async (listen: string): Promise<boolean> => {
      // The warning comes from createServer; the server is never started, so nothing binds 0.0.0.0.
      const dataDir = mkdtempSync(join(tmpdir(), 'cohort-clear-text-'));
      const { logger, lines } = captureLogger('info');
      const config = createConfig({ listen, dataDir, clusterSecret: TEST_CLUSTER_SECRET, insecure: true });
      const server = createServer(config, { logger });
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
      return lines.some((line) => line.level === 40 && line.msg === CLEAR_TEXT && line.listen === listen);
    };
    expect(await warned('0.0.0.0:7070')).toBe(true);
    expect(await warned('127.0.0.1:7070')).toBe(false);
  });

  it('says nothing about a random token', async () => {
    t = await startTestServer({ token: randomBytes(32).toString('base64url') });
    expect(t.logs.map((line) => line.msg)).not.toContainEqual(WEAK_TOKEN_WARNING);
  });
});

describe('TLS', () => {
  let tls: TlsFixtures;
  beforeAll(() => {
    tls = makeTlsFixtures();
  });
  afterAll(() => tls.cleanup());

  const trusting = (clientCert?: { cert: string; key: string }): ChannelSettings => ({
    credentials: credentials.createSsl(
      tls.read(tls.caCertPath),
      clientCert === undefined ? null : tls.read(clientCert.key),
      clientCert === undefined ? null : tls.read(clientCert.cert),
    ),
  });

  it('serves a client that trusts its CA, and fails a plaintext client and one that does not trust it', async () => {
    t = await startTestServer({ tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath });
    const trusted = track(groupCoordinatorClient(t.target, trusting()));
    expect((await trusted.listGroups({})).errorCode).toBe(ErrorCode.NONE);

    const plaintext = track(groupCoordinatorClient(t.target));
    expect((await rejection(plaintext.listGroups({}, { deadlineMs: 2_000 }))).code).toBe(status.UNAVAILABLE);
    const untrusting = track(groupCoordinatorClient(t.target, { credentials: credentials.createSsl() }));
    expect((await rejection(untrusting.listGroups({}, { deadlineMs: 2_000 }))).code).toBe(status.UNAVAILABLE);
  });

  it('with a client CA (mutual TLS) serves a client whose certificate the CA signed and fails the others', async () => {
    t = await startTestServer({
      tlsCert: tls.serverCertPath,
      tlsKey: tls.serverKeyPath,
      tlsClientCa: tls.caCertPath,
    });
    const signed = track(
      groupCoordinatorClient(t.target, trusting({ cert: tls.clientCertPath, key: tls.clientKeyPath })),
    );
    expect((await signed.listGroups({})).errorCode).toBe(ErrorCode.NONE);

    const anonymous = track(groupCoordinatorClient(t.target, trusting()));
    expect((await rejection(anonymous.listGroups({}, { deadlineMs: 2_000 }))).code).toBe(status.UNAVAILABLE);
    const stranger = track(
      groupCoordinatorClient(t.target, trusting({ cert: tls.strangerCertPath, key: tls.strangerKeyPath })),
    );
    expect((await rejection(stranger.listGroups({}, { deadlineMs: 2_000 }))).code).toBe(status.UNAVAILABLE);
  });

  it('on close ends a Watch over TLS and closes an idle TLS connection and a silent one mid-handshake, without the grace period', async () => {
    // Longer than the test's timeout: only a drain that ends the streams and closes the connections ends it.
    t = await startTestServer(
      { tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath },
      { shutdownGraceMs: 600_000 },
    );
    const idle = track(groupCoordinatorClient(t.target, trusting()));
    expect((await idle.listGroups({})).errorCode).toBe(ErrorCode.NONE);
    const health = track(healthClient(t.target, trusting()));
    const watch = health.watch('');
    expect(await watch.next()).toBe('SERVING');
    const silent = connect(t.port, '127.0.0.1');
    silent.on('error', () => undefined);
    try {
      await new Promise((resolve) => silent.once('connect', resolve));
      silent.pause();
      await t.server.close();
      expect(watch.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      expect(t.logs.map((line) => line.msg)).not.toContain(
        'calls still open after the grace period; closing their connections',
      );
    } finally {
      silent.destroy();
    }
  });

  it('lets a call in flight over TLS finish after close() has begun', async () => {
    let answer!: (response: { errorCode: number; groups: never[] }) => void;
    const coordinator = new FakeGroupCoordinator({
      listGroups: () => new Promise((resolve) => (answer = resolve)),
    });
    t = await startTestServer(
      { tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath },
      { coordinatorFactory: () => coordinator, shutdownGraceMs: 600_000 },
    );
    const client = track(groupCoordinatorClient(t.target, trusting()));
    const listed = client.listGroups({});
    while (coordinator.calls.length < 1) await new Promise((resolve) => setImmediate(resolve));
    const closing = t.server.close();
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    answer({ errorCode: ErrorCode.NONE, groups: [] });
    expect(await listed).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
    await closing;
  });

  it('combines TLS and a token: both are needed', async () => {
    t = await startTestServer({ tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath, token: TOKEN });
    const client = track(groupCoordinatorClient(t.target, trusting()));
    expect((await rejection(client.listGroups({}))).code).toBe(status.UNAUTHENTICATED);
    expect((await client.listGroups({}, { metadata: bearer(TOKEN) })).errorCode).toBe(ErrorCode.NONE);
  });
});

describe('request limits', () => {
  it('bounds open streaming calls per connection and in total with RESOURCE_EXHAUSTED, and frees a slot when one ends', async () => {
    t = await startTestServer({ token: TOKEN, maxStreamingCallsPerConnection: 2, maxStreamingCalls: 3 });
    // Distinct channel options: grpc-js would otherwise share one connection between the two clients.
    const a = track(healthClient(t.target, { options: { 'grpc.primary_user_agent': 'client-a' } }));
    const b = track(healthClient(t.target, { options: { 'grpc.primary_user_agent': 'client-b' } }));
    const watchOf = (
      client: typeof a,
    ): { first: Promise<unknown>; ended: Promise<ServiceError>; cancel(): void } => {
      const raw = client.raw as unknown as {
        watch(request: { service: string }): ClientReadableStream<unknown>;
      };
      const stream = raw.watch({ service: '' });
      const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
      const first = new Promise((resolve) => stream.once('data', resolve));
      return { first, ended, cancel: () => stream.cancel() };
    };
    const a1 = watchOf(a);
    const a2 = watchOf(a);
    await Promise.all([a1.first, a2.first]);
    const a3 = await watchOf(a).ended;
    expect(a3.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(a3.details).toBe('too many streaming calls open on this connection; close one first');
    await watchOf(b).first;
    const b2 = await watchOf(b).ended;
    expect(b2.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(b2.details).toBe('too many streaming calls open on this server; try again later');
    // Reflection streams count too; unary calls do not, and the connections keep serving them.
    await expect(listServicesByReflection(t.target)).rejects.toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
    });
    expect(await a.check('')).toBe('SERVING');
    expect(await b.check('')).toBe('SERVING');
    a1.cancel();
    expect((await a1.ended).code).toBe(status.CANCELLED);
    // The server hears of the cancel a moment after the client: retry until the slot is free.
    for (;;) {
      const next = watchOf(b);
      const outcome = await Promise.race([next.first.then(() => 'open'), next.ended.then(() => 'refused')]);
      if (outcome === 'open') break;
    }
  });

  it('ends a request larger than maxMessageBytes with RESOURCE_EXHAUSTED and keeps serving the others', async () => {
    t = await startTestServer({ maxMessageBytes: 4_096, manualClock: true });
    const client = track(groupCoordinatorClient(t.target));
    const join = {
      groupId: 'limits',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(8_192) }],
    };
    const tooLarge = await rejection(client.joinGroup(join));
    expect(tooLarge.code).toBe(status.RESOURCE_EXHAUSTED);
    expect((await client.listGroups({})).groups).toEqual([]);
    const small = await client.joinGroup({
      ...join,
      protocols: [{ name: 'range', metadata: Buffer.alloc(16) }],
    });
    expect(small.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  it('refuses protocol metadata beyond memberMetadataMaxBytes with MESSAGE_TOO_LARGE, and groups beyond maxGroups with GROUP_MAX_SIZE_REACHED', async () => {
    t = await startTestServer({ memberMetadataMaxBytes: 100, maxGroups: 1, manualClock: true });
    const client = track(groupCoordinatorClient(t.target));
    const join = (groupId: string, metadataBytes: number) =>
      client.joinGroup({
        groupId,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(metadataBytes) }],
      });
    expect((await join('first', 101)).errorCode).toBe(ErrorCode.MESSAGE_TOO_LARGE);
    expect((await join('first', 100)).errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect((await join('second', 10)).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect((await client.listGroups({})).groups.map((g) => g.groupId)).toEqual(['first']);
  });
});
