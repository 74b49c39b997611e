/**
 * Output shared by the benches: aligned human-readable lines while running, and ONE final line holding a
 * JSON object of the figures, which scripts (and docs/performance.md) take from the last line of output.
 */

/** Rounds to `digits` decimals, keeping figures in the JSON line short and stable. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function line(text = ''): void {
  process.stdout.write(`${text}\n`);
}

/** Prints rows as columns aligned on the widest cell; the first row is the header. */
export function table(rows: readonly (readonly (string | number)[])[]): void {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === 'number' ? formatNumber(cell) : cell)));
  const widths: number[] = [];
  for (const row of cells) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  for (const row of cells)
    line(
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : Math.abs(value) >= 1 ? 2 : 3;
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** "met" or "MISSED", for the summary tables. */
export function verdict(isMet: boolean): string {
  return isMet ? 'met' : 'MISSED';
}

/** The last line of a bench's output: its figures as one JSON object. */
export function printFigures(figures: Record<string, unknown>): void {
  line(JSON.stringify(figures));
}
