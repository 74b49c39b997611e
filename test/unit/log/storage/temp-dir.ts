import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A fresh directory under the OS temp dir; `removeTempDir` deletes it. */
export function makeTempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-storage-'));
}

export function removeTempDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
