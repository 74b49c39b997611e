import { X509Certificate } from 'node:crypto';
import { credentials as grpcCredentials, makeClientConstructor, Metadata } from '@grpc/grpc-js';
import type { ChannelCredentials, ChannelOptions, ServiceError } from '@grpc/grpc-js';
import type { ServiceDefinition } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { parseListenAddress, parseUnixSocket } from '../config';

/** What grpc.health.v1.Health/Check answers, or why there was no answer. */
export type HealthCheckResult =
  | { readonly status: 'SERVING' | 'NOT_SERVING' | 'UNKNOWN' | 'SERVICE_UNKNOWN' }
  | { readonly status: 'UNREACHABLE'; readonly error: string };

export interface HealthCheckOptions {
  /** `HOST:PORT` or `unix:PATH`. */
  readonly address: string;
  /** The service to ask about; '' (the default) is the whole server. */
  readonly service?: string;
  readonly timeoutMs: number;
  /** Default: plaintext. */
  readonly credentials?: ChannelCredentials;
  readonly channelOptions?: ChannelOptions;
}

/**
 * Where a probe on the same machine reaches a server that listens on `listen`: a wildcard host (0.0.0.0,
 * [::]) is reached on loopback; anything else as it is. undefined for port 0, which no probe can guess.
 */
export function probeAddressOf(listen: string): string | undefined {
  if (parseUnixSocket(listen) !== undefined) return listen;
  const address = parseListenAddress(listen);
  if (address === undefined || address.port === 0) return undefined;
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '[::]' ? '[::1]' : address.host;
  return `${host}:${address.port}`;
}

/**
 * Asks a server's standard health service (grpc-health-check's contract) once, within `timeoutMs`, and
 * closes its channel. Never rejects: an unreachable server is a result.
 */
export function checkHealth(options: HealthCheckOptions): Promise<HealthCheckResult> {
  const Client = makeClientConstructor(healthService as ServiceDefinition, 'grpc.health.v1.Health');
  const client = new Client(
    options.address,
    options.credentials ?? grpcCredentials.createInsecure(),
    options.channelOptions,
  ) as unknown as {
    check(
      request: { service: string },
      metadata: Metadata,
      callOptions: { deadline: number },
      callback: (error: ServiceError | null, response: { status: string }) => void,
    ): void;
    close(): void;
  };
  return new Promise<HealthCheckResult>((resolve) => {
    client.check(
      { service: options.service ?? '' },
      new Metadata(),
      { deadline: Date.now() + options.timeoutMs },
      (error, response) => {
        client.close();
        if (error !== null) {
          // NOT_FOUND is the health service's way of saying it does not know the service.
          resolve(
            error.code === 5
              ? { status: 'SERVICE_UNKNOWN' }
              : { status: 'UNREACHABLE', error: `${error.code} ${error.details}` },
          );
          return;
        }
        const status = response.status;
        resolve({
          status: status === 'SERVING' || status === 'NOT_SERVING' ? status : 'UNKNOWN',
        });
      },
    );
  });
}

/**
 * A name the certificate is for, to check it by when the probe dials loopback: its own address when the
 * certificate names it (nothing to override), else its first DNS name, else its common name.
 */
export function serverNameOf(certificatePem: Buffer, dialedHost: string): string | undefined {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certificatePem);
  } catch {
    return undefined; // not PEM: the TLS handshake will say so
  }
  // Node refuses an unbracketed IPv6 literal as a host name; compare without brackets.
  const host = dialedHost.replace(/^\[(.*)\]$/, '$1');
  if (certificate.checkHost(host) !== undefined || certificate.checkIP(host) !== undefined) return undefined;
  const names = (certificate.subjectAltName ?? '').split(', ');
  const dns = names.find((name) => name.startsWith('DNS:'));
  if (dns !== undefined) return dns.slice('DNS:'.length).replace(/^\*\./, 'probe.');
  return /(?:^|\n)CN=([^\n]+)/.exec(certificate.subject)?.[1];
}
