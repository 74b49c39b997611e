/** pino's levels, most to least severe; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The validated, frozen configuration of one cohort server. The five group settings carry the field names
 * of the group layer's `GroupConfig`, so this object satisfies it structurally without importing it.
 */
export interface CohortConfig {
  /** HOST:PORT the gRPC server binds; port 0 picks a free port. */
  readonly listen: string;
  /** Where durable state will live (the log). */
  readonly dataDir: string;
  /** Time moves only through the TestClock service. */
  readonly manualClock: boolean;
  readonly logLevel: LogLevel;
  readonly groupMinSessionTimeoutMs: number;
  readonly groupMaxSessionTimeoutMs: number;
  readonly groupInitialRebalanceDelayMs: number;
  readonly groupMaxSize: number;
  readonly offsetMetadataMaxBytes: number;
}

export type ConfigKey = keyof CohortConfig;
