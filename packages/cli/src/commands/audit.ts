// `rankd audit [--since T] [--json]`: who did what, from where, and the outcome.
import type { Command } from 'commander';
import type { AuditEntry } from '@rankd/protocol';
import { AUDIT_LIMIT } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { printJson } from '../json-output.js';
import { integerIn, since } from '../options.js';
import { renderFittedTable, renderTable, tableWidth } from '../table.js';

export function register(program: Command): void {
  program
    .command('audit')
    .description('the audit log: mutating requests, shells, execs and every refusal (admin, operator)')
    .option('--since <time>', 'a duration back from now (30s, 15m, 2h, 1d), an ISO time, or epoch milliseconds', since)
    .option(
      '--limit <n>',
      `at most this many entries, newest last (${AUDIT_LIMIT.min} to ${AUDIT_LIMIT.max})`,
      integerIn(AUDIT_LIMIT),
      1000,
    )
    .option('--wide', 'every column in full: token accessors, environment names, durations, whole reasons')
    .option('--json', 'print the REST document of GET /v1/audit: {"entries": [...]}')
    .action(async (opts: { since?: string; limit: number; json?: boolean; wide?: boolean }) => {
      const query = { limit: opts.limit, ...(opts.since ? { since: opts.since } : {}) };
      const list = await call(loadClientConfig(), 'GET /v1/audit', { query });
      if (opts.json) return printJson(list);
      process.stdout.write(opts.wide ? wideTable(list.entries) : fittedTable(list.entries));
    });
}

// within 80–120 columns: the detail that makes lines long (the reason of a refusal, the
// token accessor, the environment names) is cut or left to --wide and --json
const FITTED_LIMITS = [14, 12, 15, 30, 20, 6];

function fittedTable(entries: readonly AuditEntry[]): string {
  return renderFittedTable(
    ['TIME', 'USER', 'SOURCE', 'REQUEST', 'RESOURCE', 'STATUS', 'DECISION'],
    entries.map((e) => [
      e.time.slice(5, 19).replace('T', ' '),
      e.user ?? '-',
      e.source,
      `${e.method} ${e.route}`,
      resourceOf(e),
      e.status === null ? '-' : String(e.status),
      decisionOf(e),
    ]),
    FITTED_LIMITS,
    tableWidth(),
  );
}

function wideTable(entries: readonly AuditEntry[]): string {
  return renderTable(
    ['TIME', 'USER', 'SOURCE', 'REQUEST', 'RESOURCE', 'ENV', 'DECISION', 'STATUS', 'MS'],
    entries.map((e) => [
      e.time.replace('T', ' ').slice(0, 23),
      // a node (role node) or a counted refusal has no token accessor
      e.user ? (e.accessor ? `${e.user}/${e.accessor}` : e.user) : '-',
      e.source,
      `${e.method} ${e.route}`,
      resourceOf(e),
      // names only: the log never holds the values
      e.envNames?.join(',') || '-',
      decisionOf(e),
      e.status === null ? '-' : String(e.status),
      e.durationMs === null ? '-' : e.durationMs.toFixed(1),
    ]),
  );
}

function resourceOf(e: AuditEntry): string {
  return (
    Object.entries(e.resource)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || '-'
  );
}

/** Refusals are counted per source and minute: "(×N)" is how many this line stands for. */
function decisionOf(e: AuditEntry): string {
  return (e.decision === 'deny' ? `deny: ${e.reason}` : 'allow') + (e.count > 1 ? ` (×${e.count})` : '');
}
