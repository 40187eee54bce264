/** "500ms", "90s", "15m", "24h", "30d" (or a bare number of seconds) → milliseconds; NaN when not a duration. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(String(text).trim());
  if (!m) return NaN;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? Math.round(ms) : NaN;
}
