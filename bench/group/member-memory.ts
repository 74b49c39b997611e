import { join } from 'node:path';
import { RoundSet } from '../support/round-set';
import { startChild } from './child-rpc';
import type { MemoryFigures, MemoryPlan } from './memory-child';

/**
 * Memory per idle member: 100,000 members in 10,000 groups of 10, Stable, nothing parked, each round in a
 * fresh child process (bench/group/memory-child.ts). Bytes per member = (after − before) ÷ members, for
 * RSS (what the process really holds, allocator slack included) and for V8's heapUsed (live JS objects).
 */

export const MEMORY_GROUPS = 10_000;
export const MEMORY_GROUP_SIZE = 10;

/**
 * Each round builds the members twice, each time in a fresh process: requests decoded from buffers
 * allocated back to back (`packed`, figures without prefix), and each request decoded from its own 8 KiB
 * buffer (`slab…` figures), which is what retained `bytes` fields cost when members join among other
 * traffic (see MemoryPlan).
 */
export async function memberMemory(rounds: number, log: (text: string) => void): Promise<RoundSet> {
  const set = new RoundSet();
  for (let r = 0; r < rounds; r++) {
    for (const slabPerRequest of [false, true]) {
      const child = startChild(join(__dirname, 'memory-child.ts'));
      try {
        const plan: MemoryPlan = { groups: MEMORY_GROUPS, groupSize: MEMORY_GROUP_SIZE, slabPerRequest };
        const figures = await child.request<MemoryFigures>('build', plan);
        const perMember = (after: number, before: number): number => (after - before) / figures.members;
        const rss = perMember(figures.rssAfterBytes, figures.rssBeforeBytes);
        const heap = perMember(figures.heapUsedAfterBytes, figures.heapUsedBeforeBytes);
        const external = perMember(figures.externalAfterBytes, figures.externalBeforeBytes);
        const prefix = slabPerRequest ? 'slab' : '';
        const name = (figure: string): string =>
          prefix === '' ? figure : `${prefix}${figure[0].toUpperCase()}${figure.slice(1)}`;
        set.record(name('rssBytesPerMember'), rss);
        set.record(name('heapBytesPerMember'), heap);
        set.record(name('externalBytesPerMember'), external);
        log(
          `  round ${r + 1} (${slabPerRequest ? 'one 8 KiB buffer per request' : 'packed requests'}): ` +
            `${figures.members} members formed in ${figures.formMs} ms; RSS ${Math.round(rss)} B/member, ` +
            `heap ${Math.round(heap)}, external ${Math.round(external)}`,
        );
      } finally {
        await child.stop();
      }
    }
  }
  return set;
}
