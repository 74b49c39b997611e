import { CohortError, ErrorCode } from '../errors';

/**
 * What stood between a client and its server, as far as the client's own connection attempt can tell:
 *
 * - `refused`: nothing listens at the address (ECONNREFUSED);
 * - `unresolved`: the host name does not resolve;
 * - `tls-handshake`: the connection was made but TLS failed: a certificate not trusted or not for this
 *   name, a client certificate missing or refused, or a server that does not speak TLS;
 * - `no-answer`: no answer within the time given (a host that drops packets, a server stalled);
 * - `connection-failed`: the connection failed otherwise (with plaintext, a server that wants TLS closes it).
 */
export type UnreachableReason =
  'refused' | 'unresolved' | 'tls-handshake' | 'no-answer' | 'connection-failed';

const REASON_TEXT: Readonly<Record<UnreachableReason, string>> = {
  refused: 'connection refused',
  unresolved: 'the host name does not resolve',
  'tls-handshake': 'the TLS handshake failed',
  'no-answer': 'no answer',
  'connection-failed': 'the connection failed',
};

/**
 * The server could not be reached (`CohortClient.waitForServer`). Retriable, with the code of every
 * transport failure (COORDINATOR_NOT_AVAILABLE); `reason` says what failed and `detail` gives the
 * transport's own words for it, from this process's connection attempt (nothing the server said).
 */
export class ServerUnreachableError extends CohortError {
  constructor(
    readonly address: string,
    readonly reason: UnreachableReason,
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      `cannot reach ${address}: ${REASON_TEXT[reason]} (${detail})`,
      options,
    );
    this.name = 'ServerUnreachableError';
  }
}

/**
 * The reason behind a failed connection attempt, read from grpc-js's description of it (`details` of an
 * UNAVAILABLE status the client itself produced: "No connection established. Last error: ...").
 */
export function unreachableReasonOf(details: string, isTls: boolean): UnreachableReason {
  if (/ECONNREFUSED/.test(details)) return 'refused';
  if (/Name resolution failed|ENOTFOUND|EAI_AGAIN|getaddrinfo/i.test(details)) return 'unresolved';
  if (/SSL|TLS|certificate|altnames|handshake/i.test(details)) return 'tls-handshake';
  // A TLS connection that closes before it is up is a handshake the server broke off: it refused the client
  // certificate, or does not speak TLS; grpc-js then says only "Failed to connect".
  return isTls ? 'tls-handshake' : 'connection-failed';
}
