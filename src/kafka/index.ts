export type { KafkaCore, KafkaNode } from './kafka-broker';
export { KafkaListener } from './kafka-listener';
export type { KafkaBoundAddress, KafkaListenerOptions, WireTraceEntry } from './kafka-listener';
