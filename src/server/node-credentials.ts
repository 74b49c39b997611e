import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Metadata, MetadataValue } from '@grpc/grpc-js';

/**
 * Node-to-node authentication with the cluster secret (`--cluster-secret-file`, `COHORT_CLUSTER_SECRET`).
 *
 * A node proves its id with two metadata entries on each call:
 *
 *     cohort-node-id:   7
 *     cohort-node-auth: hex(HMAC-SHA256(cluster secret, "cohort-node:7"))
 *
 * The secret itself never travels: a node's credential is derived from it and from its id, so someone who
 * reads one node's credential (a log, a proxy) can pass only as that node, never as another, and cannot
 * work back to the secret. The credential is static, like a bearer token, and so as replayable as one:
 * without TLS anyone on the path can copy it. Mutual TLS with the node id in the certificate would bind it
 * to the connection instead; cohort may add that later (docs/operations.md, "Cluster secret").
 *
 * Worked example: with the secret `s3cret-s3cret-s3cret`, node 1 sends `cohort-node-id: 1` and
 * `cohort-node-auth: ` + the 64 hex digits of HMAC-SHA256 over the 13 bytes `cohort-node:1`. The server
 * computes the same HMAC for the id it was given and compares the 32-byte digests with timingSafeEqual.
 */

/** The metadata key of the node id a caller claims. */
export const NODE_ID_METADATA_KEY = 'cohort-node-id';
/** The metadata key of the HMAC that proves it. */
export const NODE_AUTH_METADATA_KEY = 'cohort-node-auth';
/** What the HMAC covers before the node id: keeps a node's credential from meaning anything else. */
export const NODE_AUTH_CONTEXT = 'cohort-node:';

/** `authenticate`'s answer for a call that carries no node credentials: a client. */
export const NOT_A_NODE = -1;

export const UNCHECKABLE_NODE_MESSAGE =
  'node credentials were sent, but this server has no cluster secret to check them with';
export const INCOMPLETE_NODE_MESSAGE = `node credentials need both '${NODE_ID_METADATA_KEY}' and '${NODE_AUTH_METADATA_KEY}'`;
export const REPEATED_NODE_MESSAGE = `send one '${NODE_ID_METADATA_KEY}' and one '${NODE_AUTH_METADATA_KEY}' header, not several`;
export const MALFORMED_NODE_MESSAGE = `'${NODE_ID_METADATA_KEY}' must be a node id (0 to 2147483647) and '${NODE_AUTH_METADATA_KEY}' 64 hex digits`;
export const WRONG_NODE_MESSAGE = 'the node credentials were not accepted';

/**
 * The methods a node calls on another: replication. Node credentials stand in for the client token on
 * these only; on every other method (producing, groups, the test clock) a node is a client like any
 * other, so a captured credential opens replication, not the whole server.
 */
export const REPLICATION_METHOD_PATHS: ReadonlySet<string> = new Set([
  '/cohort.v1.Broker/Metadata',
  '/cohort.v1.Broker/Fetch',
  '/cohort.v1.Broker/OffsetForLeaderEpoch',
]);

const NODE_ID = /^(?:0|[1-9][0-9]{0,9})$/;
const HMAC_HEX = /^[0-9a-fA-F]{64}$/;
const INT32_MAX = 2_147_483_647;

function hmacOf(secret: string, nodeId: number): Buffer {
  return createHmac('sha256', secret).update(`${NODE_AUTH_CONTEXT}${nodeId}`, 'utf8').digest();
}

/** The hex HMAC a node with `nodeId` sends in `cohort-node-auth`. */
export function nodeAuthFor(secret: string, nodeId: number): string {
  return hmacOf(secret, nodeId).toString('hex');
}

/** The metadata entries a node sends with every call, computed once. */
export interface NodeCredentials {
  readonly nodeId: number;
  readonly auth: string;
}

export function nodeCredentialsFor(secret: string, nodeId: number): NodeCredentials {
  return Object.freeze({ nodeId, auth: nodeAuthFor(secret, nodeId) });
}

/**
 * The values of `key` without allocating when there are none: `Metadata.get` returns a fresh empty array
 * for a missing key, and every client call passes here. grpc-js keeps entries in `internalRepr`, a Map
 * (1.x); should that change, `get` is the fallback (a unit test notices).
 */
export function peekMetadata(metadata: Metadata, key: string): readonly MetadataValue[] | undefined {
  const entries = (metadata as unknown as { internalRepr?: unknown }).internalRepr;
  if (entries instanceof Map) return entries.get(key) as MetadataValue[] | undefined;
  const values = metadata.get(key);
  return values.length === 0 ? undefined : values;
}

/** Whether a call carries any node credentials (complete or not), without allocating. */
export function hasNodeCredentials(metadata: Metadata): boolean {
  return (
    peekMetadata(metadata, NODE_ID_METADATA_KEY) !== undefined ||
    peekMetadata(metadata, NODE_AUTH_METADATA_KEY) !== undefined
  );
}

/**
 * Checks the node credentials of a call against the cluster secret. `authenticate` answers the node id the
 * call proved, NOT_A_NODE when it carries no node credentials (a client), or why the credentials it
 * carries are refused (the call then ends with UNAUTHENTICATED, as one with a wrong bearer token does).
 * A call is checked at most once: the token interceptor and the Broker's handler may both ask.
 */
export class NodeCredentialsCheck implements NodeAuthenticator {
  private readonly proven = new WeakMap<Metadata, number>();

  constructor(private readonly secret: string) {
    if (secret === '') throw new RangeError('the cluster secret must not be empty');
  }

  authenticate(metadata: Metadata): number | string {
    const ids = peekMetadata(metadata, NODE_ID_METADATA_KEY);
    const auths = peekMetadata(metadata, NODE_AUTH_METADATA_KEY);
    if (ids === undefined && auths === undefined) return NOT_A_NODE;
    const known = this.proven.get(metadata);
    if (known !== undefined) return known;
    if (ids === undefined || auths === undefined) return INCOMPLETE_NODE_MESSAGE;
    // One of each, as for `authorization`: with several, which one counts would be anyone's guess. Node
    // joins repeated custom headers with ', ', which the formats below refuse as well.
    if (ids.length > 1 || auths.length > 1) return REPEATED_NODE_MESSAGE;
    const id = ids[0];
    const auth = auths[0];
    if (typeof id !== 'string' || typeof auth !== 'string' || !NODE_ID.test(id) || !HMAC_HEX.test(auth))
      return MALFORMED_NODE_MESSAGE;
    const nodeId = Number(id);
    if (nodeId > INT32_MAX) return MALFORMED_NODE_MESSAGE;
    const expected = hmacOf(this.secret, nodeId);
    // Both are 32 bytes (the format check above), so the comparison's time says nothing about the HMAC.
    if (!timingSafeEqual(Buffer.from(auth, 'hex'), expected)) return WRONG_NODE_MESSAGE;
    this.proven.set(metadata, nodeId);
    return nodeId;
  }
}

/** What the Broker's handlers ask of a call's node credentials. */
export interface NodeAuthenticator {
  authenticate(metadata: Metadata): number | string;
}

/**
 * The check of a server without a cluster secret: a call with node credentials is refused (they cannot be
 * checked, and a node that sends them expects them to count), any other call is a client's.
 */
export const NO_CLUSTER_SECRET: NodeAuthenticator = Object.freeze({
  authenticate(metadata: Metadata): number | string {
    return hasNodeCredentials(metadata) ? UNCHECKABLE_NODE_MESSAGE : NOT_A_NODE;
  },
});
