import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { readCheckpointFile, writeCheckpointFileSync } from './checkpoint-file';

/**
 * Whose data a data directory holds (Kafka's `meta.properties`): written once, crash-safely, the first
 * time a server starts on the directory, and checked at every start after, before any log is opened. A
 * node started on a copy of another cluster's or another node's directory would otherwise serve that
 * cluster's records where its own cluster acknowledged others: both histories start at leader epoch 0,
 * so epoch-based truncation cannot tell them apart.
 *
 *     version=1
 *     mode=cluster                 cluster: a node of a cluster on etcd; single: a server on its own
 *     cluster.id=payments          --cluster-id, the cluster's name (its etcd prefix); cluster mode only
 *     cluster.uuid=6f1c…           random, made once when the cluster (or the single server) was created
 *     node.id=3                    --node-id
 *
 * The name says which cluster the operator meant; the uuid tells apart two clusters of the same name
 * (each etcd holds the uuid of the cluster it keeps: `/<cluster-id>/cluster`). A cluster node learns
 * the uuid from etcd, so its file is written only once etcd has confirmed it (`DataDirIdentity` with
 * `clusterUuid`), while a directory written before identities existed is adopted then.
 */
export const DATA_DIR_IDENTITY_FILE = 'meta.properties';

const VERSION = 1;

export type DataDirMode = 'single' | 'cluster';

export interface DataDirIdentity {
  readonly mode: DataDirMode;
  /** `--cluster-id` in cluster mode; '' for a single server. */
  readonly clusterId: string;
  readonly clusterUuid: string;
  readonly nodeId: number;
}

/** What the server is configured as, to be held against the directory's identity. */
export interface ExpectedIdentity {
  readonly mode: DataDirMode;
  readonly clusterId: string;
  readonly nodeId: number;
}

/** The directory belongs to another cluster, node or mode: the server must not start on it. */
export class ForeignDataDirError extends Error {
  constructor(
    readonly dataDir: string,
    readonly found: DataDirIdentity,
    readonly expected: ExpectedIdentity,
    reason: string,
  ) {
    super(
      `data directory ${dataDir} ${reason}. Its ${DATA_DIR_IDENTITY_FILE} says ${describe(found)}; this ` +
        `server is ${describeExpected(expected)}. Start this server on its own directory (an empty ` +
        '--data-dir makes a new replica that copies its partitions from the leaders), or start it with the ' +
        'settings that directory was written with.',
    );
    this.name = 'ForeignDataDirError';
  }
}

/** The identity file exists but cannot be read as one: nothing is assumed about whose data this is. */
export class UnreadableDataDirIdentityError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(
      `${file} ${reason}: cannot tell which cluster and node this data directory belongs to. Restore the ` +
        'file (docs/operations.md, "Cluster identity", gives its format), or move the directory aside.',
    );
    this.name = 'UnreadableDataDirIdentityError';
  }
}

/** A new random cluster uuid, for a cluster (or a single server) created now. */
export function newClusterUuid(): string {
  return randomUUID();
}

/** The directory's identity, or undefined when it has none (new, or written before identities existed). */
export function readDataDirIdentity(dataDir: string): DataDirIdentity | undefined {
  const file = path.join(dataDir, DATA_DIR_IDENTITY_FILE);
  const text = readCheckpointFile(file);
  if (text === null) return undefined;
  const fields = new Map<string, string>();
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const equals = line.indexOf('=');
    if (equals <= 0)
      throw new UnreadableDataDirIdentityError(file, `has a line that is not key=value: ${line}`);
    fields.set(line.slice(0, equals).trim(), line.slice(equals + 1).trim());
  }
  const version = fields.get('version');
  if (version !== String(VERSION)) {
    throw new UnreadableDataDirIdentityError(file, `has version ${version ?? '(none)'}, not ${VERSION}`);
  }
  const mode = fields.get('mode');
  if (mode !== 'single' && mode !== 'cluster') {
    throw new UnreadableDataDirIdentityError(file, `has mode ${mode ?? '(none)'}, not single or cluster`);
  }
  const clusterId = fields.get('cluster.id') ?? '';
  if (mode === 'cluster' && clusterId === '')
    throw new UnreadableDataDirIdentityError(file, 'has no cluster.id');
  const clusterUuid = fields.get('cluster.uuid') ?? '';
  if (clusterUuid === '') throw new UnreadableDataDirIdentityError(file, 'has no cluster.uuid');
  const nodeIdText = fields.get('node.id') ?? '';
  const nodeId = Number(nodeIdText);
  if (!/^\d+$/.test(nodeIdText) || !Number.isSafeInteger(nodeId)) {
    throw new UnreadableDataDirIdentityError(file, `has node.id ${nodeIdText || '(none)'}, not a node id`);
  }
  return { mode, clusterId, clusterUuid, nodeId };
}

/** Writes the directory's identity durably (temporary file, fsync, rename, directory fsync). */
export function writeDataDirIdentity(dataDir: string, identity: DataDirIdentity): void {
  const lines = [
    '# Whose data this directory holds: checked at every start. Do not edit or copy it to another node.',
    `version=${VERSION}`,
    `mode=${identity.mode}`,
    ...(identity.mode === 'cluster' ? [`cluster.id=${identity.clusterId}`] : []),
    `cluster.uuid=${identity.clusterUuid}`,
    `node.id=${identity.nodeId}`,
  ];
  writeCheckpointFileSync(path.join(dataDir, DATA_DIR_IDENTITY_FILE), `${lines.join('\n')}\n`);
}

/**
 * Holds the directory's identity against the server's settings: throws ForeignDataDirError when the
 * directory is another mode's, another cluster's (by name) or another node's. The cluster uuid is
 * checked against etcd's later, by the cluster layer.
 */
export function checkDataDirIdentity(
  dataDir: string,
  found: DataDirIdentity,
  expected: ExpectedIdentity,
): void {
  if (found.mode !== expected.mode) {
    throw new ForeignDataDirError(
      dataDir,
      found,
      expected,
      found.mode === 'single'
        ? "holds a single server's data, not a cluster node's"
        : "holds a cluster node's data, not a single server's",
    );
  }
  if (found.mode === 'cluster' && found.clusterId !== expected.clusterId) {
    throw new ForeignDataDirError(dataDir, found, expected, `belongs to cluster ${found.clusterId}`);
  }
  if (found.nodeId !== expected.nodeId) {
    throw new ForeignDataDirError(dataDir, found, expected, `belongs to node ${found.nodeId}`);
  }
}

function describe(identity: DataDirIdentity): string {
  return identity.mode === 'single'
    ? `a single server, node.id ${identity.nodeId}, cluster.uuid ${identity.clusterUuid}`
    : `node ${identity.nodeId} of cluster ${identity.clusterId} (cluster.uuid ${identity.clusterUuid})`;
}

function describeExpected(expected: ExpectedIdentity): string {
  return expected.mode === 'single'
    ? `a single server (no --etcd-endpoints) with --node-id ${expected.nodeId}`
    : `node ${expected.nodeId} of cluster ${expected.clusterId} (--node-id ${expected.nodeId}, --cluster-id ${expected.clusterId})`;
}
