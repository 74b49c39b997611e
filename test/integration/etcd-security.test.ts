import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { EtcdMetadataStore, type EtcdMetadataStoreOptions } from '../../src/cluster/etcd-metadata-store';
import { MetadataStoreError } from '../../src/cluster/metadata-store';
import { ETCD_COHORT_USER, startEtcd, type EtcdProcess } from '../support/etcd';
import { WatchRecorder } from '../support/metadata-store-harness';
import { makeTlsFixtures, type TlsFixtures } from '../support/tls-fixtures';

/**
 * The etcd client against an etcd locked down as docs/operations.md says: TLS with client certificates,
 * authentication with a user allowed one prefix, tokens that expire. What the contract suite does not
 * show: each way of getting the security wrong fails with a message that says what to fix, and an expired
 * token is renewed under reads, renewals and watches, never by sending a write again.
 */

/** The keys cohort's user may use in these tests. */
const PREFIX = '/secure/';
/**
 * With `--auth-token-ttl 1`, etcd drops a simple token unused for a second, checking once a second: after
 * this long idle, the token is gone (each test then checks that the client did authenticate again).
 */
const TOKEN_EXPIRY_MS = 2_500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function failureOf(promise: Promise<unknown>): Promise<MetadataStoreError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(MetadataStoreError);
  return outcome.error as MetadataStoreError;
}

let tls: TlsFixtures;
beforeAll(() => {
  tls = makeTlsFixtures();
});
afterAll(() => tls?.cleanup());

