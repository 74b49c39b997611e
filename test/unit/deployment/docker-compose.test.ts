import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import type { CohortConfig } from '../../../src/config';
import { DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN, loadConfig, parseListenAddress } from '../../../src/config';

const REPO_ROOT = join(__dirname, '..', '..', '..');
const read = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8');

interface Service {
  readonly build?: unknown;
  readonly image?: string;
  readonly command?: string[] | string;
  readonly environment?: Record<string, string>;
  readonly ports?: string[];
  readonly healthcheck?: { readonly test: string[] };
  readonly depends_on?: Record<string, { readonly condition: string }>;
}

const compose = load(read('docker-compose.yml')) as { services: Record<string, Service> };
const services = compose.services;
const NODES = ['node-1', 'node-2', 'node-3'];

/** The Dockerfile's HEALTHCHECK command, as the exec-form array it gives. */
function dockerfileHealthcheck(): string[] {
  const match = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(read('Dockerfile'));
  return match === null ? [] : (JSON.parse(match[1]) as string[]);
}

/** A node's configuration as the server reads it from the service's command and environment. */
function configOf(name: string): CohortConfig {
  const { command, environment } = services[name];
  expect(Array.isArray(command) && command.slice(0, 2)).toEqual(['node', 'dist/src/main.js']);
  const loaded = loadConfig((command as string[]).slice(2), environment ?? {});
  if (!('config' in loaded)) throw new Error(`${name}: ${JSON.stringify(loaded)}`);
  expect([name, loaded.warnings]).toEqual([name, []]);
  return loaded.config;
}

describe('docker-compose.yml', () => {
  it('runs etcd and three cohort nodes, building the image in every service that runs it', () => {
    expect(Object.keys(services).sort()).toEqual(['etcd', ...NODES]);
    for (const name of NODES)
      expect([name, services[name].build, services[name].image]).toEqual([name, '.', 'cohort:local']);
  });

  it('pins etcd to a release a user can pull, and starts the nodes once it is healthy', () => {
    expect(services.etcd.image).toMatch(/^quay\.io\/coreos\/etcd:v3\.5\.\d+$/);
    expect(services.etcd.healthcheck?.test).toEqual(
      expect.arrayContaining(['etcdctl', 'endpoint', 'health']),
    );
    for (const name of NODES)
      expect([name, services[name].depends_on?.etcd]).toEqual([name, { condition: 'service_healthy' }]);
  });

  it('starts every node as a cluster node the server accepts: its own id, an address the others reach, etcd', () => {
    const advertised = services.etcd.command as string[];
    const etcdUrl = advertised.find((arg) => arg.startsWith('--advertise-client-urls='))!.split('=')[1];
    const configs = NODES.map(configOf);
    expect(configs.map((config) => config.nodeId)).toEqual([1, 2, 3]);
    configs.forEach((config, i) => {
      expect(config.etcdEndpoints).toEqual([etcdUrl]);
      // What the others fetch from: the node's service name, at the port it listens on.
      expect(config.advertisedAddress).toBe(`${NODES[i]}:${parseListenAddress(config.listen)!.port}`);
      expect(config.clusterId).toBe(configs[0].clusterId);
    });
  });

  it('gives the nodes the image’s own health check, and publishes them on loopback as docs/cluster.md numbers them', () => {
    const check = dockerfileHealthcheck();
    expect(check).toContain('--readyz');
    const listenPort = Number(DEFAULT_LISTEN.split(':')[1]);
    const adminPort = Number(DEFAULT_ADMIN_LISTEN.split(':')[1]);
    NODES.forEach((name, i) => {
      const service = services[name];
      expect([name, service.healthcheck?.test]).toEqual([name, ['CMD', ...check]]);
      expect(configOf(name).adminListen).toBe(`0.0.0.0:${adminPort}`);
      // Node n on 7060 + 10 n: the walk-through's leader_of finds a node's port from its id.
      const hostPort = 7060 + 10 * (i + 1);
      expect([name, service.ports]).toEqual([
        name,
        [`127.0.0.1:${hostPort}:${listenPort}`, `127.0.0.1:${hostPort + 1}:${adminPort}`],
      ]);
    });
    expect(read('Dockerfile')).toMatch(new RegExp(`^EXPOSE ${listenPort} ${adminPort}$`, 'm'));
    expect(read('docs/cluster.md')).toContain('7060 + 10 × _n_');
  });

  it('gives the nodes, and only the nodes, one cluster secret distinct from the clients’ token', () => {
    const secrets = NODES.map((name) => configOf(name).clusterSecret);
    expect(secrets[0]).not.toBe('');
    expect(new Set(secrets).size).toBe(1);
    expect(secrets[0]).not.toBe(configOf('node-1').token);
    expect(services.etcd.environment?.COHORT_CLUSTER_SECRET).toBeUndefined();
  });
});
