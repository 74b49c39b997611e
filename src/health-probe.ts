/**
 * cohort's health probe, for container health checks (the Dockerfile's HEALTHCHECK) and scripts: asks the
 * server's gRPC health service whether it serves and exits 0 if the answer is SERVING, 1 for anything else
 * (NOT_SERVING while loading or draining, unreachable, no answer in time), 2 for bad arguments. One line
 * on stdout says what it saw.
 *
 *   node dist/src/health-probe.js [--address HOST:PORT|unix:PATH] [--service NAME] [--timeout-ms MS]
 *                                 [--tls-ca PATH] [--tls-cert PATH --tls-key PATH] [--tls-server-name NAME]
 *
 * `--address` defaults to where COHORT_LISTEN says the server listens (a wildcard host is reached on
 * loopback), else 127.0.0.1:7070. TLS: `--tls-ca` trusts that CA (default, when COHORT_TLS_CERT is set:
 * that certificate, which suits a self-signed one); `--tls-cert`/`--tls-key` present a client certificate
 * (mutual TLS). Health needs no bearer token.
 */
import { readFileSync } from 'node:fs';
import { credentials } from '@grpc/grpc-js';
import type { ChannelOptions } from '@grpc/grpc-js';
import { checkHealth, probeAddressOf } from './server/health-check';

const EXIT_SERVING = 0;
const EXIT_NOT_SERVING = 1;
const EXIT_USAGE = 2;
const DEFAULT_ADDRESS = '127.0.0.1:7070';
const DEFAULT_TIMEOUT_MS = 3_000;
const FLAGS = new Set([
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
    const value = equals === -1 ? argv[++i] : arg.slice(equals + 1);
    if (value === undefined) usage(`${flag} needs a value`);
    args.set(flag, value);
  }
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const listen = process.env.COHORT_LISTEN;
  const address =
    args.get('--address') ??
    (listen === undefined || listen === '' ? DEFAULT_ADDRESS : probeAddressOf(listen));
  if (address === undefined) usage(`cannot probe COHORT_LISTEN=${listen}: give --address`);
  const timeoutMs = Number(args.get('--timeout-ms') ?? DEFAULT_TIMEOUT_MS);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)
    usage('--timeout-ms must be a whole number above 0');

  const caPath = args.get('--tls-ca') ?? (process.env.COHORT_TLS_CERT || undefined);
  const certPath = args.get('--tls-cert');
  const keyPath = args.get('--tls-key');
  if ((certPath === undefined) !== (keyPath === undefined)) usage('--tls-cert and --tls-key go together');
  const channelOptions: ChannelOptions = {};
  const serverName = args.get('--tls-server-name');
  if (serverName !== undefined) channelOptions['grpc.ssl_target_name_override'] = serverName;
  let channelCredentials;
  try {
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