const stores: EtcdMetadataStore[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

/** A client of `etcd`, with its TLS files and cohort's user unless `options` says otherwise. */
function connect(etcd: EtcdProcess, options: Partial<EtcdMetadataStoreOptions> = {}): EtcdMetadataStore {
  const store = new EtcdMetadataStore({
    endpoints: etcd.endpoints,
    ...etcd.clientOptions,
    requestTimeoutMs: 5_000,
    ...options,
  });
  stores.push(store);
  return store;
}

/** A client that counts the tokens it was given. */
function countingAuthentications(
  etcd: EtcdProcess,
  options: Partial<EtcdMetadataStoreOptions> = {},
): { store: EtcdMetadataStore; outcomes: string[] } {
  const outcomes: string[] = [];
  const store = connect(etcd, { ...options, onAuthentication: (outcome) => outcomes.push(outcome) });
  return { store, outcomes };
}

describe('an etcd with TLS, client certificates and authentication', () => {
  let etcd: EtcdProcess;
  beforeAll(async () => {
    etcd = await startEtcd({ tls: { fixtures: tls }, auth: { prefix: PREFIX } });
  }, 300_000);
  afterAll(() => etcd?.stop());

  it('is reached with its CA, a client certificate and the user, which authenticates once', async () => {
    const { store, outcomes } = countingAuthentications(etcd);
    await store.put(`${PREFIX}a`, '1');
    expect((await store.get(`${PREFIX}a`)).kv?.value).toBe('1');
    expect(outcomes).toEqual(['authenticated']);
  });

  it('names the client certificate when etcd refuses a handshake without one', async () => {
    const store = connect(etcd, { tls: { caCert: tls.read(tls.caCertPath) } });
    const failure = await failureOf(store.get(`${PREFIX}a`));
    expect(failure).toMatchObject({ kind: 'unavailable', isOutcomeUnknown: false });
    expect(failure.message).toContain(
      'etcd refused the TLS handshake: it wants a client certificate signed by a CA it trusts; give ' +
        '--etcd-tls-cert and --etcd-tls-key',
    );
  });

  it('names the client certificate when etcd refuses one another CA signed', async () => {
    const store = connect(etcd, {
      tls: {
        caCert: tls.read(tls.caCertPath),
        cert: tls.read(tls.strangerCertPath),
        key: tls.read(tls.strangerKeyPath),
      },
    });
    expect((await failureOf(store.get(`${PREFIX}a`))).message).toContain('give --etcd-tls-cert');
  });

  it("names the CA setting when etcd's certificate cannot be verified", async () => {
    const store = connect(etcd, {
      tls: { cert: tls.read(tls.clientCertPath), key: tls.read(tls.clientKeyPath) },
    });
    const failure = await failureOf(store.get(`${PREFIX}a`));
    expect(failure).toMatchObject({ kind: 'unavailable' });
    expect(failure.message).toContain(
      "etcd's certificate could not be verified: give --etcd-tls-ca the CA that signed it",
    );
  });

  it('accepts a certificate that names any of the endpoints, not only the first one dialled', async () => {
    // One channel dials every endpoint under the first one's name. Nothing listens on 127.0.0.2, so the
    // connection goes to 127.0.0.1, whose certificate names 127.0.0.1 and localhost, not 127.0.0.2.
    const port = new URL(etcd.endpoints[0]).port;
    const store = connect(etcd, { endpoints: [`https://127.0.0.2:${port}`, `https://127.0.0.1:${port}`] });
    await store.put(`${PREFIX}b`, '2');
    expect((await store.get(`${PREFIX}b`)).kv?.value).toBe('2');
  });

  it('refuses a wrong password with a message that names the user and where the password comes from, never the password', async () => {
    const password = 'not-the-password-0123';
    const store = connect(etcd, { credentials: { username: ETCD_COHORT_USER, password } });
    const failure = await failureOf(store.get(`${PREFIX}a`));
    expect(failure).toMatchObject({ kind: 'accessDenied', isOutcomeUnknown: false });
    expect(failure.message).toBe(
      `etcd refused the user name '${ETCD_COHORT_USER}' or its password (etcdserver: authentication ` +
        'failed, invalid user ID or password): check --etcd-username and the password of ' +
        '--etcd-password-file or COHORT_ETCD_PASSWORD',
    );
    expect(failure.message).not.toContain(password);
    // A watch hears of it too, and says the same.
    const watch = new WatchRecorder();
    const handle = store.watch(PREFIX, { prefix: true }, watch);
    await expect(handle.created).rejects.toThrow('or its password');
    expect(watch.cancelled?.error?.message).toBe(failure.message);
  });

  it("says what the user lacks when it may not touch a key outside its role's prefix", async () => {
    const store = connect(etcd);
    const failure = await failureOf(store.put('/elsewhere/x', 'v'));
    expect(failure).toMatchObject({ kind: 'accessDenied', isOutcomeUnknown: false });
    expect(failure.message).toContain('etcdserver: permission denied (the etcd user (--etcd-username;');
    expect(failure.message).toContain(
      "needs a role granting readwrite on the cluster's prefix /<cluster-id>/",
    );
    const watch = new WatchRecorder();
    await expect(store.watch('/elsewhere/', { prefix: true }, watch).created).rejects.toThrow(
      /permission denied.*needs a role granting readwrite/,
    );
  });

  it('says etcd wants a user when the client has none', async () => {
    // With a client certificate and no token, etcd takes the certificate's CN as the user: here no user.
    const store = connect(etcd, { credentials: undefined });
    const failure = await failureOf(store.get(`${PREFIX}a`));
    expect(failure).toMatchObject({ kind: 'accessDenied' });
    expect(failure.message).toContain('without one, etcd takes the CN of --etcd-tls-cert');
  });
});

describe('tokens that expire (--auth-token-ttl 1)', () => {
  let etcd: EtcdProcess;
  beforeAll(async () => {
    etcd = await startEtcd({ tls: { fixtures: tls }, auth: { prefix: PREFIX, tokenTtlSeconds: 1 } });
  }, 300_000);
  afterAll(() => etcd?.stop());

  it('sends a read whose token expired once more, with a new token', async () => {
    const { store, outcomes } = countingAuthentications(etcd);
    await store.put(`${PREFIX}read`, 'r');
    await sleep(TOKEN_EXPIRY_MS);
    expect((await store.get(`${PREFIX}read`)).kv?.value).toBe('r');
    await sleep(TOKEN_EXPIRY_MS);
    expect((await store.range(PREFIX)).kvs.map((kv) => kv.key)).toContain(`${PREFIX}read`);
    await sleep(TOKEN_EXPIRY_MS);
    const read = await store.txn({ compare: [], success: [{ type: 'get', key: `${PREFIX}read` }] });
    expect(read.results).toEqual([{ type: 'get', kvs: [expect.objectContaining({ value: 'r' })] }]);
    expect(outcomes).toEqual(['authenticated', 'authenticated', 'authenticated', 'authenticated']);
  }, 30_000);

  it('never sends a write again: it fails, certainly not applied, and the next call authenticates', async () => {
    const { store, outcomes } = countingAuthentications(etcd);
    const writes: [string, () => Promise<unknown>][] = [
      ['Put', () => store.put(`${PREFIX}w1`, 'v')],
      [
        'Txn',
        () =>
          store.txn({
            compare: [{ key: `${PREFIX}w2`, target: 'createRevision', result: 'equal', operand: 0 }],
            success: [{ type: 'put', key: `${PREFIX}w2`, value: 'v' }],
          }),
      ],
      ['DeleteRange', () => store.delete(`${PREFIX}w0`)],
      ['LeaseGrant', () => store.grantLease(5)],
    ];
    await store.put(`${PREFIX}w0`, 'kept');
    for (const [call, write] of writes) {
      await sleep(TOKEN_EXPIRY_MS);
      const failure = await failureOf(write());
      expect(failure).toMatchObject({ kind: 'accessDenied', isOutcomeUnknown: false });
      expect(failure.message).toBe(`etcd ${call}: etcdserver: invalid auth token`);
      // Not applied, and the read after it carried a new token.
      const { kvs } = await store.range(PREFIX);
      expect(kvs.filter((kv) => /w\d$/.test(kv.key)).map((kv) => [kv.key, kv.version])).toEqual([
        [`${PREFIX}w0`, 1],
      ]);
    }
    expect(outcomes).toEqual(Array(1 + writes.length).fill('authenticated'));
  }, 30_000);

  it('renews a lease and reads its TTL after the token expired', async () => {
    const store = connect(etcd);
    const lease = await store.grantLease(30);
    await sleep(TOKEN_EXPIRY_MS);
    expect((await store.keepAliveOnce(lease.id)).ttlSeconds).toBe(30);
    expect(await store.leaseTimeToLive(lease.id)).toBeGreaterThan(25);
    await sleep(TOKEN_EXPIRY_MS);
    expect((await store.keepAliveOnce(lease.id)).ttlSeconds).toBe(30);
  }, 30_000);

  it('keeps a watch open past its token, and creates a watch with a new token once the old one expired', async () => {
    const { store, outcomes } = countingAuthentications(etcd);
    const writer = connect(etcd);
    const key = `${PREFIX}watched/`;
    const early = new WatchRecorder();
    await store.watch(key, { prefix: true }, early).created;
    await sleep(TOKEN_EXPIRY_MS);
    const late = new WatchRecorder();
    await store.watch(key, { prefix: true }, late).created;
    expect(outcomes).toEqual(['authenticated', 'authenticated']);
    await writer.put(`${key}x`, 'seen');
    for (const watch of [early, late]) {
      await watch.until(() => watch.events.some((event) => event.kv.value === 'seen'));
      expect(watch.cancelled).toBeUndefined();
    }
  }, 30_000);
});

describe('authentication turned on under a running client', () => {
  let etcd: EtcdProcess;
  beforeAll(async () => {
    etcd = await startEtcd();
  }, 300_000);
  afterAll(() => etcd?.stop());

  it('calls without a token while etcd has authentication off, and authenticates once it is on', async () => {
    const credentials = { username: ETCD_COHORT_USER, password: 'cohort-password-0123' };
    const { store, outcomes } = countingAuthentications(etcd, { credentials });
    await store.put(`${PREFIX}before`, '1');
    expect(outcomes).toEqual(['authDisabled']);
    const root = 'root-password-0123';
    for (const command of [
      ['user', 'add', `root:${root}`],
      ['role', 'add', 'root'],
      ['user', 'grant-role', 'root', 'root'],
      ['user', 'add', `${credentials.username}:${credentials.password}`],
      ['role', 'add', 'cohort'],
      ['role', 'grant-permission', 'cohort', '--prefix=true', 'readwrite', PREFIX],
      ['user', 'grant-role', credentials.username, 'cohort'],
      ['auth', 'enable'],
    ]) {
      await etcd.etcdctl(command);
    }
    // Refused without a token ("user name is empty"), then sent again with one.
    expect((await store.get(`${PREFIX}before`)).kv?.value).toBe('1');
    expect(outcomes).toEqual(['authDisabled', 'authenticated']);
    await store.put(`${PREFIX}after`, '2');
    expect(outcomes).toEqual(['authDisabled', 'authenticated']);
  }, 60_000);
});

/**
 * etcd 3.4 and 3.5 renew a lease whatever token its keep-alive stream carries. An etcd that checks it
 * would end the stream with "invalid auth token": a server that does exactly that shows the client sends
 * the renewal again on a new stream, with a new token (and sends a read again, and a write never).
 */
describe('a server that refuses renewals, reads and writes for their token', () => {
  let server: grpc.Server;
  let endpoint: string;
  const calls: string[] = [];
  /** The first token is refused by everything but Authenticate; later ones are accepted. */
  let issued = 0;
  const refuse = (metadata: grpc.Metadata): boolean => metadata.get('token')[0] === 'token-1';
  const refusal = { code: grpc.status.UNAUTHENTICATED, details: 'etcdserver: invalid auth token' };

  beforeAll(async () => {
    const definition = loadSync('etcd/v3/etcd_api_subset.proto', {
      longs: String,
      defaults: true,
      includeDirs: [join(__dirname, '../../proto')],
    });
    const pkg = grpc.loadPackageDefinition(definition).etcdserverpb as grpc.GrpcObject;
    const service = (name: string): grpc.ServiceDefinition =>
      (pkg[name] as grpc.ServiceClientConstructor).service;
    server = new grpc.Server();
    server.addService(service('Auth'), {
      Authenticate: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) =>
        callback(null, { token: `token-${++issued}` }),
    });
    server.addService(service('KV'), {
      Range: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        calls.push('Range');
        if (refuse(call.metadata)) callback(refusal);
        else callback(null, { header: { revision: '7' }, kvs: [] });
      },
      Put: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        calls.push('Put');
        if (refuse(call.metadata)) callback(refusal);
        else callback(null, { header: { revision: '8' } });
      },
    });
    server.addService(service('Lease'), {
      LeaseKeepAlive: (call: grpc.ServerDuplexStream<{ ID: string }, unknown>) => {
        call.on('data', (request: { ID: string }) => {
          calls.push('LeaseKeepAlive');
          if (refuse(call.metadata)) call.emit('error', refusal);
          else call.write({ header: { revision: '8' }, ID: request.ID, TTL: '10' });
        });
        call.on('end', () => call.end());
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error === null ? resolve(bound) : reject(error),
      ),
    );
    endpoint = `http://127.0.0.1:${port}`;
  });
  afterAll(() => server?.forceShutdown());
  beforeEach(() => {
    calls.length = 0;
    issued = 0;
  });

  const fakeClient = (): { store: EtcdMetadataStore; outcomes: string[] } => {
    const outcomes: string[] = [];
    const store = new EtcdMetadataStore({
      endpoints: [endpoint],
      credentials: { username: 'cohort', password: 'pw' },
      onAuthentication: (outcome) => outcomes.push(outcome),
    });
    stores.push(store);
    return { store, outcomes };
  };

  it('sends a renewal refused for its token again on a new stream with a new token', async () => {
    const { store, outcomes } = fakeClient();
    expect(await store.keepAliveOnce('42')).toEqual({ ttlSeconds: 10 });
    expect(calls).toEqual(['LeaseKeepAlive', 'LeaseKeepAlive']);
    expect(outcomes).toEqual(['authenticated', 'authenticated']);
  });

  it('sends a read again, and a write not', async () => {
    const { store } = fakeClient();
    expect(await store.get('/k')).toEqual({ kv: undefined, revision: 7 });
    expect(calls).toEqual(['Range', 'Range']);
    issued = 0;
    calls.length = 0;
    const { store: writer } = fakeClient();
    expect(await failureOf(writer.put('/k', 'v'))).toMatchObject({
      kind: 'accessDenied',
      isOutcomeUnknown: false,
    });
    expect(calls).toEqual(['Put']);
    await writer.put('/k', 'v');
    expect(calls).toEqual(['Put', 'Put']);
  });
});
