import * as grpc from '@grpc/grpc-js';
import { CONFIG_SCHEMA } from '../config';
import { MetadataStoreError } from './metadata-store';

/**
 * What a failed etcd call means to its caller, as a MetadataStoreError: whether the request certainly was
 * not applied (etcd checked and refused it) or may have been committed (the connection failed, the
 * deadline passed), whether etcd refused the token the call carried, and what an operator should change
 * when the refusal is about access or TLS. EtcdMetadataStore maps every failed call and every cancelled
 * watch through here; a write is never retried, so this is where "outcome unknown" is decided.
 */

/** gRPC statuses after which a write certainly was not applied: etcd checked and refused it. */
const DEFINITE_STATUSES = new Set<grpc.status>([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.OUT_OF_RANGE,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.ALREADY_EXISTS,
]);

/**
 * etcd's words for a token it does not accept (any more), in its gRPC errors (`etcdserver: ...`) and in a
 * watch's cancel reason (`auth: ...` from etcd 3.5 on). EtcdMetadataStore's class comment says when each comes.
 */
export const REJECTED_TOKEN =
  /invalid auth token|revision of auth store is old|revision in header is old|user name is empty/;

/** The details of a failed call's gRPC error (or of what a watch's cancel reason says), if any. */
export function detailsOf(error: unknown): string {
  const cause = error instanceof MetadataStoreError ? error.cause : error;
  const details = (cause as Partial<grpc.ServiceError> | undefined)?.details;
  return typeof details === 'string' ? details : '';
}

/** Whether a failed call's error says etcd did not accept the token it carried. */
export function isRejectedToken(error: unknown): boolean {
  return REJECTED_TOKEN.test(detailsOf(error));
}

const NEEDS_CREDENTIALS =
  `etcd has authentication enabled: give ${CONFIG_SCHEMA.etcdUsername.flag} and ` +
  `${CONFIG_SCHEMA.etcdPasswordFile.flag} (or ${CONFIG_SCHEMA.etcdPassword.env})`;
const NEEDS_PERMISSION =
  `the etcd user (${CONFIG_SCHEMA.etcdUsername.flag}; without one, etcd takes the CN of ` +
  `${CONFIG_SCHEMA.etcdTlsCert.flag}) needs a role granting readwrite on the cluster's prefix ` +
  '/<cluster-id>/ (docs/operations.md, "Locking etcd down")';

/** What to do about an access refusal, for its message. */
export function accessHint(details: string): string {
  if (/user name is empty/.test(details)) return ` (${NEEDS_CREDENTIALS})`;
  if (/permission denied/.test(details)) return ` (${NEEDS_PERMISSION})`;
  return '';
}

/**
 * What to check after a TLS handshake failed, for its message: grpc-js reports it as UNAVAILABLE with
 * OpenSSL's or Node's words in the details.
 */
function tlsHint(details: string): string {
  if (/alert (bad certificate|certificate required|unknown ca|certificate unknown)/i.test(details)) {
    return (
      ' (etcd refused the TLS handshake: it wants a client certificate signed by a CA it trusts; give ' +
      `${CONFIG_SCHEMA.etcdTlsCert.flag} and ${CONFIG_SCHEMA.etcdTlsKey.flag})`
    );
  }
  if (
    /unable to verify|self[- ]signed|unable to get (local )?issuer|certificate has expired|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID/i.test(
      details,
    )
  ) {
    return (
      ` (etcd's certificate could not be verified: give ${CONFIG_SCHEMA.etcdTlsCa.flag} the CA that signed ` +
      "it, and check that it names the endpoint's host)"
    );
  }
  if (/wrong version number|packet length too long|http_request/i.test(details)) {
    return ' (is etcd serving plain http? then give http:// endpoints)';
  }
  return '';
}

export function toStoreError(error: grpc.ServiceError, call: string, isWrite: boolean): MetadataStoreError {
  const details = error.details || error.message;
  const what = `etcd ${call}: ${details}`;
  if (error.code === grpc.status.NOT_FOUND && /lease not found/.test(details)) {
    return new MetadataStoreError('leaseNotFound', what, { isOutcomeUnknown: false, cause: error });
  }
  if (error.code === grpc.status.OUT_OF_RANGE && /compacted/.test(details)) {
    return new MetadataStoreError('compacted', what, { isOutcomeUnknown: false, cause: error });
  }
  // Refused for the token or the user's permissions: never applied (EtcdMetadataStore's class comment says why).
  if (
    error.code === grpc.status.UNAUTHENTICATED ||
    error.code === grpc.status.PERMISSION_DENIED ||
    REJECTED_TOKEN.test(details)
  ) {
    return new MetadataStoreError('accessDenied', `${what}${accessHint(details)}`, {
      isOutcomeUnknown: false,
      cause: error,
    });
  }
  if (DEFINITE_STATUSES.has(error.code)) {
    return new MetadataStoreError('invalidRequest', what, { isOutcomeUnknown: false, cause: error });
  }
  // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, UNKNOWN, INTERNAL: the request may have reached etcd and
  // been committed (etcd's own "request timed out" is UNAVAILABLE and means exactly that).
  return new MetadataStoreError('unavailable', `${what}${tlsHint(details)}`, {
    isOutcomeUnknown: isWrite,
    cause: error,
  });
}
