/**
 * cohort's health probe, for container health checks (the Dockerfile's HEALTHCHECK) and scripts: asks the
 * server's gRPC health service whether it serves and exits 0 if the answer is SERVING, 1 for anything else
 * (NOT_SERVING while loading or draining, unreachable, no answer in time), 2 for bad arguments. One line
 * on stdout says what it saw.
 *
 *   node dist/src/health-probe.js [--readyz] [--admin-address HOST:PORT]
 *                                 [--address HOST:PORT|unix:PATH] [--service NAME] [--timeout-ms MS]
 *                                 [--tls-ca PATH] [--tls-cert PATH --tls-key PATH] [--tls-server-name NAME]
 *
 * `--readyz` asks the admin listener's `GET /readyz` instead (plain HTTP on loopback: no certificate, no
 * server name, no token, whatever TLS the gRPC listener has), at `--admin-address`, default where
 * COHORT_ADMIN_LISTEN says (a wildcard host on loopback), else 127.0.0.1:7071; with the admin listener
 * off (COHORT_ADMIN_LISTEN=off) it falls back to the gRPC health service. What the image's HEALTHCHECK runs.
 *
 * gRPC: `--address` defaults to where COHORT_LISTEN says the server listens (a wildcard host is reached on
 * loopback), else 127.0.0.1:7070. TLS: `--tls-ca` trusts that CA (default, when COHORT_TLS_CERT is set:
 * that certificate, which suits a self-signed one; a CA-signed one needs its CA); `--tls-cert`/`--tls-key`
 * present a client certificate (mutual TLS). The name checked is `--tls-server-name`, by default (when
 * the certificate trusted is COHORT_TLS_CERT's) a name that certificate is for, since the probe dials
 * loopback and the certificate need not name it. Health needs no bearer token.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { credentials } from '@grpc/grpc-js';
import type { ChannelOptions } from '@grpc/grpc-js';
import { ignoreIpServerNameWarning } from './client/ip-server-name-warning';
import { ADMIN_LISTEN_OFF, DEFAULT_ADMIN_LISTEN } from './config';
import { checkHealth, probeAddressOf, serverNameOf } from './server/health-check';

const EXIT_SERVING = 0;
const EXIT_NOT_SERVING = 1;
const EXIT_USAGE = 2;
const DEFAULT_ADDRESS = '127.0.0.1:7070';
const DEFAULT_TIMEOUT_MS = 3_000;
const BOOLEAN_FLAGS = new Set(['--readyz']);
const FLAGS = new Set([
  ...BOOLEAN_FLAGS,
  '--admin-address',
  '--address',
  '--service',
  '--timeout-ms',
  '--tls-ca',
  '--tls-cert',
  '--tls-key',
  '--tls-server-name',
]);

function usage(problem: string): never {
  process.stderr.write(`cohort-health-probe: ${problem}\n`);
  process.exit(EXIT_USAGE);
}

function parseArgs(argv: readonly string[]): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const equals = arg.indexOf('=');
    const flag = equals === -1 ? arg : arg.slice(0, equals);
    if (!FLAGS.has(flag)) usage(`unknown argument ${arg}; flags: ${[...FLAGS].join(' ')}`);
    if (BOOLEAN_FLAGS.has(flag)) {
      if (equals !== -1) usage(`${flag} takes no value`);
      args.set(flag, 'true');
      continue;
    }
    const value = equals === -1 ? argv[++i] : arg.slice(equals + 1);
    if (value === undefined) usage(`${flag} needs a value`);
    args.set(flag, value);
  }
  return args;
}

/** GET /readyz of the admin listener at `address`: 200 is ready; anything else, or no answer, is not. */
function checkReadyz(address: string, timeoutMs: number): Promise<{ isReady: boolean; text: string }> {
  return new Promise((resolve) => {
    const url = `http://${address}/readyz`;
    const call = request(url, { method: 'GET', timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({ isReady: response.statusCode === 200, text: `${response.statusCode} ${body.trim()}` }),
      );
    });
    call.on('timeout', () => call.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    call.on('error', (error) => resolve({ isReady: false, text: `UNREACHABLE (${error.message})` }));
    call.end();
  });
}

async function main(): Promise<void> {
  ignoreIpServerNameWarning();
  const args = parseArgs(process.argv.slice(2));
  const timeoutArg = Number(args.get('--timeout-ms') ?? DEFAULT_TIMEOUT_MS);
  if (!Number.isSafeInteger(timeoutArg) || timeoutArg <= 0)
    usage('--timeout-ms must be a whole number above 0');
  const adminListen = process.env.COHORT_ADMIN_LISTEN ?? DEFAULT_ADMIN_LISTEN;
  const isAdminOff = adminListen === '' || adminListen === ADMIN_LISTEN_OFF;
  if (args.has('--readyz') && (args.has('--admin-address') || !isAdminOff)) {
    const adminAddress = args.get('--admin-address') ?? probeAddressOf(adminListen);
    if (adminAddress === undefined)
      usage(`cannot probe COHORT_ADMIN_LISTEN=${adminListen}: give --admin-address`);
    const result = await checkReadyz(adminAddress, timeoutArg);
    process.stdout.write(`${adminAddress}/readyz: ${result.text}\n`);
    process.exit(result.isReady ? EXIT_SERVING : EXIT_NOT_SERVING);
  }
  const listen = process.env.COHORT_LISTEN;
  const address =
    args.get('--address') ??
    (listen === undefined || listen === '' ? DEFAULT_ADDRESS : probeAddressOf(listen));
  if (address === undefined) usage(`cannot probe COHORT_LISTEN=${listen}: give --address`);
  const timeoutMs = timeoutArg;

  // The server's own certificate: trusted when no CA is given, and in any case what the server presents.
  const ownCertPath = process.env.COHORT_TLS_CERT || undefined;
  const caPath = args.get('--tls-ca') ?? ownCertPath;
  const certPath = args.get('--tls-cert');
  const keyPath = args.get('--tls-key');
  if ((certPath === undefined) !== (keyPath === undefined)) usage('--tls-cert and --tls-key go together');
  const channelOptions: ChannelOptions = {};
  let channelCredentials;
  let serverName = args.get('--tls-server-name');
  try {
    if (serverName === undefined && ownCertPath !== undefined && address.startsWith('unix:') === false) {
      serverName = serverNameOf(readFileSync(ownCertPath), address.slice(0, address.lastIndexOf(':')));
    }
    channelCredentials =
      caPath === undefined && certPath === undefined
        ? credentials.createInsecure()
        : credentials.createSsl(
            caPath === undefined ? null : readFileSync(caPath),
            keyPath === undefined ? null : readFileSync(keyPath),
            certPath === undefined ? null : readFileSync(certPath),
          );
  } catch (error) {
    usage(`cannot read the TLS files: ${(error as Error).message}`);
  }
  if (serverName !== undefined) channelOptions['grpc.ssl_target_name_override'] = serverName;

  const result = await checkHealth({
    address,
    service: args.get('--service') ?? '',
    timeoutMs,
    credentials: channelCredentials,
    channelOptions,
  });
  process.stdout.write(
    `${address}: ${result.status}${result.status === 'UNREACHABLE' ? ` (${result.error})` : ''}\n`,
  );
  process.exit(result.status === 'SERVING' ? EXIT_SERVING : EXIT_NOT_SERVING);
}

void main();
