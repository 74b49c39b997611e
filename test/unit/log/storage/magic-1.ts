import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { RecordBatch } from '../../../../src/log/storage/record-batch';

/**
 * Batches and data directories as cohort wrote them before leader epochs (record batch magic 1): the
 * magic 2 layout without the 4-byte partitionLeaderEpoch at byte 43. record-batch.prop.test.ts checks
 * this conversion against bytes the magic 1 encoder produced.
 */
export function toMagic1(batch: RecordBatch): Buffer {
  const v2 = batch.buffer;
  const v1 = Buffer.concat([v2.subarray(0, 43), v2.subarray(47)]);
  v1.writeInt32BE(v1.length - 12, 8);
  v1[12] = 1;
  v1.writeUInt32BE(crc32(v1.subarray(17), crc32(v1.subarray(0, 13))), 13);
  return v1;
}

/**
 * Rewrites every segment of a closed log in `dir` in magic 1 and removes what that version did not have
 * or what the rewrite made stale: the leader-epoch and high-watermark checkpoints and the offset indexes
 * (their positions moved; an open rebuilds them).
 */
export function downgradeToMagic1(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    if (
      name.endsWith('.index') ||
      name === 'leader-epoch-checkpoint' ||
      name === 'high-watermark-checkpoint'
    ) {
      fs.rmSync(file);
      continue;
    }
    if (!name.endsWith('.log')) continue;
    const bytes = fs.readFileSync(file);
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 12 + bytes.readInt32BE(at + 8);
      out.push(toMagic1(RecordBatch.fromBuffer(bytes.subarray(at, at + size))));
      at += size;
    }
    fs.writeFileSync(file, Buffer.concat(out));
  }
}
