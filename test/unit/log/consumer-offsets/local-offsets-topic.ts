import type { ConsumerOffsetsStore, ConsumerOffsetsStoreOptions } from '../../../../src/log/consumer-offsets';
import type { OffsetsTopicStartup } from '../../../../src/log';
import { ReplicaManager } from '../../../../src/log';
import type { LogConfig, LogRecoveryOptions } from '../../../../src/log/storage';
import type { Time } from '../../../../src/time';

export interface LocalOffsetsTopicOptions {
  readonly time: Time;
  /** Partitions when the data directory has none (default 1). */
  readonly numPartitions?: number;
  readonly logConfig?: Partial<LogConfig>;
  readonly store?: Omit<ConsumerOffsetsStoreOptions, 'leaderEpoch'>;
  readonly recovery?: LogRecoveryOptions;
  readonly commitTimeoutMs?: number;
}

/** What the OffsetsTopicListener was told, in order. */
export type OffsetsTopicCall =
  | { readonly call: 'election'; readonly partitionIndex: number; readonly leaderEpoch: number }
  | { readonly call: 'resignation'; readonly partitionIndex: number; readonly leaderEpoch: number };

/**
 * A single-node ReplicaManager (node 0, one replica) on `dataDir` hosting `__consumer_offsets`, started:
 * every partition elected at epoch 0, the way a cohort server runs without a cluster. Its stores are not
 * loaded (the caller loads them).
 */
export class LocalOffsetsTopic {
  readonly manager: ReplicaManager;
  readonly stores = new Map<number, ConsumerOffsetsStore>();
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
          ...(options.store === undefined ? {} : { store: options.store }),
          ...(options.commitTimeoutMs === undefined ? {} : { commitTimeoutMs: options.commitTimeoutMs }),
          onStartup: (info) => (this.startup = info),
          listener: {
            onElection: (partitionIndex, leaderEpoch, store) => {
              this.calls.push({ call: 'election', partitionIndex, leaderEpoch });
              this.stores.set(partitionIndex, store);
            },
            onResignation: (partitionIndex, leaderEpoch) => {
              this.calls.push({ call: 'resignation', partitionIndex, leaderEpoch });
              this.stores.delete(partitionIndex);
            },
          },
        },
      },
    );
    this.manager.startup();
  }

  /** Partition `partitionIndex`'s store (throws if it is not led here). */
  store(partitionIndex = 0): ConsumerOffsetsStore {
    const store = this.stores.get(partitionIndex);
    if (store === undefined) throw new Error(`partition ${partitionIndex} is not led here`);
    return store;
  }

  /** Shuts the manager down and closes every log (fsynced). */
  close(): Promise<void> {
    return this.manager.close();
  }
}
