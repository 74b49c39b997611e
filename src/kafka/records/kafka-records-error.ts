import { CohortError, ErrorCode } from '../../errors';

/**
 * Why a client's record bytes were refused. Each reason has one Kafka error code (REASON_CODES), which
 * the door puts in the partition's Produce response:
 *
 * - `truncated`, `invalid-length`, `crc-mismatch`, `corrupt-compression`: the bytes are damaged (Kafka's
 *   CorruptRecordException, CORRUPT_MESSAGE 2). Clients retry it: a batch damaged in transit may arrive
 *   whole next time.
 * - `unsupported-magic`: a magic 0/1 MessageSet. Kafka's broker answers a Produce v3+ holding one with
 *   InvalidRecordException ("only allowed to contain record batches with magic version 2"), which is
 *   INVALID_RECORD 87 since Kafka 2.5 (KIP-467; before, that exception was a CorruptRecordException and
 *   so CORRUPT_MESSAGE). Not UNSUPPORTED_FOR_MESSAGE_FORMAT 43: Kafka keeps that for a request a
 *   topic's configured message format cannot hold. INVALID_RECORD is also not retriable, so a client
 *   does not resend a batch that can never be taken.
 * - `invalid-record`, `unsupported-compression`: a batch whose CRC holds but whose fields are impossible
 *   (Kafka's InvalidRecordException, INVALID_RECORD 87).
 * - `transactional`, `control`: cohort has no transactions (nor a transaction coordinator), and a client
 *   may never write control batches; Kafka refuses the latter with INVALID_RECORD, and so does cohort
 *   for both.
 * - `too-large`: the records would decompress to more than the caller's limit (a decompression bomb):
 *   MESSAGE_TOO_LARGE 10, not retriable.
 * - `zstd-before-produce-v7`: zstd in a Produce older than v7, which Kafka refuses with
 *   UnsupportedCompressionTypeException (UNSUPPORTED_COMPRESSION_TYPE 76): a client that cannot negotiate
 *   v7 is one Kafka will not send zstd to either.
 */
export type KafkaRecordsReason =
  | 'truncated'
  | 'invalid-length'
  | 'crc-mismatch'
  | 'corrupt-compression'
  | 'unsupported-magic'
  | 'invalid-record'
  | 'unsupported-compression'
  | 'transactional'
  | 'control'
  | 'too-large'
  | 'zstd-before-produce-v7';

const REASON_CODES: Readonly<Record<KafkaRecordsReason, ErrorCode>> = {
  truncated: ErrorCode.CORRUPT_MESSAGE,
  'invalid-length': ErrorCode.CORRUPT_MESSAGE,
  'crc-mismatch': ErrorCode.CORRUPT_MESSAGE,
  'corrupt-compression': ErrorCode.CORRUPT_MESSAGE,
  'unsupported-magic': ErrorCode.INVALID_RECORD,
  'invalid-record': ErrorCode.INVALID_RECORD,
  'unsupported-compression': ErrorCode.INVALID_RECORD,
  transactional: ErrorCode.INVALID_RECORD,
  control: ErrorCode.INVALID_RECORD,
  'too-large': ErrorCode.MESSAGE_TOO_LARGE,
  'zstd-before-produce-v7': ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
};

/**
 * Record bytes from a client that cohort will not take. A CohortError, so `code` is the Kafka error code
 * for the partition's response; `reason` says which check failed (for logs, metrics and tests). The
 * message is for cohort's log, not for the client.
 */
export class KafkaRecordsError extends CohortError {
  readonly reason: KafkaRecordsReason;

  constructor(reason: KafkaRecordsReason, message: string, options?: { cause?: unknown }) {
    super(REASON_CODES[reason], message, options);
    this.name = 'KafkaRecordsError';
    this.reason = reason;
  }
}
