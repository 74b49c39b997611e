export type { Time } from './time';
export { SystemTime, SYSTEM_TIME } from './system-time';
export { ManualTime } from './manual-time';
