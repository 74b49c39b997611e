import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { delimiter, join } from 'node:path';

/**
 * Tests that need a system program (etcd) get it from here. When the command is not on PATH and the
 * test run is root on a machine with apt-get, the Debian package is installed, the way the README's
 * `npm test` is meant to work on a fresh machine; otherwise the error names what to install. A test
 * that needs the program never skips: a missing program is a failure with instructions.
 */
export interface SystemPackage {
  /** The Debian package that provides the command (`etcd-server` provides `/usr/bin/etcd`). */
  readonly debianPackage: string;
  /**
   * A TCP port on 127.0.0.1 the package's own service would listen on if the install started it
   * (etcd: 2379). If it listens after the install and did not before, the service is stopped: tests
   * start their own instances on free ports and must not leave a system daemon behind.
   */
  readonly servicePort?: number;
  /** The init script / unit name, for stopping a service the install started anyway. */
  readonly serviceName?: string;
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

/** What `ensureCommand` needs to know of the machine; tests of the helper itself pass their own. */
export interface InstallHost {
  readonly path: string;
  readonly isRoot: boolean;
}

function processHost(): InstallHost {
  return {
    path: process.env.PATH ?? '',
    isRoot: typeof process.getuid === 'function' && process.getuid() === 0,
  };
}

/**
 * Resolves with the path of `command`, installing `options.debianPackage` first when it is missing and
 * that is possible (root, apt-get present). Rejects with an actionable message otherwise.
 */
export async function ensureCommand(
  command: string,
  options: SystemPackage,
  host: InstallHost = processHost(),
): Promise<string> {
  const found = findOnPath(command, host.path);
  if (found !== undefined) return found;
  const aptGet = findOnPath('apt-get', host.path);
  const isRoot = host.isRoot;
  if (aptGet === undefined || !isRoot) {
    throw new Error(
      `'${command}' is not on PATH. Install it before running the tests: on Debian or Ubuntu, ` +
        `\`sudo apt-get install -y --no-install-recommends ${options.debianPackage}\`` +
        (aptGet === undefined ? ' (this machine has no apt-get: install the equivalent package)' : '') +
        `. The test run installs it itself only when it runs as root with apt-get.`,
    );
  }
  await installDebianPackage(aptGet, options);
  const installed = findOnPath(command, host.path);
  if (installed === undefined) {
    throw new Error(
      `installed ${options.debianPackage}, but '${command}' is still not on PATH (${process.env.PATH})`,
    );
  }
  return installed;
}

const POLICY_RC_D = '/usr/sbin/policy-rc.d';

async function installDebianPackage(aptGet: string, options: SystemPackage): Promise<void> {
  const wasListening =
    options.servicePort === undefined ? false : await isListening('127.0.0.1', options.servicePort);
  // Debian's maintainer scripts start a package's service through invoke-rc.d / deb-systemd-invoke,
  // which ask policy-rc.d first; exit status 101 means "action forbidden". A machine that already has
  // a policy (Docker images ship one) keeps its own.
  const ownPolicy = !existsSync(POLICY_RC_D);
  if (ownPolicy)
    writeFileSync(POLICY_RC_D, '#!/bin/sh\n# cohort test run: no services start\nexit 101\n', {
      mode: 0o755,
    });
  try {
    const install = ['install', '-y', '--no-install-recommends', options.debianPackage];
    const first = await runApt(aptGet, install);
    if (first.code !== 0) {
      // A fresh machine (or an image with its lists removed) has no package lists to install from.
      const update = await runApt(aptGet, ['update']);
      if (update.code !== 0) throw aptFailure('update', update.output, options);
      const second = await runApt(aptGet, install);
      if (second.code !== 0) throw aptFailure(install.join(' '), second.output, options);
    }
  } finally {
    if (ownPolicy) rmSync(POLICY_RC_D, { force: true });
  }
  if (
    options.servicePort !== undefined &&
    !wasListening &&
    (await isListening('127.0.0.1', options.servicePort))
  ) {
    await stopService(options.serviceName ?? options.debianPackage);
    if (await isListening('127.0.0.1', options.servicePort)) {
      throw new Error(
        `installing ${options.debianPackage} started a service on 127.0.0.1:${options.servicePort} that could ` +
          `not be stopped; stop it (\`service ${options.serviceName ?? options.debianPackage} stop\`) and rerun`,
      );
    }
  }
}

function aptFailure(what: string, output: string, options: SystemPackage): Error {
  return new Error(
    `apt-get ${what} failed while installing ${options.debianPackage} for the tests; install it by hand ` +
      `(\`apt-get install -y --no-install-recommends ${options.debianPackage}\`). apt-get said:\n${output.slice(-4000)}`,
  );
}

function runApt(aptGet: string, args: readonly string[]): Promise<{ code: number | null; output: string }> {
  // Two jest workers may both find the command missing; the second waits for dpkg's lock instead of
  // failing, and then finds the package installed.
  const argv = ['-o', 'DPkg::Lock::Timeout=300', '-q', ...args];
  return run(aptGet, argv, { ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
}

function run(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', (error) => resolve({ code: null, output: `${output}${error.message}` }));
    child.once('close', (code) => resolve({ code, output }));
  });
}

async function stopService(name: string): Promise<void> {
  for (const [file, args] of [
    ['systemctl', ['stop', name]],
    ['service', [name, 'stop']],
  ] as const) {
    const path = findOnPath(file, `${process.env.PATH ?? ''}${delimiter}/usr/sbin${delimiter}/sbin`);
    if (path !== undefined) await run(path, args);
  }
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
