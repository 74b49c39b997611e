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
