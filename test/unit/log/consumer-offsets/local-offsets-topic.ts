import type {
  ConsumerOffsetsWriter,
  ConsumerOffsetsWriterOptions,
} from '../../../../src/log/consumer-offsets';
import type { OffsetsTopicStartup } from '../../../../src/log';
import { ReplicaManager } from '../../../../src/log';
import type { LogConfig, LogRecoveryOptions } from '../../../../src/log/storage';
import type { Time } from '../../../../src/time';
import { ReplayedPartition, type ReplayedPartitionOptions } from '../../../support/replayed-partition';

export interface LocalOffsetsTopicOptions {
  readonly time: Time;
  /** Partitions when the data directory has none (default 1). */
  readonly numPartitions?: number;
  readonly logConfig?: Partial<LogConfig>;
  readonly writer?: Omit<ConsumerOffsetsWriterOptions, 'leaderEpoch'>;
  /** What each partition's ReplayedPartition (over its writer) is made with. */
  readonly store?: ReplayedPartitionOptions;
  readonly recovery?: LogRecoveryOptions;
  readonly commitTimeoutMs?: number;
}

/** What the OffsetsTopicListener was told, in order. */
export type OffsetsTopicCall =
  | { readonly call: 'election'; readonly partitionIndex: number; readonly leaderEpoch: number }
  | { readonly call: 'resignation'; readonly partitionIndex: number; readonly leaderEpoch: number };

/**
 * A single-node ReplicaManager (node 0, one replica) on `dataDir` hosting `__consumer_offsets`, started:
 * every partition elected at epoch 0, the way a cohort server runs without a cluster. Each elected
 * partition's writer comes with the group layer's records over it (a ReplayedPartition, in place of the
 * coordinator shard the server elects); they are not loaded (the caller loads them).
 */
export class LocalOffsetsTopic {
  readonly manager: ReplicaManager;
  readonly writers = new Map<number, ConsumerOffsetsWriter>();
  readonly stores = new Map<number, ReplayedPartition>();
  readonly calls: OffsetsTopicCall[] = [];
  readonly errors: unknown[] = [];
  startup: OffsetsTopicStartup | undefined;

  constructor(dataDir: string, options: LocalOffsetsTopicOptions) {
    this.manager = new ReplicaManager(
      {
        nodeId: 0,
        minInsyncReplicas: 1,
        replicaLagTimeMaxMs: 10_000,
        dataDir,
        logConfig: {},
      },
      {
        time: options.time,
        ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
        listener: { onError: (error) => this.errors.push(error) },
        offsetsTopic: {
          numPartitions: options.numPartitions ?? 1,
          ...(options.logConfig === undefined ? {} : { logConfig: options.logConfig }),
          ...(options.writer === undefined ? {} : { writer: options.writer }),
          ...(options.commitTimeoutMs === undefined ? {} : { commitTimeoutMs: options.commitTimeoutMs }),
          onStartup: (info) => (this.startup = info),
          listener: {
            onElection: (partitionIndex, leaderEpoch, writer) => {
              this.calls.push({ call: 'election', partitionIndex, leaderEpoch });
              this.writers.set(partitionIndex, writer);
              this.stores.set(partitionIndex, new ReplayedPartition(writer, options.store));
            },
            onResignation: (partitionIndex, leaderEpoch) => {
              this.calls.push({ call: 'resignation', partitionIndex, leaderEpoch });
              this.writers.delete(partitionIndex);
              this.stores.delete(partitionIndex);
            },
          },
        },
      },
    );
    this.manager.startup();
  }

  /** Partition `partitionIndex`'s records (throws if it is not led here). */
  store(partitionIndex = 0): ReplayedPartition {
    const store = this.stores.get(partitionIndex);
    if (store === undefined) throw new Error(`partition ${partitionIndex} is not led here`);
    return store;
  }

  /** Partition `partitionIndex`'s writer (throws if it is not led here). */
  writer(partitionIndex = 0): ConsumerOffsetsWriter {
    const writer = this.writers.get(partitionIndex);
    if (writer === undefined) throw new Error(`partition ${partitionIndex} is not led here`);
    return writer;
  }

  /** Shuts the manager down and closes every log (fsynced). */
  close(): Promise<void> {
    return this.manager.close();
  }
}
