/** What the Kafka door uses of the record batch codec. */
export { CompressionCodec, compress, decompress, isCompressionCodec } from './compression';
export {
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  KAFKA_RECORD_BATCH_MAGIC,
  NO_TIMESTAMP,
  type DecodeOptions,
  type EncodeOptions,
  type KafkaRecord,
  type KafkaRecordBatch,
  type KafkaRecordHeader,
  type KafkaRecordInput,
} from './kafka-record-batch';
export { KafkaRecordsError, type KafkaRecordsReason } from './kafka-records-error';
export { fromFetchedRecords, toProduceRecords, type FetchEncodeOptions } from './record-conversion';
