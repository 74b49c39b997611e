export { DelayedOperation } from './delayed-operation';
export {
  DelayedOperationPurgatory,
  DEFAULT_PURGE_INTERVAL,
  DEFAULT_PURGE_WORK_PER_CALL,
} from './delayed-operation-purgatory';
export type { PurgatoryOptions } from './delayed-operation-purgatory';
export type { PurgatoryStats } from './purgatory-stats';
