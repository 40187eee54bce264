/** "500ms", "90s", "15m", "24h", "30d" (or a bare number of seconds) → milliseconds; NaN when not a duration. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(String(text).trim());
  if (!m) return NaN;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? Math.round(ms) : NaN;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const AGO = /^\d+(?:\.\d+)?(?:ms|s|m|h|d)$/;

/**
 * A `since` bound → milliseconds since the epoch; NaN when it is none of: an ISO time
 * ("2026-11-25T18:00:00Z", "2026-11-25"), milliseconds since the epoch (digits alone), or a
 * duration back from `now` with its unit ("30s", "15m", "2h", "1d").
 */
export function parseSince(text: string, now: number): number {
  const t = String(text).trim();
  if (/^\d+$/.test(t)) return Number(t);
  if (AGO.test(t)) return now - parseDuration(t);
  return ISO_TIME.test(t) ? Date.parse(t) : NaN;
}

/** What parseSince takes, for messages. */
export const SINCE_FORMS = 'a duration (e.g. 30s, 15m, 2h) or an ISO time';
