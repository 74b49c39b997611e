import { spawnSync } from 'node:child_process';

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

export const THIS_MACHINE: PackageSystem = {
  succeeds: ([command, ...args]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0,
  canInstall: () => process.getuid?.() === 0 && THIS_MACHINE.succeeds(['apt-get', '--version']),
  aptGet: (args) => {
    const result = spawnSync('apt-get', args, {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return {
      ok: result.status === 0,
      output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ?? ''}`,
    };
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
