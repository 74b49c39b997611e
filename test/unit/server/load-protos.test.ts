import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProtoDir, PROTO_DIR, PROTO_FILES } from '../../../src/server/load-protos';

describe('findProtoDir', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cohort-protos-'));
    mkdirSync(join(root, 'proto', 'cohort', 'v1'), { recursive: true });
    writeFileSync(join(root, 'proto', PROTO_FILES[0]), 'syntax = "proto3";\n');
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('finds proto/ from the source tree and from the compiled tree, which sit at different depths', () => {
    mkdirSync(join(root, 'src', 'server'), { recursive: true });
    mkdirSync(join(root, 'dist', 'src', 'server'), { recursive: true });
    expect(findProtoDir(join(root, 'src', 'server'))).toBe(join(root, 'proto'));
    expect(findProtoDir(join(root, 'dist', 'src', 'server'))).toBe(join(root, 'proto'));
  });

  it('says which file it looked for when there is no proto/ above the directory', () => {
    rmSync(join(root, 'proto'), { recursive: true });
    expect(() => findProtoDir(root)).toThrow(`cannot find proto/${PROTO_FILES[0]} above ${root}`);
  });

  it("resolves this package's proto/ to the repository's", () => {
    expect(PROTO_DIR).toBe(join(__dirname, '..', '..', '..', 'proto'));
  });
});
