import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCommand } from './system-packages';

/**
 * A real etcd for tests: one member on 127.0.0.1, client and peer ports picked free, a fresh data
 * directory, removed by `stop()`. etcd is a real component of a cohort cluster, so the tests that need it
 * start this one; if the binary is missing they install Debian's `etcd-server` (as root with apt) or fail
 * saying what to install. They never skip.
 *
 * Faults are injected into the real process: `kill()` (SIGKILL, data kept) then `restart()` on the same
 * ports and data; `pause()` / `resume()` (SIGSTOP / SIGCONT) freeze it, which is how a test makes etcd
 * stop answering while its clients keep running.
 */
export interface EtcdProcess {
  /** Client URLs, e.g. ['http://127.0.0.1:40123']. */
  readonly endpoints: readonly string[];
  /** `127.0.0.1:port` of the client URL, for a gRPC channel. */
  readonly clientAddress: string;
  readonly dataDir: string;
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
  /** SIGSTOP: the process stops answering; its sockets stay open. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

export interface StartEtcdOptions {
  /** How long to wait for etcd to answer /health; 20 s by default (etcd starts in well under 1 s). */
  readonly startTimeoutMs?: number;
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
      return await launch(binary, clientPort, peerPort, dataDir, startTimeoutMs);
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
): Promise<EtcdProcess> {
  const clientUrl = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
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
      if (await isHealthy(clientUrl)) return;
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

  spawnEtcd();
  await waitUntilHealthy();

  return {
    endpoints: [clientUrl],
    clientAddress: `127.0.0.1:${clientPort}`,
    dataDir,
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
    pause: () => {
      if (!isAlive()) throw new Error('etcd is not running');
      child.kill('SIGSTOP');
    },
    resume: () => {
      if (!isAlive()) throw new Error('etcd is not running');
      child.kill('SIGCONT');
    },
  };
}

/** etcd's /health answers {"health":"true"} once the member has a leader and serves requests. */
function isHealthy(clientUrl: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get(`${clientUrl}/health`, { timeout: 1_000 }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(response.statusCode === 200 && /"health"\s*:\s*"true"/.test(body)));
    });
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
