/**
 * Renders rows as a table with a header, columns padded to their widest cell (as Kafka's tools print
 * them). `null` and `undefined` cells print as `-`.
 */
export function renderTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [headers, ...rows.map((row) => row.map(cellText))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : (cell ?? '').padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.join(',');
  return String(value);
}

/**
 * One JSON document on one line. Offsets (bigint in the SDK) become JSON numbers: cohort refuses any beyond
 * 2^53 - 1, so they are exact; Buffers become UTF-8 strings.
 */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return Number(v);
    if (v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer' && 'data' in v) {
      return Buffer.from((v as { data: number[] }).data).toString('utf8');
    }
    return v;
  })}\n`;
}
