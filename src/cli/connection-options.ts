import { readFileSync } from 'node:fs';
import { CohortClient, type CohortClientOptions } from '../client/cohort-client';
import type { TlsOptions } from '../client/grpc-transport';
import { usageOf, type CommandLine, type CommandSpec, type OptionSpec } from './command-line';
import { UsageError } from './usage-error';

/** Where a command connects when `--address` is not given: what `cohort serve` listens on by default. */
export const DEFAULT_ADDRESS = '127.0.0.1:7070';
/** How long an operation may take, retries included, unless `--request-timeout-ms` says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/**
 * How long a command waits for the server to answer at all before it gives up (exit 4), unless
 * `--timeout-ms` says otherwise: long enough for a server that is just starting, short enough that a
 * server that is down, or a wrong address, is reported at once rather than after the request timeout.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;

const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const BRACKETED_IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;

/** Whether `address` is `HOST:PORT` (`[IPV6]:PORT`), port 1–65535, or `unix:PATH`: what the server listens on. */
export function isServerAddress(address: string): boolean {
  if (address.startsWith('unix:')) return address.length > 'unix:'.length;
  const colon = address.lastIndexOf(':');
  if (colon <= 0) return false;
  const host = address.slice(0, colon);
  const port = address.slice(colon + 1);
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) return false;
  return HOST_NAME.test(host) || BRACKETED_IPV6.test(host);
}

/** The flags of every command that talks to a server. */
export const CONNECTION_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  address: {
    type: 'string',
    valueName: 'HOST:PORT[,...]',
    description: `the cohort server, or nodes of a cluster to start from (comma-separated), or unix:/path (default: $COHORT_ADDRESS, else ${DEFAULT_ADDRESS})`,
  },
  token: {
    type: 'string',
    valueName: 'TOKEN',
    description: 'bearer token for every call (default: $COHORT_TOKEN; a flag shows it to other users)',
  },
  'token-file': { type: 'string', valueName: 'FILE', description: 'read the bearer token from FILE' },
  tls: { type: 'boolean', description: 'use TLS, trusting the system roots (implied by the --tls-* files)' },
  'tls-ca': {
    type: 'string',
    valueName: 'FILE',
    description: 'PEM certificates to trust instead of the system roots',
  },
  'tls-cert': {
    type: 'string',
    valueName: 'FILE',
    description: 'PEM client certificate, for mutual TLS (with --tls-key)',
  },
  'tls-key': {
    type: 'string',
    valueName: 'FILE',
    description: 'PEM client key, for mutual TLS (with --tls-cert)',
  },
  'timeout-ms': {
    type: 'string',
    valueName: 'MS',
    description: `how long to wait for the server to answer at all before exit 4 (default ${DEFAULT_CONNECT_TIMEOUT_MS})`,
  },
  'request-timeout-ms': {
    type: 'string',
    valueName: 'MS',
    description: `how long each operation may take, retries included (default ${DEFAULT_REQUEST_TIMEOUT_MS})`,
  },
  json: { type: 'boolean', description: 'print JSON for scripts instead of tables' },
};

/** How to reach the server, from the flags and the environment. */
export interface Connection {
  readonly options: Omit<CohortClientOptions, 'clientId'>;
  readonly requestTimeoutMs: number;
  /** How long `connectClient` waits for the server to answer at all. */
  readonly connectTimeoutMs: number;
  readonly isJson: boolean;
}

/** Reads the connection flags; throws a UsageError for a TLS file that cannot be read or a bad timeout. */
export function connectionOf(
  line: CommandLine,
  spec: CommandSpec,
  env: Readonly<Record<string, string | undefined>>,
): Connection {
  const v = line.values;
  // As COHORT_TOKEN stands in for --token: scripts and shells point every command at one server once.
  const fromEnv = env.COHORT_ADDRESS !== undefined && env.COHORT_ADDRESS !== '';
  const address = typeof v.address === 'string' ? v.address : fromEnv ? env.COHORT_ADDRESS! : DEFAULT_ADDRESS;
  const addressSource = typeof v.address !== 'string' && fromEnv ? 'COHORT_ADDRESS' : '--address';
  if (address === '') throw new UsageError('--address must not be empty', usageOf(spec));
  // A bootstrap list: any one of the nodes answering is enough, the client learns the others.
  const bootstrap = address.split(',').map((entry) => entry.trim());
  for (const entry of bootstrap) {
    if (!isServerAddress(entry)) {
      throw new UsageError(
        `${addressSource} must be HOST:PORT (e.g. ${DEFAULT_ADDRESS}, [::1]:7070) or unix:/path, got '${entry}'${bootstrap.length > 1 ? ` in the list '${address}'` : ''}`,
        usageOf(spec),
      );
    }
  }
  const file = (flag: string): Buffer | undefined => {
    const path = v[flag];
    if (typeof path !== 'string') return undefined;
    try {
      return readFileSync(path);
    } catch (error) {
      throw new UsageError(
        `--${flag} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
        usageOf(spec),
      );
    }
  };
  const tokenFile = file('token-file');
  // As the server reads its --token-file: one line, the trailing newline ignored.
  const token =
    typeof v.token === 'string'
      ? v.token
      : tokenFile !== undefined
        ? tokenFile.toString('utf8').replace(/\r?\n$/, '')
        : env.COHORT_TOKEN !== '' && env.COHORT_TOKEN !== undefined
          ? env.COHORT_TOKEN
          : undefined;
  const ca = file('tls-ca');
  const cert = file('tls-cert');
  const key = file('tls-key');
  if ((cert === undefined) !== (key === undefined)) {
    throw new UsageError('--tls-cert and --tls-key go together (mutual TLS)', usageOf(spec));
  }
  const files: TlsOptions = { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  const tls = Object.keys(files).length > 0 ? files : v.tls === true ? true : undefined;
  const milliseconds = (flag: string, fallback: number): number => {
    const raw = v[flag];
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (typeof raw !== 'string' || !/^\d+$/.test(raw) || value < 1 || value > 2_147_483_647) {
      throw new UsageError(
        `--${flag} must be a whole number of milliseconds above 0, got '${String(raw)}'`,
        usageOf(spec),
      );
    }
    return value;
  };
  return {
    options: {
      ...(bootstrap.length === 1 ? { address: bootstrap[0] } : { bootstrap }),
      ...(token !== undefined ? { token } : {}),
      ...(tls !== undefined ? { tls } : {}),
    },
    requestTimeoutMs: milliseconds('request-timeout-ms', DEFAULT_REQUEST_TIMEOUT_MS),
    connectTimeoutMs: milliseconds('timeout-ms', DEFAULT_CONNECT_TIMEOUT_MS),
    isJson: v.json === true,
  };
}

/** A client for one command run. */
export function clientFor(connection: Connection, clientId: string): CohortClient {
  return new CohortClient({ ...connection.options, clientId });
}

/**
 * A client for one command run, once the server has answered: a server that is down, an address that
 * leads nowhere or a TLS handshake that fails is reported within `--timeout-ms` (a
 * `ServerUnreachableError`, exit 4) instead of after the retries of the first operation.
 */
export async function connectClient(connection: Connection, clientId: string): Promise<CohortClient> {
  const client = clientFor(connection, clientId);
  try {
    await client.waitForServer(connection.connectTimeoutMs);
  } catch (error) {
    await client.close();
    throw error;
  }
  return client;
}
