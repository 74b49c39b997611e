import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { delimiter, join } from 'node:path';

/** A program or library a test needs from the system, and the Debian package that provides it. */
export interface SystemRequirement {
  /** The Debian package to install when `probe` fails, e.g. `python3-grpcio`. */
  readonly debianPackage: string;
  /** A command that exits 0 once the requirement is met, e.g. `['/usr/bin/python3', '-c', 'import grpc']`. */
  readonly probe: readonly [string, ...string[]];
}

/** What `ensureSystemPackages` does to the machine; its unit test replaces it. */
export interface PackageSystem {
  /** Runs a command; true if it exited 0. */
  succeeds(command: readonly string[]): boolean;
  /** Whether apt-get may install packages: running as root, with apt-get present. */
  canInstall(): boolean;
  /** Runs apt-get with these arguments. */
  aptGet(args: readonly string[]): { readonly ok: boolean; readonly output: string };
}

const POLICY_RC_D = '/usr/sbin/policy-rc.d';

export const THIS_MACHINE: PackageSystem = {
  succeeds: ([command, ...args]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0,
  canInstall: () => process.getuid?.() === 0 && THIS_MACHINE.succeeds(['apt-get', '--version']),
  aptGet: (args) => {
    // Debian's maintainer scripts start a package's service (etcd's on 2379) through invoke-rc.d, which
    // asks policy-rc.d first; 101 means "action forbidden". Tests start their own instances on free
    // ports and must leave no daemon behind. A machine that has a policy (Docker images ship one) keeps it.
    const ownPolicy = args[0] === 'install' && !existsSync(POLICY_RC_D);
    if (ownPolicy)
      writeFileSync(POLICY_RC_D, '#!/bin/sh\n# cohort test run: no services start\nexit 101\n', {
        mode: 0o755,
      });
    try {
      // Two jest workers may both find a package missing: the second waits for dpkg's lock instead of
      // failing, and then finds the package installed.
      const result = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', '-q', ...args], {
        encoding: 'utf8',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
      return {
        ok: result.status === 0,
        output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ?? ''}`,
      };
    } finally {
      if (ownPolicy) rmSync(POLICY_RC_D, { force: true });
    }
  },
};

/**
 * Makes sure the system has what a test needs, installing the missing Debian packages when it can: as root
 * with apt-get (running `apt-get update` first if the install fails, as on a fresh machine). Otherwise it
 * throws, saying what to install: a test that needs a package fails without it, it never skips.
 * Call it from beforeAll, with a timeout that leaves room for apt-get (minutes on a fresh machine).
 */
export function ensureSystemPackages(
  purpose: string,
  requirements: readonly SystemRequirement[],
  system: PackageSystem = THIS_MACHINE,
): void {
  const missing = (): string[] => [
    ...new Set(requirements.filter((r) => !system.succeeds(r.probe)).map((r) => r.debianPackage)),
  ];
  const needed = missing();
  if (needed.length === 0) return;
  const command = `apt-get install -y --no-install-recommends ${needed.join(' ')}`;
  if (!system.canInstall())
    throw new Error(`${purpose} needs the Debian packages ${needed.join(', ')}: run \`sudo ${command}\``);
  const install = ['install', '-y', '--no-install-recommends', ...needed];
  let attempt = system.aptGet(install);
  if (!attempt.ok) {
    const update = system.aptGet(['update']);
    attempt = update.ok ? system.aptGet(install) : update;
  }
  const stillMissing = missing();
  if (stillMissing.length > 0)
    throw new Error(
      `${purpose} needs the Debian packages ${stillMissing.join(', ')}, and \`${command}\` did not provide them:\n` +
        attempt.output.slice(-2000),
    );
}

/** The absolute path of `command` on PATH, or undefined. */
export function findOnPath(command: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** A program a test runs (etcd), and the Debian package that provides it. */
export interface CommandPackage {
  /** The Debian package that provides the command (`etcd-server` provides `/usr/bin/etcd`). */
  readonly debianPackage: string;
  /**
   * A TCP port on 127.0.0.1 the package's own service would listen on (etcd: 2379). If it listens after
   * the install and did not before, the service is stopped: policy-rc.d should have kept it from starting.
   */
  readonly servicePort?: number;
  /** The init script / unit name, for stopping a service the install started anyway. */
  readonly serviceName?: string;
}

/**
 * Resolves with the path of `command`, installing its Debian package first through `ensureSystemPackages`
 * when it is missing (as root with apt-get); rejects saying what to install otherwise. `path` and `system`
 * are for the helper's own tests.
 */
export async function ensureCommand(
  command: string,
  options: CommandPackage,
  path = process.env.PATH ?? '',
  system: PackageSystem = THIS_MACHINE,
): Promise<string> {
  const found = findOnPath(command, path);
  if (found !== undefined) return found;
  const wasListening =
    options.servicePort !== undefined && (await isListening('127.0.0.1', options.servicePort));
  ensureSystemPackages(
    `'${command}' is not on PATH; running it`,
    [{ debianPackage: options.debianPackage, probe: ['sh', '-c', `command -v ${command}`] }],
    system,
  );
  if (
    options.servicePort !== undefined &&
    !wasListening &&
    (await isListening('127.0.0.1', options.servicePort))
  ) {
    const name = options.serviceName ?? options.debianPackage;
    system.succeeds(['service', name, 'stop']);
    if (await isListening('127.0.0.1', options.servicePort))
      throw new Error(
        `installing ${options.debianPackage} started a service on 127.0.0.1:${options.servicePort} that ` +
          `could not be stopped; stop it (\`service ${name} stop\`) and rerun`,
      );
  }
  const installed = findOnPath(command, path);
  if (installed === undefined)
    throw new Error(`installed ${options.debianPackage}, but '${command}' is still not on PATH (${path})`);
  return installed;
}

/** Whether something accepts TCP connections on host:port (a quick probe, 500 ms at most). */
export function isListening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (answer: boolean): void => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
