import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Metadata } from '@grpc/grpc-js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfig, InvalidConfigError } from '../../../src/config';
import {
  NO_CLUSTER_SECRET,
  NODE_AUTH_METADATA_KEY,
  NODE_ID_METADATA_KEY,
  nodeAuthFor,
} from '../../../src/server/node-credentials';
import { loadServerSecurity } from '../../../src/server/server-security';
import type { TlsFixtures } from '../../support/tls-fixtures';
import { makeTlsFixtures } from '../../support/tls-fixtures';

const TOKEN = 'token-from-a-file-0123456789';

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected an InvalidConfigError');
}

describe('loadServerSecurity', () => {
  let tls: TlsFixtures;
  let dir: string;

  beforeAll(() => {
    tls = makeTlsFixtures();
    dir = mkdtempSync(join(tmpdir(), 'cohort-security-'));
  });
  afterAll(() => {
    tls.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, contents: string): string => {
    const path = join(dir, name);
    writeFileSync(path, contents);
    return path;
  };

  it('is plaintext without a token by default', () => {
    const security = loadServerSecurity(createConfig());
    expect(security).toMatchObject({ isTls: false, isMutualTls: false, tokenCheck: undefined });
  });

  it('serves TLS, and mutual TLS with a client CA', () => {
    const server = { tlsCert: tls.serverCertPath, tlsKey: tls.serverKeyPath };
    expect(loadServerSecurity(createConfig(server))).toMatchObject({ isTls: true, isMutualTls: false });
    expect(loadServerSecurity(createConfig({ ...server, tlsClientCa: tls.caCertPath }))).toMatchObject({
      isTls: true,
      isMutualTls: true,
    });
  });

  it('reads a token file without its trailing newline', () => {
    const security = loadServerSecurity(createConfig({ tokenFile: file('token', `${TOKEN}\r\n`) }));
    expect(security.tokenCheck).toBeDefined();
  });

  it('lists every problem with the files at once, and never their contents', () => {
    const shortToken = file('short', 'hunter2\n');
    const notPem = file('not.pem', 'certainly not a certificate');
    const problems = problemsOf(() =>
      loadServerSecurity(
        createConfig({
          tokenFile: shortToken,
          tlsCert: notPem,
          tlsKey: tls.serverKeyPath,
          tlsClientCa: join(dir, 'missing.pem'),
        }),
      ),
    );
    expect(problems).toEqual([
      `--token-file (${shortToken}) must hold at least 16 characters, got 7`,
      `--tls-client-ca (${join(dir, 'missing.pem')}) cannot be read (ENOENT)`,
      expect.stringContaining(`--tls-cert (${notPem}), --tls-key (${tls.serverKeyPath}) are not usable PEM`),
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain('certainly not');
  });

  it('refuses a key that does not belong to its certificate', () => {
    const problems = problemsOf(() =>
      loadServerSecurity(createConfig({ tlsCert: tls.serverCertPath, tlsKey: tls.clientKeyPath })),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('are not usable PEM');
  });

  it('refuses an empty token file and one with spaces', () => {
    expect(problemsOf(() => loadServerSecurity(createConfig({ tokenFile: file('empty', '\n') })))).toEqual([
      `--token-file (${join(dir, 'empty')}) is empty`,
    ]);
    expect(
      problemsOf(() =>
        loadServerSecurity(createConfig({ tokenFile: file('spaced', 'has some spaces in it') })),
      ),
    ).toEqual([
      `--token-file (${join(dir, 'spaced')}) must hold printable ASCII without spaces: it travels in an HTTP header`,
    ]);
  });

  describe('the cluster secret', () => {
    const SECRET = 'q7Hk2VtN9wXc4RzL0pB6mYs3JdF8aGe1TuQ5iKoW2nE';
    const asNode = (nodeId: number, secret: string): Metadata => {
      const metadata = new Metadata();
      metadata.set(NODE_ID_METADATA_KEY, String(nodeId));
      metadata.set(NODE_AUTH_METADATA_KEY, nodeAuthFor(secret, nodeId));
      return metadata;
    };

    it('is absent by default: node credentials are then refused, and none are sent', () => {
      const security = loadServerSecurity(createConfig());
      expect(security.nodeAuthenticator).toBe(NO_CLUSTER_SECRET);
      expect(security.nodeCredentials).toBeUndefined();
    });

    it('from COHORT_CLUSTER_SECRET checks node credentials and gives this node its own', () => {
      const security = loadServerSecurity(createConfig({ clusterSecret: SECRET, nodeId: 3 }));
      expect(security.nodeAuthenticator.authenticate(asNode(1, SECRET))).toBe(1);
      expect(typeof security.nodeAuthenticator.authenticate(asNode(1, `${SECRET}x`))).toBe('string');
      expect(security.nodeCredentials).toEqual({ nodeId: 3, auth: nodeAuthFor(SECRET, 3) });
      expect(security).toMatchObject({ isClusterSecretWeak: false, isClusterSecretFileShared: false });
    });

    it('is read from its file without the trailing newline', () => {
      const path = file('cluster-secret', `${SECRET}\n`);
      chmodSync(path, 0o600);
      const security = loadServerSecurity(createConfig({ clusterSecretFile: path }));
      expect(security.nodeAuthenticator.authenticate(asNode(2, SECRET))).toBe(2);
      expect(security.isClusterSecretFileShared).toBe(false);
    });

    it('reports a file its group or others can read, and a secret that looks easy to guess', () => {
      const shared = file('shared-secret', SECRET);
      chmodSync(shared, 0o644);
      expect(loadServerSecurity(createConfig({ clusterSecretFile: shared })).isClusterSecretFileShared).toBe(
        process.platform !== 'win32',
      );
      expect(
        loadServerSecurity(createConfig({ clusterSecret: 'abcdefghijklmnopqrstuvwxyz' })).isClusterSecretWeak,
      ).toBe(true);
    });

    it('refuses a secret equal to the bearer token, and a short one from a file, never showing either', () => {
      const equal = problemsOf(() =>
        loadServerSecurity(createConfig({ token: SECRET, clusterSecret: SECRET })),
      );
      expect(equal).toEqual([
        'the cluster secret (COHORT_CLUSTER_SECRET) must differ from the bearer token (COHORT_TOKEN): ' +
          'every client holds the token, and only nodes may hold the secret',
      ]);
      const tokenFile = file('same-token', `${SECRET}\n`);
      const secretFile = file('same-secret', SECRET);
      expect(
        problemsOf(() => loadServerSecurity(createConfig({ tokenFile, clusterSecretFile: secretFile })))[0],
      ).toContain(
        'the cluster secret (--cluster-secret-file) must differ from the bearer token (--token-file)',
      );
      const short = file('short-secret', 'hunter2\n');
      const problems = problemsOf(() => loadServerSecurity(createConfig({ clusterSecretFile: short })));
      expect(problems).toEqual([`--cluster-secret-file (${short}) must hold at least 16 characters, got 7`]);
      expect([...equal, ...problems].join('\n')).not.toContain(SECRET);
    });
  });
  describe('the etcd client', () => {
    const PASSWORD = 'Zq4 etcd password with spaces';
    const cluster = (overrides: Parameters<typeof createConfig>[0]): ReturnType<typeof createConfig> =>
      createConfig({
        etcdEndpoints: ['https://127.0.0.1:2379'],
        nodeId: 1,
        clusterSecret: 'q7Hk2VtN9wXc4RzL0pB6mYs3JdF8aGe1TuQ5iKoW2nE',
        etcdTlsCa: tls.caCertPath,
        ...overrides,
      });

    it('has no TLS and no user without them', () => {
      expect(loadServerSecurity(createConfig()).etcd).toEqual({
        tls: undefined,
        credentials: undefined,
        isPasswordWeak: false,
        isPasswordFileShared: false,
        isPasswordInClear: false,
      });
    });

    it('reads the CA, the client certificate and key, and the password without its trailing newline', () => {
      const passwordFile = file('etcd-password', `${PASSWORD}\n`);
      chmodSync(passwordFile, 0o600);
      const { etcd } = loadServerSecurity(
        cluster({
          etcdTlsCert: tls.clientCertPath,
          etcdTlsKey: tls.clientKeyPath,
          etcdUsername: 'cohort',
          etcdPasswordFile: passwordFile,
        }),
      );
      expect(etcd).toEqual({
        tls: {
          caCert: tls.read(tls.caCertPath),
          cert: tls.read(tls.clientCertPath),
          key: tls.read(tls.clientKeyPath),
        },
        credentials: { username: 'cohort', password: PASSWORD },
        isPasswordWeak: false,
        isPasswordFileShared: false,
        isPasswordInClear: false,
      });
    });

    it("takes the password from COHORT_ETCD_PASSWORD, and trusts Node's CAs without a CA file", () => {
      const { etcd } = loadServerSecurity(
        cluster({
          etcdEndpoints: ['https://etcd.example.com:2379'],
          etcdTlsCa: '',
          etcdUsername: 'cohort',
          etcdPassword: PASSWORD,
        }),
      );
      expect(etcd.tls).toEqual({});
      expect(etcd.credentials).toEqual({ username: 'cohort', password: PASSWORD });
    });

    it('lists every problem with its files at once, never the password', () => {
      const notPem = file('etcd-ca-not-pem', 'certainly not a certificate');
      const empty = file('etcd-empty-password', '\n');
      const problems = problemsOf(() =>
        loadServerSecurity(
          cluster({
            etcdTlsCa: notPem,
            etcdTlsCert: tls.clientCertPath,
            etcdTlsKey: tls.serverKeyPath,
            etcdUsername: 'cohort',
            etcdPasswordFile: empty,
          }),
        ),
      );
      expect(problems).toEqual([
        `--etcd-tls-ca (${notPem}) holds no PEM certificate`,
        expect.stringContaining(
          `--etcd-tls-cert (${tls.clientCertPath}) and --etcd-tls-key (${tls.serverKeyPath}) are not usable PEM`,
        ),
        `--etcd-password-file (${empty}) is empty`,
      ]);
      const missing = join(dir, 'missing-etcd-password');
      expect(
        problemsOf(() => loadServerSecurity(cluster({ etcdUsername: 'cohort', etcdPasswordFile: missing }))),
      ).toEqual([`--etcd-password-file (${missing}) cannot be read (ENOENT)`]);
    });

    it('reports a password in clear text off loopback, one that looks easy to guess, and a shared file', () => {
      const plain = (endpoint: string): boolean =>
        loadServerSecurity(
          cluster({
            etcdEndpoints: [endpoint],
            etcdTlsCa: endpoint.startsWith('https') ? tls.caCertPath : '',
            etcdUsername: 'cohort',
            etcdPassword: PASSWORD,
          }),
        ).etcd.isPasswordInClear;
      expect(plain('http://10.0.0.1:2379')).toBe(true);
      expect(plain('http://127.0.0.1:2379')).toBe(false);
      expect(plain('http://localhost:2379')).toBe(false);
      expect(plain('https://10.0.0.1:2379')).toBe(false);
      expect(
        loadServerSecurity(cluster({ etcdUsername: 'cohort', etcdPassword: 'password' })).etcd.isPasswordWeak,
      ).toBe(true);
      const shared = file('etcd-shared-password', PASSWORD);
      chmodSync(shared, 0o644);
      expect(
        loadServerSecurity(cluster({ etcdUsername: 'cohort', etcdPasswordFile: shared })).etcd
          .isPasswordFileShared,
      ).toBe(process.platform !== 'win32');
    });
  });
});
