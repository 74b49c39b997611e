export { TimerTask } from './timer-task';
export type { Timer } from './timer';
export { SystemTimer, DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, MAX_DELAY_MS } from './system-timer';
export type { SystemTimerOptions } from './system-timer';
export { TimingWheel } from './timing-wheel';
export { TimerTaskList } from './timer-task-list';
export type { TaskCounter } from './timer-task-list';
export { BucketQueue } from './bucket-queue';
export { TimerAction } from './timer-action';
