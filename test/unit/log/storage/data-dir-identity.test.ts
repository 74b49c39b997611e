import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  checkDataDirIdentity,
  DATA_DIR_IDENTITY_FILE,
  ForeignDataDirError,
  readDataDirIdentity,
  UnreadableDataDirIdentityError,
  writeDataDirIdentity,
  type DataDirIdentity,
} from '../../../../src/log/storage';
import { makeTempDir, removeTempDir } from './temp-dir';

let dir: string;
beforeEach(() => {
  dir = makeTempDir();
});
afterEach(() => removeTempDir(dir));

const node3: DataDirIdentity = { mode: 'cluster', clusterId: 'payments', clusterUuid: 'uuid-a', nodeId: 3 };
const file = (): string => path.join(dir, DATA_DIR_IDENTITY_FILE);

describe('the data directory identity (meta.properties)', () => {
  it('is absent in a new directory, and reads back what was written', () => {
    expect(readDataDirIdentity(dir)).toBeUndefined();
    writeDataDirIdentity(dir, node3);
    expect(readDataDirIdentity(dir)).toEqual(node3);
    const single: DataDirIdentity = { mode: 'single', clusterId: '', clusterUuid: 'uuid-s', nodeId: 0 };
    writeDataDirIdentity(dir, single);
    expect(readDataDirIdentity(dir)).toEqual(single);
    expect(fs.readFileSync(file(), 'utf8')).not.toContain('cluster.id=');
  });

  it('is written as key=value lines, and a temporary file a crash left is not read', () => {
    writeDataDirIdentity(dir, node3);
    expect(fs.readFileSync(file(), 'utf8')).toMatch(
      /version=1\nmode=cluster\ncluster\.id=payments\ncluster\.uuid=uuid-a\nnode\.id=3\n$/,
    );
    fs.writeFileSync(`${file()}.tmp`, 'version=1\nmode=cluster\ncluster.id=other\n');
    expect(readDataDirIdentity(dir)).toEqual(node3);
    expect(fs.existsSync(`${file()}.tmp`)).toBe(false);
  });

  it.each([
    ['garbage', 'not a property file'],
    ['another version', 'version=2\nmode=cluster\ncluster.id=a\ncluster.uuid=u\nnode.id=1\n'],
    ['no uuid', 'version=1\nmode=cluster\ncluster.id=a\nnode.id=1\n'],
    ['no cluster name in cluster mode', 'version=1\nmode=cluster\ncluster.uuid=u\nnode.id=1\n'],
    ['a node id that is not one', 'version=1\nmode=single\ncluster.uuid=u\nnode.id=-1\n'],
    ['an unknown mode', 'version=1\nmode=both\ncluster.uuid=u\nnode.id=1\n'],
  ])('refuses a file with %s, naming the file', (_, text) => {
    fs.writeFileSync(file(), text);
    expect(() => readDataDirIdentity(dir)).toThrow(UnreadableDataDirIdentityError);
    expect(() => readDataDirIdentity(dir)).toThrow(file());
  });

  it("accepts the directory of the same cluster's same node", () => {
    expect(() =>
      checkDataDirIdentity(dir, node3, { mode: 'cluster', clusterId: 'payments', nodeId: 3 }),
    ).not.toThrow();
  });

  it("refuses another cluster's directory, naming both clusters and what to do", () => {
    const check = (): void =>
      checkDataDirIdentity(dir, node3, { mode: 'cluster', clusterId: 'billing', nodeId: 3 });
    expect(check).toThrow(ForeignDataDirError);
    expect(check).toThrow(/belongs to cluster payments/);
    expect(check).toThrow(/node 3 of cluster billing/);
    expect(check).toThrow(/--data-dir/);
  });

  it("refuses another node's directory, naming both node ids", () => {
    const check = (): void =>
      checkDataDirIdentity(dir, node3, { mode: 'cluster', clusterId: 'payments', nodeId: 2 });
    expect(check).toThrow(/belongs to node 3/);
    expect(check).toThrow(/--node-id 2/);
  });

  it("refuses a single server's directory for a cluster node, and the reverse", () => {
    const single: DataDirIdentity = { mode: 'single', clusterId: '', clusterUuid: 'u', nodeId: 3 };
    expect(() =>
      checkDataDirIdentity(dir, single, { mode: 'cluster', clusterId: 'payments', nodeId: 3 }),
    ).toThrow(/single server's data/);
    expect(() => checkDataDirIdentity(dir, node3, { mode: 'single', clusterId: '', nodeId: 3 })).toThrow(
      /cluster node's data/,
    );
  });
});
