import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { get as getTls } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EtcdClientTls, EtcdCredentials } from '../../src/cluster/etcd-metadata-store';
import { stopProcess } from './stopped-process';
import { ensureCommand } from './system-packages';
import type { TlsFixtures } from './tls-fixtures';

/**
 * A real etcd for tests: one member on 127.0.0.1, client and peer ports picked free, a fresh data
 * directory, removed by `stop()`. etcd is a real component of a cohort cluster, so the tests that need it
 * start this one; if the binary is missing they install Debian's `etcd-server` (as root with apt) or fail
 * saying what to install. They never skip.
 *
 * Faults are injected into the real process: `kill()` (SIGKILL, data kept) then `restart()` on the same
 * ports and data; `pause()` / `resume()` (SIGSTOP / SIGCONT) freeze it, which is how a test makes etcd
 * stop answering while its clients keep running.
 *
 * Locked down (`tls`, `auth`), as docs/operations.md, "Locking etcd down", says to run it: TLS only on the
 * client URL, with the test's certificates (test/support/tls-fixtures.ts) and, by default,
 * `--client-cert-auth`; authentication enabled through etcdctl once it runs, with a root user and a
 * `cohort` user whose role may read and write one key prefix only. `clientOptions` is what cohort's etcd
 * client needs to reach it.
 */
export interface EtcdProcess {
  /** Client URLs, e.g. ['http://127.0.0.1:40123'], or https:// with `tls`. */
  readonly endpoints: readonly string[];
  /** `127.0.0.1:port` of the client URL, for a gRPC channel. */
  readonly clientAddress: string;
  readonly dataDir: string;
  /**
   * The options an EtcdMetadataStore needs besides the endpoints: the CA and the client certificate with
   * `tls`, the cohort user with `auth`. Empty for a plain etcd.
   */
  readonly clientOptions: { readonly tls?: EtcdClientTls; readonly credentials?: EtcdCredentials };
  /** With `tls`: the files the client options were read from, for a cohort process's flags. */
  readonly tlsFiles: { readonly ca: string; readonly cert: string; readonly key: string } | undefined;
  /** Runs etcdctl against this etcd (as root once `auth` is on); resolves with its output, rejects with it. */
  etcdctl(args: readonly string[]): Promise<string>;
  /** Everything etcd wrote to stderr (its log). */
  stderr(): string;
  /** SIGTERM, wait for the exit, remove the data directory. Safe to call twice. */
  stop(): Promise<void>;
  /** SIGKILL and wait for the exit; the data directory stays for `restart()`. */
  kill(): Promise<void>;
  /** Starts etcd again on the same ports and data directory (after `kill()`), and waits until it answers. */
  restart(): Promise<void>;
  /** etcd loses its data: SIGKILL, the data directory emptied, started again on the same ports, empty. */
  wipe(): Promise<void>;
  /** SIGSTOP, resolved once every thread has stopped: the process answers nothing; its sockets stay open. */
  pause(): Promise<void>;
  /** SIGCONT. */
  resume(): void;
}

export interface StartEtcdOptions {
  /** How long to wait for etcd to answer /health; 20 s by default (etcd starts in well under 1 s). */
  readonly startTimeoutMs?: number;
  /** Serve the client URL over TLS only, with these certificates. */
  readonly tls?: EtcdTlsOptions;
  /** Enable authentication once etcd runs. */
  readonly auth?: EtcdAuthOptions;
}

export interface EtcdTlsOptions {
  /** etcd serves `serverCertPath` and trusts `caCertPath`; clients present `clientCertPath`. */
  readonly fixtures: TlsFixtures;
  /** etcd's `--client-cert-auth`: the handshake needs a client certificate the CA signed. Default true. */
  readonly isClientCertRequired?: boolean;
}

export interface EtcdAuthOptions {
  /** The keys the `cohort` user may read and write: its role grants readwrite on this prefix, and no more. */
  readonly prefix: string;
  /** etcd's `--auth-token-ttl`: seconds a simple token lives unused (etcd's default is 300). */
  readonly tokenTtlSeconds?: number;
}

/** The user a locked-down etcd gives cohort. */
export const ETCD_COHORT_USER = 'cohort';

/** The etcdctl binary, once found or installed in this worker. */
let etcdctlBinary: Promise<string> | undefined;

function findEtcdctl(): Promise<string> {
  etcdctlBinary ??= ensureCommand('etcdctl', { debianPackage: 'etcd-client' });
  etcdctlBinary.catch(() => (etcdctlBinary = undefined));
  return etcdctlBinary;
}

