// How long a job or rank ran, as squeue's TIME column writes it.

/** Whole seconds as squeue writes them: M:SS, H:MM:SS, D-HH:MM:SS. */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const [days, hours, minutes, seconds] = [
    Math.floor(total / 86_400),
    Math.floor(total / 3600) % 24,
    Math.floor(total / 60) % 60,
    total % 60,
  ];
  const pad = (n: number) => String(n).padStart(2, '0');
  if (days > 0) return `${days}-${pad(hours)}:${pad(minutes)}:${pad(seconds)}`;
  if (hours > 0) return `${hours}:${pad(minutes)}:${pad(seconds)}`;
  return `${minutes}:${pad(seconds)}`;
}

/**
 * From its start to its end, or to `now` while it runs; `-` before it started (queued), and
 * for one that ended without starting. A clock of the client behind the controller's gives
 * 0:00, not a negative time.
 */
export function elapsedOf(times: { startedAt: string | null; endedAt: string | null }, now = Date.now()): string {
  if (times.startedAt === null) return '-';
  const end = times.endedAt === null ? now : Date.parse(times.endedAt);
  return formatElapsed(end - Date.parse(times.startedAt));
}

/** An ISO time as the tables show it: UTC, to the second ("2026-11-25 19:40:02"); `-` for none. */
export function tableTime(iso: string | null): string {
  return iso === null ? '-' : iso.replace('T', ' ').slice(0, 19);
}
