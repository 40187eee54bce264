// Plain-text table helpers shared by the planner's views and the CLI. Schema-free: the CLI
// loads this without TypeBox.

export const padStart = (s: string, width: number) => (s.length >= width ? s : ' '.repeat(width - s.length) + s);
export const padEnd = (s: string, width: number) => (s.length >= width ? s : s + ' '.repeat(width - s.length));

/** Left-aligned columns sized to their widest cell, two spaces apart. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : padEnd(c, widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** The IPv4 address inside an IPv4-mapped GID ("0000:…:ffff:0a00:0005" → "10.0.0.5"). */
export function gidIpv4(gid: string | null): string | null {
  if (!gid) return null;
  const m = /^0{1,4}:0{1,4}:0{1,4}:0{1,4}:0{1,4}:ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(gid);
  if (!m) return null;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}
