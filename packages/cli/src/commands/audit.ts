// `rankd audit [--since T] [--json]`: who did what, from where, and the outcome.
import type { Command } from 'commander';
import type { AuditList } from '@rankd/protocol';
import { loadClientConfig } from '../client/config.js';
import { request } from '../client/http.js';
import { renderTable } from '../table.js';

export function register(program: Command): void {
  program
    .command('audit')
    .description('the audit log: mutating requests, shells, execs and every refusal (admin, operator)')
    .option('--since <time>', 'ISO time, epoch milliseconds, or a duration ago (30s, 15m, 2h, 1d)')
    .option('--limit <n>', 'at most this many entries, newest last', '1000')
    .option('--json', 'print JSON')
    .action(async (opts: { since?: string; limit: string; json?: boolean }) => {
      const q = new URLSearchParams({ limit: opts.limit });
      if (opts.since) q.set('since', sinceParam(opts.since));
      const { entries } = await request<AuditList>(loadClientConfig(), `/v1/audit?${q}`);
      if (opts.json) return void process.stdout.write(JSON.stringify(entries, null, 2) + '\n');
      process.stdout.write(
        renderTable(
          ['TIME', 'USER', 'SOURCE', 'REQUEST', 'RESOURCE', 'ENV', 'DECISION', 'STATUS', 'MS'],
          entries.map((e) => [
            e.time.replace('T', ' ').slice(0, 23),
            // a node (role node) or a counted refusal has no token accessor
            e.user ? (e.accessor ? `${e.user}/${e.accessor}` : e.user) : '-',
            e.source,
            `${e.method} ${e.route}`,
            Object.entries(e.resource).map(([k, v]) => `${k}=${v}`).join(' ') || '-',
            // names only: the log never holds the values
            e.envNames?.join(',') || '-',
            // refusals counted per source and minute: how many this line stands for
            (e.decision === 'deny' ? `deny: ${e.reason}` : 'allow') + (e.count > 1 ? ` (×${e.count})` : ''),
            e.status === null ? '-' : String(e.status),
            e.durationMs === null ? '-' : e.durationMs.toFixed(1),
          ]),
        ),
      );
    });
}

/** A duration ago becomes an ISO time; anything else goes as given. */
function sinceParam(since: string): string {
  const m = /^(\d+)(s|m|h|d)$/.exec(since);
  if (!m) return since;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  return new Date(Date.now() - Number(m[1]) * unit).toISOString();
}
