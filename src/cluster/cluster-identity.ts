import { MetadataStoreError, type Compare, type KeyValue, type MetadataStore } from './metadata-store';

/**
 * The cluster's identity in etcd: `/<cluster-id>/cluster` = `{"clusterUuid":"…"}`, created once, by the
 * first node that starts on an empty etcd with an empty data directory (Kafka writes its cluster id into
 * its metadata log at format time; here etcd holds it). Every node keeps the same uuid in its data
 * directory's `meta.properties`, and the two are held against each other:
 *
 * - A node whose directory names another uuid than etcd's holds another cluster's data (a copied or
 *   swapped directory, or an etcd that was wiped and re-created by a new node): it must not join.
 * - A node whose directory names a uuid while etcd has no identity at all is looking at an etcd that lost
 *   the cluster's metadata (its data wiped, or a new etcd at the old address). Creating a new, empty
 *   cluster over the nodes' data would make every topic vanish and start its leader epochs again at 0,
 *   below what the logs hold: the node waits instead, unready, until the metadata is restored
 *   (docs/operations.md, "When etcd loses the cluster's metadata").
 *
 * The check is not only made once at start: a node registers (`nodes/<id>`) only in a transaction that
 * compares the identity's value, and the view applies only reads that hold it, so an etcd that loses its
 * data under a running cluster stops every node from acting on the empty one.
 */
export function clusterIdentityKey(clusterId: string): string {
  return `/${clusterId}/cluster`;
}

/**
 * Where nodes that found the identity missing report their replicas (`metadata-recovery.ts`): while any
 * report is there, etcd has lost a cluster that still exists, and no node creates a new identity.
 */
export function recoveryReportPrefix(clusterId: string): string {
  return `/${clusterId}/recovery/`;
}

/** The identity's value, in the one form every writer uses (the registration compares it byte for byte). */
export function encodeClusterIdentity(clusterUuid: string): string {
  return JSON.stringify({ clusterUuid });
}

/** The uuid in an identity value, or undefined when the value is not one. */
export function decodeClusterIdentity(value: string): string | undefined {
  try {
    const parsed = JSON.parse(value) as { clusterUuid?: unknown } | null;
    return typeof parsed?.clusterUuid === 'string' && parsed.clusterUuid !== ''
      ? parsed.clusterUuid
      : undefined;
  } catch {
    return undefined;
  }
}

/** A compare that holds only while etcd's identity is `clusterUuid`'s (false when the key is missing). */
export function identityCompare(clusterId: string, clusterUuid: string): Compare {
  return {
    key: clusterIdentityKey(clusterId),
    target: 'value',
    result: 'equal',
    operand: encodeClusterIdentity(clusterUuid),
  };
}

/** What etcd said about the cluster's identity, held against the data directory's. */
export type ClusterIdentityOutcome =
  /** etcd's identity is the directory's (or was adopted, or created now): the node may register. */
  | { readonly outcome: 'confirmed'; readonly clusterUuid: string; readonly isCreated: boolean }
  /** etcd has no identity while the directory names one: etcd lost the cluster's metadata. */
  | { readonly outcome: 'missing'; readonly localUuid: string }
  /**
   * etcd has no identity, the directory none either, and other nodes reported their replicas for a
   * recovery: etcd lost a cluster this new node must not replace with a new one; it waits.
   */
  | { readonly outcome: 'recovering' }
  /** etcd's identity is another cluster's (or is not readable as one). */
  | { readonly outcome: 'foreign'; readonly etcdUuid: string; readonly localUuid: string };

/**
 * Reads etcd's identity and holds it against `localUuid`, the data directory's (undefined: the directory
 * has none yet). When etcd has none and neither has the directory, creates it with `newUuid()`, only if
 * absent and no node has reported for a recovery (of two nodes starting together, one creates and the
 * other adopts; a new node started while etcd has lost a running cluster waits with the others). Rejects with the store's
 * error when etcd cannot be reached; a creation whose answer was lost is resolved by reading again.
 */
export async function establishClusterIdentity(
  store: MetadataStore,
  clusterId: string,
  localUuid: string | undefined,
  newUuid: () => string,
): Promise<ClusterIdentityOutcome> {
  const key = clusterIdentityKey(clusterId);
  for (;;) {
    const { kv } = await store.get(key);
    if (kv !== undefined) return held(kv, localUuid);
    if (localUuid !== undefined) return { outcome: 'missing', localUuid };
    const created = newUuid();
    const reports = recoveryReportPrefix(clusterId);
    try {
      const response = await store.txn({
        compare: [
          { key, target: 'createRevision', result: 'equal', operand: 0 },
          { key: reports, prefix: true, target: 'createRevision', result: 'equal', operand: 0 },
        ],
        success: [{ type: 'put', key, value: encodeClusterIdentity(created) }],
        failure: [
          { type: 'get', key },
          { type: 'get', key: reports, prefix: true },
        ],
      });
      if (response.succeeded) return { outcome: 'confirmed', clusterUuid: created, isCreated: true };
      const [existing, reported] = response.results;
      if (existing?.type === 'get' && existing.kvs[0] !== undefined) return held(existing.kvs[0], localUuid);
      if (reported?.type === 'get' && reported.kvs.length > 0) return { outcome: 'recovering' };
    } catch (error) {
      if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
      // Applied or not: the next read tells (ours, or another node's that won).
      const { kv: after } = await store.get(key);
      if (after !== undefined) {
        const uuid = decodeClusterIdentity(after.value);
        if (uuid === created) return { outcome: 'confirmed', clusterUuid: created, isCreated: true };
        return held(after, localUuid);
      }
    }
  }
}

function held(kv: KeyValue, localUuid: string | undefined): ClusterIdentityOutcome {
  const etcdUuid = decodeClusterIdentity(kv.value);
  if (etcdUuid === undefined) {
    return {
      outcome: 'foreign',
      etcdUuid: `(unreadable: ${kv.value.slice(0, 80)})`,
      localUuid: localUuid ?? '',
    };
  }
  if (localUuid !== undefined && localUuid !== etcdUuid) return { outcome: 'foreign', etcdUuid, localUuid };
  return { outcome: 'confirmed', clusterUuid: etcdUuid, isCreated: false };
}

/** etcd has no identity for the cluster, or another one: the node does not register. */
export class ClusterIdentityError extends Error {
  constructor(
    readonly clusterId: string,
    readonly expectedUuid: string,
    readonly foundUuid: string | undefined,
    /** The identity's value when its uuid is ours but the value is not in cohort's form. */
    readonly malformedValue?: string,
  ) {
    super(
      malformedValue !== undefined
        ? `${clusterIdentityKey(clusterId)} names this cluster's uuid ${expectedUuid} but not in the form ` +
            `${encodeClusterIdentity(expectedUuid)}: the node does not register until it is (write it so)`
        : foundUuid === undefined
          ? `etcd has lost cluster ${clusterId}'s metadata: ${clusterIdentityKey(clusterId)} is missing while ` +
            `this node's data belongs to cluster.uuid ${expectedUuid}. The node waits, unready, and will not ` +
            'build a new cluster over its data; restore the metadata (docs/operations.md, "When etcd loses ' +
            'the cluster\'s metadata")'
          : `etcd's cluster ${clusterId} is cluster.uuid ${foundUuid}, but this node's data belongs to ` +
            `cluster.uuid ${expectedUuid}: the data directory is another cluster's, or etcd's cluster was ` +
            'created anew. The node does not join it',
    );
    this.name = 'ClusterIdentityError';
  }
}
