import { join } from 'node:path';
import { RoundSet } from '../support/round-set';
import { startChild } from './child-rpc';
import type { MemoryFigures } from './memory-child';

/**
 * Memory per idle member: 100,000 members in 10,000 groups of 10, Stable, nothing parked, each round in a
 * fresh child process (bench/group/memory-child.ts). Bytes per member = (after − before) ÷ members, for
 * RSS (what the process really holds, allocator slack included) and for V8's heapUsed (live JS objects).
 */

export const MEMORY_GROUPS = 10_000;
export const MEMORY_GROUP_SIZE = 10;

export async function memberMemory(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    const child = startChild(join(__dirname, 'memory-child.ts'));
    try {
      const figures = await child.request<MemoryFigures>('build', {
        groups: MEMORY_GROUPS,
        groupSize: MEMORY_GROUP_SIZE,
      });
      const rssPerMember = (figures.rssAfterBytes - figures.rssBeforeBytes) / figures.members;
      const heapPerMember = (figures.heapUsedAfterBytes - figures.heapUsedBeforeBytes) / figures.members;
      set.record('rssBytesPerMember', rssPerMember);
      set.record('heapBytesPerMember', heapPerMember);
      set.record(
        'externalBytesPerMember',
        (figures.externalAfterBytes - figures.externalBeforeBytes) / figures.members,
      );
      set.record('rssAfterBytes', figures.rssAfterBytes);
      log(
        `  round ${r + 1}: ${figures.members} members formed in ${figures.formMs} ms; ` +
          `RSS ${Math.round(rssPerMember)} B/member, heap ${Math.round(heapPerMember)} B/member`,
      );
    } finally {
      await child.stop();
    }
  }
  return set;
}