/** The binary, once found or installed in this worker. */
let etcdBinary: Promise<string> | undefined;

/** The path of the etcd binary, installed first if it is missing (see startEtcd). */
export function findEtcd(): Promise<string> {
  etcdBinary ??= ensureCommand('etcd', {
    debianPackage: 'etcd-server',
    servicePort: 2379,
    serviceName: 'etcd',
  });
  // A failed install is reported to every caller; the next test file retries rather than caching it.
  etcdBinary.catch(() => (etcdBinary = undefined));
  return etcdBinary;
}

/** Processes still running when the worker exits are killed, so a crashed test leaves no etcd behind. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts etcd. Call it from `beforeAll` with a generous hook timeout (the first call on a fresh machine
 * may install the package): `beforeAll(async () => { etcd = await startEtcd(); }, 300_000)`.
 */
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdProcess> {
  const binary = await findEtcd();
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  // Ports are found free and then handed to etcd, so another process may take one in between; a start
  // that fails is retried on new ports.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const [clientPort, peerPort] = await freePorts(2);
    const dataDir = mkdtempSync(join(tmpdir(), 'cohort-etcd-'));
    try {
      return await launch(binary, clientPort, peerPort, dataDir, startTimeoutMs, options);
    } catch (error) {
      rmSync(dataDir, { recursive: true, force: true });
      lastError = error;
    }
  }
  throw lastError;
}

