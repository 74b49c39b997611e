import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CohortConfig } from '../../src/config';
import { eventually } from './log-cluster';
import { startTestServer, type TestServer } from '../support/start-test-server';
import { makeTlsFixtures } from '../support/tls-fixtures';
import { TEST_CLUSTER_SECRET } from '../support/cluster-secret';
import { runNode, type NodeRun } from '../support/run-node';

const REPO_ROOT = join(__dirname, '..', '..');

jest.setTimeout(60_000);

/** The Dockerfile's HEALTHCHECK command, as the exec-form array it gives. */
function dockerfileHealthcheck(): string[] {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const match = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile);
  if (match === null) throw new Error('no exec-form HEALTHCHECK ... CMD [...] in the Dockerfile');
  return JSON.parse(match[1]) as string[];
}

/**
 * Runs the probe from its source (src/health-probe.ts through the TypeScript hook) with only `env` and
 * PATH: `args` as the image gives them, `node dist/src/health-probe.js` first.
 */
function probe(args: readonly string[], env: Record<string, string>): Promise<NodeRun> {
  const [node, script, ...rest] = args;
  expect([node, script]).toEqual(['node', 'dist/src/health-probe.js']);
  return runNode(['-r', './scripts/register-typescript.js', 'src/health-probe.ts', ...rest], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

/** The COHORT_* variables a container running `t` would have. */
function containerEnv(t: TestServer, settings: Partial<CohortConfig>): Record<string, string> {
  const env: Record<string, string> = { COHORT_LISTEN: t.target };
  const admin = t.server.adminAddress;
  env.COHORT_ADMIN_LISTEN = admin === undefined ? 'off' : `${admin.host}:${admin.port}`;
  if (settings.tlsCert !== undefined) env.COHORT_TLS_CERT = settings.tlsCert;
  if (settings.tlsKey !== undefined) env.COHORT_TLS_KEY = settings.tlsKey;
  if (settings.tlsClientCa !== undefined) env.COHORT_TLS_CLIENT_CA = settings.tlsClientCa;
  return env;
}

describe('the health probe (the image’s HEALTHCHECK)', () => {
  const tls = makeTlsFixtures();
  const servers: TestServer[] = [];
  afterAll(() => tls.cleanup());
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((t) => t.close()));
  });

  async function serve(settings: Partial<CohortConfig>): Promise<TestServer> {
    const t = await startTestServer(settings);
    servers.push(t);
    return t;
  }

  it('passes under mutual TLS with a CA-signed certificate that names no loopback address', async () => {
    const settings = {
      tlsCert: tls.namedServerCertPath,
      tlsKey: tls.namedServerKeyPath,
      tlsClientCa: tls.caCertPath,
      adminListen: '127.0.0.1:0',
    };
    const t = await serve(settings);
    const env = containerEnv(t, settings);
    const result = await probe(dockerfileHealthcheck(), env);
    expect(result).toEqual({
      code: 0,
      stdout: `${env.COHORT_ADMIN_LISTEN}/readyz: 200 ready\n`,
      stderr: '',
    });
  });

  it('fails, saying why, while the server is not ready', async () => {
    // A cluster node whose etcd does not answer is not ready: it cannot register.
    const settings = {
      etcdEndpoints: ['http://127.0.0.1:1'],
      nodeId: 1,
      clusterSecret: TEST_CLUSTER_SECRET,
      adminListen: '127.0.0.1:0',
    };
    const t = await serve(settings);
    await eventually(
      async () => ((await fetch(`${t.adminUrl}/readyz`)).status === 503 ? true : undefined),
      'the node to be not ready',
    );
    const result = await probe(dockerfileHealthcheck(), containerEnv(t, settings));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/\/readyz: 503 not ready: not (yet )?registered in the cluster/);
  });

  it('asks the gRPC health service when the admin listener is off', async () => {
    const settings = { adminListen: 'off' };
    const t = await serve(settings);
    const result = await probe(dockerfileHealthcheck(), containerEnv(t, settings));
    expect(result).toEqual({ code: 0, stdout: `${t.target}: SERVING\n`, stderr: '' });
  });

  it('checks the gRPC listener’s certificate by a name it is for when it names no loopback address', async () => {
    const selfSigned = { tlsCert: tls.selfSignedNamedCertPath, tlsKey: tls.selfSignedNamedKeyPath };
    const t = await serve(selfSigned);
    const env = containerEnv(t, selfSigned);
    expect(await probe(['node', 'dist/src/health-probe.js'], env)).toEqual({
      code: 0,
      stdout: `${t.target}: SERVING\n`,
      stderr: '',
    });

    // CA-signed, mutual TLS: the CA and a client certificate are given; the name is still the certificate's.
    const mutual = {
      tlsCert: tls.namedServerCertPath,
      tlsKey: tls.namedServerKeyPath,
      tlsClientCa: tls.caCertPath,
    };
    const m = await serve(mutual);
    const client = [
      '--tls-ca',
      tls.caCertPath,
      '--tls-cert',
      tls.clientCertPath,
      '--tls-key',
      tls.clientKeyPath,
    ];
    const withClient = await probe(['node', 'dist/src/health-probe.js', ...client], containerEnv(m, mutual));
    expect(withClient).toEqual({ code: 0, stdout: `${m.target}: SERVING\n`, stderr: '' });
    const withoutClient = await probe(
      ['node', 'dist/src/health-probe.js', '--tls-ca', tls.caCertPath],
      containerEnv(m, mutual),
    );
    expect(withoutClient.code).toBe(1);
    expect(withoutClient.stdout).toContain('UNREACHABLE');
  });
});
