import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { runCli } from '../../../src/cli/run-cli';
import { DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN } from '../../../src/config';
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
}

const compose = load(read('docker-compose.yml')) as { services: Record<string, Service> };
const services = compose.services;

/** The Dockerfile's HEALTHCHECK command, as the exec-form array it gives. */
function dockerfileHealthcheck(): string[] {
  const match = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(read('Dockerfile'));
  return match === null ? [] : (JSON.parse(match[1]) as string[]);
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

describe('docker-compose.yml', () => {
  it('builds the image in every service that runs it, so none looks for it in a registry', () => {
    const runsImage = Object.entries(services).filter(([, s]) => s.image === 'cohort:local');
    expect(runsImage.map(([name]) => name).sort()).toEqual([
      'demo-producer',
      'demo-topic',
      'follower-1',
      'follower-2',
      'leader',
      'member-1',
      'member-2',
      'member-3',
    ]);
    for (const [name, service] of runsImage) expect([name, service.build]).toEqual([name, '.']);
  });

  it('gives the nodes the image’s own health check, and the admin port of the defaults', () => {
    const check = dockerfileHealthcheck();
    expect(check).toContain('--readyz');
    for (const name of ['leader', 'follower-1', 'follower-2']) {
      expect([name, services[name].healthcheck?.test]).toEqual([name, ['CMD', ...check]]);
    }
    const adminPort = DEFAULT_ADMIN_LISTEN.split(':')[1];
    expect(services.leader.environment?.COHORT_ADMIN_LISTEN).toBe(`0.0.0.0:${adminPort}`);
    expect(services.leader.ports).toContain(`127.0.0.1:${adminPort}:${adminPort}`);
    expect(read('Dockerfile')).toMatch(
      new RegExp(`^EXPOSE ${DEFAULT_LISTEN.split(':')[1]} ${adminPort}$`, 'm'),
    );
  });

  it('gives the nodes, and only the nodes, one cluster secret distinct from the clients’ token', () => {
    const nodes = ['leader', 'follower-1', 'follower-2'];
    const secret = services.leader.environment?.COHORT_CLUSTER_SECRET;
    expect(secret).toEqual(expect.any(String));
    for (const name of nodes)
      expect([name, services[name].environment?.COHORT_CLUSTER_SECRET]).toEqual([name, secret]);
    expect(secret).not.toBe(services.leader.environment?.COHORT_TOKEN);
    for (const [name, service] of Object.entries(services).filter(([n]) => !nodes.includes(n))) {
      expect([name, service.environment?.COHORT_CLUSTER_SECRET]).toEqual([name, undefined]);
    }
  });

  it('has each member print its group events, and be healthy only while it is in the group itself', () => {
    for (const name of ['member-1', 'member-2', 'member-3']) {
      const member = services[name];
      const [consume] = cliCalls(shellOf(member.command));
      expect(consume.slice(0, 2)).toEqual(['consume', 'demo']);
      expect(consume).toContain('--print-group-events');
      const clientId = consume[consume.indexOf('--client-id') + 1];
      const group = consume[consume.indexOf('--group') + 1];
      expect(clientId).toBe('member-host'); // the container's $HOSTNAME: one per member
      expect(member.healthcheck?.test[0]).toBe('CMD-SHELL');
      const [check] = cliCalls(member.healthcheck?.test[1] ?? '');
      expect(check.slice(0, 3)).toEqual(['groups', 'describe', group]);
      expect(check[check.indexOf('--client-id') + 1]).toBe(clientId);
    }
  });

  it('runs only cohort command lines the CLI accepts', async () => {
    const calls = Object.values(services).flatMap((s) => [
      ...cliCalls(shellOf(s.command)),
      ...(s.healthcheck?.test[0] === 'CMD-SHELL' ? cliCalls(s.healthcheck.test[1]) : []),
    ]);
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
