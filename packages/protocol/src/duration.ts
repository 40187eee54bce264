/** "500ms", "90s", "15m", "24h", "30d" (or a bare number of seconds) → milliseconds; NaN when not a duration. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(String(text).trim());
  if (!m) return NaN;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
    (m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'
  ];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? Math.round(ms) : NaN;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const AGO = /^\d+(?:\.\d+)?(?:ms|s|m|h|d)$/;

/**
 * A `since` bound → milliseconds since the epoch; NaN when it is none of: an ISO time
 * ("2026-11-25T18:00:00Z", "2026-11-25"), milliseconds since the epoch (digits alone), or a
 * duration back from `now` with its unit ("30s", "15m", "2h", "1d"). A time without an offset,
 * and a date alone (midnight), are local time.
 */
export function parseSince(text: string, now: number): number {
  const t = String(text).trim();
  if (/^\d+$/.test(t)) return Number(t);
  if (AGO.test(t)) return now - parseDuration(t);
  if (!ISO_TIME.test(t) || !realDate(t)) return NaN;
  // a date alone is local midnight, as a time without an offset is local (JavaScript would read it as UTC)
  return Date.parse(t.length === 10 ? `${t}T00:00` : t);
}

/** "2026-02-30" is not a date: JavaScript would read it as 2 March. */
function realDate(iso: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split('-').map(Number) as [number, number, number];
  return m >= 1 && m <= 12 && new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d;
}

/** What parseSince takes, for messages. */
export const SINCE_FORMS = 'a duration (e.g. 30s, 15m, 2h) or an ISO time';
