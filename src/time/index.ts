export type { Time } from './time';
export { SystemTime, SYSTEM_TIME } from './system-time';
export { ManualTime } from './manual-time';
export { RunningManualTime } from './running-manual-time';
export { DEFAULT_TURN_BUDGET_MS, TurnBudget, type TurnBudgetOptions } from './turn-budget';
