// How times, durations and states read on every page.
export function duration(fromIso: string | null, toIso: string | null, now: number): string {
  if (!fromIso) return '';
  const ms = (toIso ? Date.parse(toIso) : now) - Date.parse(fromIso);
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function when(iso: string | null): string {
  return iso ? new Date(iso).toLocaleString() : '';
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  const gib = n / 2 ** 30;
  return gib >= 1 ? `${gib.toFixed(gib >= 10 ? 0 : 1)} GiB` : `${Math.round(n / 2 ** 20)} MiB`;
}

/** "1 rank", "2 ranks". */
export function count(n: number, noun: string): string {
  return `${n.toLocaleString('en')} ${noun}${n === 1 ? '' : 's'}`;
}

/** An argv as a shell would need it typed: words that need it single-quoted, so `sh -c 'echo x'` reads as such. */
export function shellWords(argv: readonly string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}
