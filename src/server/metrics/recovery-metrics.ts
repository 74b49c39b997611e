import { Counter, type Registry } from 'prom-client';
import type { LogTruncationKind } from '../../log/storage';

const TRUNCATION_KINDS: readonly LogTruncationKind[] = ['torn_tail', 'corrupt', 'overlap'];

/**
 * What recovery repaired, counted (docs/operations.md, "Damaged files"): every cut a log's open made, by
 * kind, and its bytes; every index rebuilt; every batch or record the `__consumer_offsets` load skipped;
 * every checkpoint (recovery point, leader epochs, high watermark) that could not be read or written. Fed by `storageRecoveryLog`; all
 * start at 0 so an alert can watch them from the first scrape.
 */
export class RecoveryMetrics {
  private readonly truncations: Counter<'kind'>;
  private readonly truncatedBytes: Counter<'kind'>;
  private readonly indexRebuilds: Counter;
  private readonly corruptRecords: Counter<'kind'>;
  private readonly checkpointErrors: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.truncations = new Counter({
      name: 'cohort_log_recovery_truncations_total',
      help:
        'Cuts made while opening a log, by kind: torn_tail (a crash left it past the recovery point), ' +
        'corrupt (damaged fsynced data removed under --truncate-corrupt-logs, or in __consumer_offsets), ' +
        'overlap (a segment running into the next).',
      labelNames: ['kind'],
      registers,
    });
    this.truncatedBytes = new Counter({
      name: 'cohort_log_recovery_truncated_bytes_total',
      help: 'Bytes those cuts removed, segments deleted with a torn tail included, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.indexRebuilds = new Counter({
      name: 'cohort_log_index_rebuilds_total',
      help: 'Offset indexes rebuilt, wholly or in part, while opening a log (missing, wrong or behind the log).',
      registers,
    });
    this.corruptRecords = new Counter({
      name: 'cohort_consumer_offsets_corrupt_records_total',
      help:
        'What the __consumer_offsets load skipped, by kind: batch (bytes holding no valid batch) or ' +
        'record (a record whose key or value could not be decoded).',
      labelNames: ['kind'],
      registers,
    });
    this.checkpointErrors = new Counter({
      name: 'cohort_log_recovery_checkpoint_errors_total',
      help: 'Checkpoints (recovery point, leader epochs, high watermark) that could not be read or written.',
      registers,
    });
    for (const kind of TRUNCATION_KINDS) {
      this.truncations.inc({ kind }, 0);
      this.truncatedBytes.inc({ kind }, 0);
    }
    this.indexRebuilds.inc(0);
    this.corruptRecords.inc({ kind: 'batch' }, 0);
    this.corruptRecords.inc({ kind: 'record' }, 0);
    this.checkpointErrors.inc(0);
  }

  onTruncation(kind: LogTruncationKind, bytes: number): void {
    this.truncations.inc({ kind });
    this.truncatedBytes.inc({ kind }, bytes);
  }

  onIndexRebuild(): void {
    this.indexRebuilds.inc();
  }

  onConsumerOffsetsCorrupt(kind: 'batch' | 'record'): void {
    this.corruptRecords.inc({ kind });
  }

  onCheckpointError(): void {
    this.checkpointErrors.inc();
  }
}
