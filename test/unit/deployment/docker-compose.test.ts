import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { runCli } from '../../../src/cli/run-cli';
import type { CohortConfig } from '../../../src/config';
import { DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN, loadConfig, parseListenAddress } from '../../../src/config';
import { captureContext } from '../cli/cli-harness';

const REPO_ROOT = join(__dirname, '..', '..', '..');
const read = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8');

interface Service {
  readonly build?: unknown;
  readonly image?: string;
  readonly entrypoint?: string[];
  readonly command?: string[] | string;
  readonly environment?: Record<string, string>;
  readonly ports?: string[];
  readonly healthcheck?: { readonly test: string[] };
  readonly depends_on?: Record<string, { readonly condition: string }>;
  readonly init?: boolean;
}

const compose = load(read('docker-compose.yml')) as { services: Record<string, Service> };
const services = compose.services;
const NODES = ['node-1', 'node-2', 'node-3'];
const MEMBERS = ['member-1', 'member-2', 'member-3'];
/** The services that run the CLI against the cluster. */
const CLIENTS = ['demo-topic', ...MEMBERS, 'demo-producer'];

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

/**
 * The `cohort` command lines in a shell text (compose's `$$` is the shell's `$`; `$HOSTNAME` becomes a
 * sample host name): each `node dist/src/cli/main.js ...` as its arguments, without redirections.
 */
function cliCalls(shell: string): string[][] {
  const text = shell.replace(/\$\$/g, '$').replace(/"\$HOSTNAME"/g, 'member-host');
  const cli = 'dist/src/cli/main.js';
  return text
    .split(/\|\|?/)
    .filter((part) => part.includes(cli))
    .map((part) => {
      const words = part.trim().split(/\s+/);
      const args = words.slice(words.indexOf(cli) + 1);
      return (args.includes('>') ? args.slice(0, args.indexOf('>')) : args).map((w) =>
        w.replace(/^'(.*)'$/, '$1'),
      );
    });
}

const shellOf = (value: string[] | string | undefined): string =>
  Array.isArray(value) ? value.join(' ') : (value ?? '');

/** Every CLI call of a service: its command's, and its health check's. */
function cliCallsOf(service: Service): string[][] {
  return [
    ...cliCalls(shellOf(service.command)),
    ...(service.healthcheck?.test[0] === 'CMD-SHELL' ? cliCalls(service.healthcheck.test[1]) : []),
  ];
}

describe('docker-compose.yml', () => {
  it('runs etcd, three cohort nodes and the demo’s clients, building the image in every service that runs it', () => {
    expect(Object.keys(services).sort()).toEqual(['etcd', ...CLIENTS, ...NODES].sort());
    for (const name of [...NODES, ...CLIENTS])
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
      // Node n on 7060 + 10 n, as docs/cluster.md's table numbers the nodes of its walk-through.
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

  it('starts every client from a bootstrap list naming every node, at the address it advertises', () => {
    const advertised = NODES.map((name) => configOf(name).advertisedAddress).sort();
    for (const name of CLIENTS) {
      const service = services[name];
      const calls = cliCallsOf(service);
      expect([name, calls.length > 0]).toEqual([name, true]);
      for (const args of calls) {
        // --address wins over COHORT_ADDRESS, as in the CLI.
        const given = args.includes('--address') ? args[args.indexOf('--address') + 1] : undefined;
        const address = given ?? service.environment?.COHORT_ADDRESS ?? '';
        const bootstrap = address.split(',').map((entry) => entry.trim());
        expect([name, args.join(' '), bootstrap.sort()]).toEqual([name, args.join(' '), advertised]);
      }
      // The clients send the nodes' bearer token, and never hold the nodes' secret.
      expect([name, service.environment?.COHORT_TOKEN]).toEqual([name, configOf('node-1').token]);
      expect([name, service.environment?.COHORT_CLUSTER_SECRET]).toEqual([name, undefined]);
    }
  });

  it('creates the demo topic on all three nodes once every node is healthy, and starts the clients after it', () => {
    const [create, describe] = cliCallsOf(services['demo-topic']);
    expect(create.slice(0, 3)).toEqual(['topics', 'create', 'demo']);
    expect(create[create.indexOf('--replication-factor') + 1]).toBe(String(NODES.length));
    expect(describe.slice(0, 3)).toEqual(['topics', 'describe', 'demo']);
    expect(services['demo-topic'].depends_on).toEqual(
      Object.fromEntries(NODES.map((name) => [name, { condition: 'service_healthy' }])),
    );
    for (const name of [...MEMBERS, 'demo-producer']) {
      expect([name, services[name].depends_on]).toEqual([
        name,
        { 'demo-topic': { condition: 'service_completed_successfully' } },
      ]);
    }
  });

  it('has each member print its group events, and be healthy only while it is in the group itself', () => {
    for (const name of MEMBERS) {
      const member = services[name];
      const [consume] = cliCalls(shellOf(member.command));
      expect(consume.slice(0, 2)).toEqual(['consume', 'demo']);
      expect(consume).toContain('--print-group-events');
      // The producer starts with the members: what it writes before the first assignment is consumed too.
      expect(consume).toContain('--from-beginning');
      const clientId = consume[consume.indexOf('--client-id') + 1];
      const group = consume[consume.indexOf('--group') + 1];
      expect(clientId).toBe('member-host'); // the container's $HOSTNAME: one per member
      expect(member.healthcheck?.test[0]).toBe('CMD-SHELL');
      const [check] = cliCalls(member.healthcheck?.test[1] ?? '');
      expect(check.slice(0, 3)).toEqual(['groups', 'describe', group]);
      expect(check[check.indexOf('--client-id') + 1]).toBe(clientId);
    }
    const [produce] = cliCalls(shellOf(services['demo-producer'].command));
    expect(produce.slice(0, 2)).toEqual(['produce', 'demo']);
    // sh as PID 1 ignores SIGTERM: the init process passes docker stop's on to the pipeline.
    expect(services['demo-producer'].init).toBe(true);
  });

  it('runs only cohort command lines the CLI accepts', async () => {
    const calls = Object.values(services).flatMap(cliCallsOf);
    // Three consumers and their health checks, the topic's create-or-describe, the producer.
    expect(calls).toHaveLength(9);
    for (const args of calls) {
      // With --help a command parses every flag, then prints its help instead of running.
      const { context, err } = captureContext();
      const status = await runCli([...args, '--help'], context);
      expect([args.join(' '), status, err()]).toEqual([args.join(' '), 0, '']);
    }
  });
});
