import type { Partition } from './partition';

/** How delayed operations find a partition by key: they re-check it at every try, as it may be gone. */
export interface PartitionLookup {
  getPartition(key: string): Partition | undefined;
}
