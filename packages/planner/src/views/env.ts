// `export` lines per rank, ready for a shell: values are single-quoted unless plain.
import type { RankMap } from '@rankd/protocol';

export function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export function renderEnv(map: RankMap): string {
  const blocks = map.ranks.map((r) => {
    const lines = [`# rank ${r.rank}: node ${r.node}, local rank ${r.localRank}`];
    for (const [k, v] of Object.entries(r.env)) lines.push(`export ${k}=${shellQuote(v)}`);
    return lines.join('\n') + '\n';
  });
  return blocks.join('\n');
}
