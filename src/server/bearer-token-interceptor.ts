import { createHash, timingSafeEqual } from 'node:crypto';
import { ServerInterceptingCall, status } from '@grpc/grpc-js';
import type { Metadata, ServerInterceptor } from '@grpc/grpc-js';
import type { NodeAuthenticator } from './node-credentials';
import { hasNodeCredentials, REPLICATION_METHOD_PATHS } from './node-credentials';

/** The metadata key a token travels in, as HTTP's Authorization header. */
export const AUTHORIZATION_METADATA_KEY = 'authorization';

/**
 * Services any client may call without a token: health, so probes and load balancers work, and reflection
 * (v1 and v1alpha), so grpcurl can list services. Neither reveals or changes any group or record.
 */
export const TOKEN_EXEMPT_SERVICES: readonly string[] = Object.freeze([
  'grpc.health.v1.Health',
  'grpc.reflection.v1.ServerReflection',
  'grpc.reflection.v1alpha.ServerReflection',
]);

export const MISSING_TOKEN_MESSAGE =
  "this server needs a bearer token: send metadata 'authorization: Bearer <token>'";
export const WRONG_TOKEN_MESSAGE = 'the bearer token was not accepted';
export const REPEATED_TOKEN_MESSAGE = "send one 'authorization' header, not several";

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Checks presented tokens against the server's in constant time: both sides are hashed to SHA-256 first,
 * so `timingSafeEqual` always compares 32 bytes and how long it takes says nothing about the token's
 * length or how many of its characters were right.
 */
export class BearerTokenCheck {
  private readonly expected: Buffer;

  constructor(token: string) {
    if (token === '') throw new RangeError('the bearer token must not be empty');
    this.expected = sha256(token);
  }

  /** undefined when `metadata` carries the token; otherwise why not, for the client. */
  refusal(metadata: Metadata): string | undefined {
    return this.refusalOf(metadata.get(AUTHORIZATION_METADATA_KEY));
  }

  /**
   * undefined when `values`, every `authorization` header of a request (gRPC metadata or HTTP headers),
   * carry the token; otherwise why not.
   */
  refusalOf(values: readonly (string | Buffer)[]): string | undefined {
    if (values.length === 0) return MISSING_TOKEN_MESSAGE;
    // One header only: with several, which one a proxy or the server would read is anyone's guess. Node
    // keeps only the first, so this needs keepEveryAuthorizationHeader on the listening server.
    if (values.length > 1) return REPEATED_TOKEN_MESSAGE;
    if (typeof values[0] !== 'string') return WRONG_TOKEN_MESSAGE;
    const match = BEARER.exec(values[0]);
    if (match === null) return MISSING_TOKEN_MESSAGE;
    return timingSafeEqual(sha256(match[1]), this.expected) ? undefined : WRONG_TOKEN_MESSAGE;
  }
}

/** What keepEveryAuthorizationHeader needs of grpc-js's HTTP/2 server. */
export interface StreamEmitter {
  prependListener(event: 'stream', listener: (...args: unknown[]) => void): unknown;
}

/**
 * Makes every `authorization` header of a request reach the call's metadata. Node's HTTP/2 server treats
 * `authorization` as a single-value header and silently drops every copy after the first, so without this
 * a request with two (a valid token first, anything second) would pass as though it had one, and
 * BearerTokenCheck could not refuse it. Runs before grpc-js's own `stream` listener, which builds the
 * metadata from the same headers object, and puts back the full list of values from the raw headers.
 */
export function keepEveryAuthorizationHeader(server: StreamEmitter): void {
  server.prependListener('stream', (_stream, headers, _flags, rawHeaders) => {
    if (!Array.isArray(rawHeaders) || typeof headers !== 'object' || headers === null) return;
    // Names and values alternate; HTTP/2 names are lower case on the wire. Every call with a token passes
    // here, so the one-header case allocates nothing: values are collected only once a second one shows.
    let first = -1;
    let values: string[] | undefined;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      if (rawHeaders[i] !== AUTHORIZATION_METADATA_KEY) continue;
      if (first < 0) first = i;
      else (values ??= [String(rawHeaders[first + 1])]).push(String(rawHeaders[i + 1]));
    }
    if (values !== undefined) (headers as Record<string, unknown>)[AUTHORIZATION_METADATA_KEY] = values;
  });
}

function nodeRefusal(proven: number | string): string | undefined {
  return typeof proven === 'string' ? proven : undefined;
}

function isExempt(path: string): boolean {
  // A path is /<package.Service>/<Method>.
  const service = path.slice(1, path.lastIndexOf('/'));
  return TOKEN_EXEMPT_SERVICES.includes(service);
}

/**
 * A grpc-js server interceptor that ends every call without the right bearer token with UNAUTHENTICATED,
 * before its request is read and before any handler runs; exempt services pass untouched. `onRefused`
 * hears of each refusal (the method and why), for the server's log.
 *
 * A replication call (REPLICATION_METHOD_PATHS) that carries node credentials (node-credentials.ts) is a
 * node's, not a client's: `nodes` checks those instead of the token, so a node authenticated by the
 * cluster secret needs no client token, and one whose credentials do not check out is refused even if it
 * also holds the token. Every other method needs the token, node credentials or not.
 */
export function bearerTokenInterceptor(
  check: BearerTokenCheck,
  onRefused?: (path: string, reason: string, peer: string) => void,
  nodes?: NodeAuthenticator,
): ServerInterceptor {
  return (methodDescriptor, call) => {
    if (isExempt(methodDescriptor.path)) return new ServerInterceptingCall(call);
    const isReplication = REPLICATION_METHOD_PATHS.has(methodDescriptor.path);
    return new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const reason =
              nodes !== undefined && isReplication && hasNodeCredentials(metadata)
                ? nodeRefusal(nodes.authenticate(metadata))
                : check.refusal(metadata);
            if (reason === undefined) {
              nextMetadata(metadata);
              return;
            }
            onRefused?.(methodDescriptor.path, reason, call.getPeer());
            call.sendStatus({ code: status.UNAUTHENTICATED, details: reason });
          },
        });
      },
    });
  };
}
