import pino from 'pino';
import type { Logger } from 'pino';

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface CapturedLogger {
  readonly logger: Logger;
  /** Every line logged so far, parsed. */
  readonly lines: LogLine[];
}

/** A real pino logger writing parsed JSON lines into memory, so tests can assert on what was logged. */
export function captureLogger(level: pino.LevelWithSilent = 'info'): CapturedLogger {
  const lines: LogLine[] = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}