async function launch(
  binary: string,
  clientPort: number,
  peerPort: number,
  dataDir: string,
  startTimeoutMs: number,
  options: StartEtcdOptions,
): Promise<EtcdProcess> {
  const { tls, auth } = options;
  const fixtures = tls?.fixtures;
  const clientUrl = `${fixtures === undefined ? 'http' : 'https'}://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const tlsArgs =
    fixtures === undefined
      ? []
      : [
          '--cert-file',
          fixtures.serverCertPath,
          '--key-file',
          fixtures.serverKeyPath,
          '--trusted-ca-file',
          fixtures.caCertPath,
          ...(tls?.isClientCertRequired === false ? [] : ['--client-cert-auth']),
        ];
  const authArgs =
    auth?.tokenTtlSeconds === undefined ? [] : ['--auth-token-ttl', String(auth.tokenTtlSeconds)];
  const tlsFiles =
    fixtures === undefined
      ? undefined
      : { ca: fixtures.caCertPath, cert: fixtures.clientCertPath, key: fixtures.clientKeyPath };
  const clientTls: EtcdClientTls | undefined =
    tlsFiles === undefined
      ? undefined
      : {
          caCert: fixtures!.read(tlsFiles.ca),
          cert: fixtures!.read(tlsFiles.cert),
          key: fixtures!.read(tlsFiles.key),
        };
  const rootPassword = randomBytes(16).toString('hex');
  const credentials: EtcdCredentials | undefined =
    auth === undefined
      ? undefined
      : { username: ETCD_COHORT_USER, password: randomBytes(16).toString('hex') };
  let isAuthEnabled = false;
  const args = [
    '--name',
    'cohort-test',
    '--data-dir',
    dataDir,
    '--listen-client-urls',
    clientUrl,
    '--advertise-client-urls',
    clientUrl,
    '--listen-peer-urls',
    peerUrl,
    '--initial-advertise-peer-urls',
    peerUrl,
    '--initial-cluster',
    `cohort-test=${peerUrl}`,
    '--initial-cluster-state',
    'new',
    '--initial-cluster-token',
    `cohort-test-${process.pid}-${clientPort}`,
    '--logger',
    'zap',
    '--log-level',
    'warn',
    ...tlsArgs,
    ...authArgs,
  ];
  let stderr = '';
  let child: ChildProcess;
  let exited: Promise<void>;
  let isStopped = false;

  const spawnEtcd = (): void => {
    // ETCD_* variables of the caller would be read as flags; the test's etcd gets only these flags.
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('ETCD_')) env[key] = value;
    child = spawn(binary, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      // Keep the tail: a long test must not grow this without bound.
      stderr = (stderr + chunk).slice(-64_000);
    });
    const current = child;
    exited = new Promise((resolve) => {
      current.once('exit', () => {
        running.delete(current);
        resolve();
      });
      current.once('error', (error) => {
        stderr += `\nspawn failed: ${error.message}`;
        running.delete(current);
        resolve();
      });
    });
  };

  const isAlive = (): boolean => child.exitCode === null && child.signalCode === null && running.has(child);

  const waitUntilHealthy = async (): Promise<void> => {
    const deadline = Date.now() + startTimeoutMs;
    while (true) {
      if (!isAlive()) throw new Error(`etcd exited before it answered on ${clientUrl}; stderr:\n${stderr}`);
      if (await isHealthy(clientUrl, clientTls)) return;
      if (Date.now() > deadline) {
        await killAndWait();
        throw new Error(
          `etcd did not answer on ${clientUrl} within ${startTimeoutMs} ms; stderr:\n${stderr}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const killAndWait = async (): Promise<void> => {
    if (isAlive()) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await exited;
  };

  const etcdctl = async (commandArgs: readonly string[]): Promise<string> => {
    const etcdctlPath = await findEtcdctl();
    const connection = [
      '--endpoints',
      clientUrl,
      '--dial-timeout',
      '5s',
      ...(tlsFiles === undefined
        ? []
        : ['--cacert', tlsFiles.ca, '--cert', tlsFiles.cert, '--key', tlsFiles.key]),
      ...(isAuthEnabled ? ['--user', `root:${rootPassword}`] : []),
    ];
    return new Promise((resolve, reject) => {
      execFile(
        etcdctlPath,
        [...connection, ...commandArgs],
        { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000 },
        (error, stdout, stderrText) => {
          if (error !== null)
            reject(new Error(`etcdctl ${commandArgs.join(' ')} failed: ${stderrText || error.message}`));
          else resolve(stdout);
        },
      );
    });
  };

  spawnEtcd();
  await waitUntilHealthy();
  if (auth !== undefined && credentials !== undefined) {
    try {
      // etcd wants a root user holding the root role before it enables authentication.
      await etcdctl(['user', 'add', `root:${rootPassword}`]);
      await etcdctl(['role', 'add', 'root']);
      await etcdctl(['user', 'grant-role', 'root', 'root']);
      await etcdctl(['user', 'add', `${credentials.username}:${credentials.password}`]);
      await etcdctl(['role', 'add', ETCD_COHORT_USER]);
      await etcdctl([
        'role',
        'grant-permission',
        ETCD_COHORT_USER,
        '--prefix=true',
        'readwrite',
        auth.prefix,
      ]);
      await etcdctl(['user', 'grant-role', credentials.username, ETCD_COHORT_USER]);
      await etcdctl(['auth', 'enable']);
      isAuthEnabled = true;
    } catch (error) {
      await killAndWait();
      throw error;
    }
  }

  return {
    endpoints: [clientUrl],
    clientAddress: `127.0.0.1:${clientPort}`,
    dataDir,
    clientOptions: {
      ...(clientTls === undefined ? {} : { tls: clientTls }),
      ...(credentials === undefined ? {} : { credentials }),
    },
    tlsFiles,
    etcdctl,
    stderr: () => stderr,
    stop: async () => {
      if (isStopped) return;
      isStopped = true;
      if (isAlive()) {
        // A paused etcd cannot act on SIGTERM.
        child.kill('SIGCONT');
        child.kill('SIGTERM');
        const timeout = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timeout);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
    kill: killAndWait,
    restart: async () => {
      if (isStopped) throw new Error('etcd was stopped (its data directory is gone); start a new one');
      await killAndWait();
      spawnEtcd();
      await waitUntilHealthy();
    },
    wipe: async () => {
      if (isStopped) throw new Error('etcd was stopped; start a new one');
      await killAndWait();
      rmSync(dataDir, { recursive: true, force: true });
      spawnEtcd();
      await waitUntilHealthy();
    },
    pause: async () => {
      if (!isAlive()) throw new Error('etcd is not running');
      await stopProcess(child);
    },
    resume: () => {
      if (!isAlive()) throw new Error('etcd is not running');
      child.kill('SIGCONT');
    },
  };
}

/** etcd's /health answers {"health":"true"} once the member has a leader and serves requests. */
function isHealthy(clientUrl: string, tls: EtcdClientTls | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const url = `${clientUrl}/health`;
    const onResponse = (response: IncomingMessage): void => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(response.statusCode === 200 && /"health"\s*:\s*"true"/.test(body)));
    };
    const request =
      tls === undefined
        ? get(url, { timeout: 1_000 }, onResponse)
        : getTls(url, { timeout: 1_000, ca: tls.caCert, cert: tls.cert, key: tls.key }, onResponse);
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

/**
 * `count` distinct ports that were free on 127.0.0.1 a moment ago, for a process that must be told its
 * port before it starts (etcd; a cluster node whose advertised address is fixed across its restarts).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return address.port;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
