// Plain aligned tables for terminals: two spaces between columns, no borders.
export function renderTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** "a long detail" → "a long d…": at most `max` characters, the cut said with an ellipsis. */
export function ellipsize(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/**
 * renderTable within `width` columns, as kubectl and squeue print: every column but the
 * last cut at its limit, the last one given what is left. Commands offer --wide for the rest.
 */
export function renderFittedTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  limits: readonly number[],
  width: number,
): string {
  const cut = rows.map((r) => r.map((c, i) => (i < limits.length ? ellipsize(c, limits[i]!) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cut.map((r) => (r[i] ?? '').length)));
  const last = header.length - 1;
  const before = widths.slice(0, last).reduce((a, w) => a + w + 2, 0);
  const room = Math.max(header[last]!.length, width - before);
  return renderTable(
    header,
    cut.map((r) => r.map((c, i) => (i === last ? ellipsize(c, room) : c))),
  );
}

/** The width a default table fits: the terminal's, between 80 and 120 columns; 120 into a pipe. */
export function tableWidth(): number {
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  return Math.min(120, Math.max(80, columns ?? 120));
}
