// `rankd audit [--since T] [--json]`: who did what, from where, and the outcome.
import type { Command } from 'commander';
import type { AuditList } from '@rankd/protocol';
import { AUDIT_LIMIT } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { request } from '../client/http.js';
import { printJson } from '../json-output.js';
import { integerIn, since } from '../options.js';
import { renderTable } from '../table.js';

export function register(program: Command): void {
  program
    .command('audit')
    .description('the audit log: mutating requests, shells, execs and every refusal (admin, operator)')
    .option('--since <time>', 'a duration back from now (30s, 15m, 2h, 1d), an ISO time, or epoch milliseconds', since)
    .option('--limit <n>', `at most this many entries, newest last (${AUDIT_LIMIT.min} to ${AUDIT_LIMIT.max})`, integerIn(AUDIT_LIMIT), 1000)
    .option('--json', 'print the REST document of GET /v1/audit: {"entries": [...]}')
    .action(async (opts: { since?: string; limit: number; json?: boolean }) => {
      const q = new URLSearchParams({ limit: String(opts.limit) });
      if (opts.since) q.set('since', opts.since);
      const list = await request<AuditList>(loadClientConfig(), `/v1/audit?${q}`);
      if (opts.json) return printJson(list);
      const { entries } = list;
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
