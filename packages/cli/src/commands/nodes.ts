// `rankd nodes`: the node registry as a table, or JSON. `rankd node drain|resume|remove NAME`:
// one node's standing (operators drain and resume; removing revokes its certificates).
import type { Command } from 'commander';
import { DRAIN_REASON_CHARS } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { printJson } from '../json-output.js';
import { textOf } from '../options.js';
import { renderTable } from '../table.js';
import { plural } from '@rankd/protocol/plural';

export function register(program: Command): void {
  program
    .command('nodes')
    .description('list the nodes the controller knows')
    .option('--json', 'print the REST document of GET /v1/nodes: {"nodes": [...]}')
    .action(async (opts: { json?: boolean }) => {
      const list = await call(loadClientConfig(), 'GET /v1/nodes');
      if (opts.json) return printJson(list);
      const { nodes } = list;
      const now = Date.now();
      process.stdout.write(
        renderTable(
          ['NAME', 'STATE', 'ADDRESS', 'CPUS', 'NUMA', 'LAST SEEN', 'DRAIN'],
          nodes.map((n) => [
            n.name,
            `${n.connected || n.state !== 'ready' ? n.state : `${n.state} (reconnecting)`}${n.drain ? ', drained' : ''}`,
            n.address ?? '-',
            n.cpus === null ? '-' : String(n.cpus),
            n.numaNodes === null ? '-' : String(n.numaNodes),
            ago(now - Date.parse(n.lastSeen)),
            n.drain
              ? `${n.drain.reason}${n.drain.by ? ` (${n.drain.by}, ${ago(now - Date.parse(n.drain.at))})` : ''}`
              : '-',
          ]),
        ),
      );
    });

  const node = program.command('node').description('manage one node: drain, resume, remove');
  node
    .command('drain')
    .description('take no new ranks on the node; running ranks finish (as scontrol state=drain)')
    .argument('<name>')
    .option(
      '--reason <text>',
      `why, shown by rankd nodes (at most ${DRAIN_REASON_CHARS.max} characters)`,
      textOf(DRAIN_REASON_CHARS),
      'drained',
    )
    .action(async (name: string, opts: { reason: string }) => {
      const body = { reason: opts.reason };
      const view = await call(loadClientConfig(), 'POST /v1/nodes/:name/drain', { params: { name }, body });
      process.stderr.write(`rankd: node ${view.name} drained: ${view.drain?.reason ?? opts.reason}\n`);
    });
  node
    .command('resume')
    .description('end a drain: the node takes new ranks again')
    .argument('<name>')
    .action(async (name: string) => {
      const view = await call(loadClientConfig(), 'POST /v1/nodes/:name/resume', { params: { name } });
      process.stderr.write(`rankd: node ${view.name} resumed\n`);
    });
  node
    .command('remove')
    .description(
      "revoke a node's certificates: its link drops at once and it cannot reconnect; its name may enroll again",
    )
    .argument('<name>')
    .action(async (name: string) => {
      const r = await call(loadClientConfig(), 'DELETE /v1/nodes/:name', { params: { name } });
      process.stderr.write(
        `rankd: node ${r.node} removed: ${plural(r.revokedSerials.length, 'certificate')} revoked, ${plural(r.droppedLinks, 'link')} dropped\n`,
      );
    });
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}
