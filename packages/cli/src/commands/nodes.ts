// `rankd nodes`: the node registry as a table, or JSON.
import type { Command } from 'commander';
import type { NodeList } from '@rankd/protocol';
import { loadClientConfig } from '../client/config.js';
import { request } from '../client/http.js';
import { renderTable } from '../table.js';

export function register(program: Command): void {
  program
    .command('nodes')
    .description('list the nodes the controller knows')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { nodes } = await request<NodeList>(loadClientConfig(), '/v1/nodes');
      if (opts.json) {
        process.stdout.write(JSON.stringify(nodes, null, 2) + '\n');
        return;
      }
      const now = Date.now();
      process.stdout.write(
        renderTable(
          ['NAME', 'STATE', 'ADDRESS', 'CPUS', 'NUMA', 'LAST SEEN'],
          nodes.map((n) => [
            n.name,
            n.connected || n.state !== 'ready' ? n.state : `${n.state} (reconnecting)`,
            n.address ?? '-',
            n.cpus === null ? '-' : String(n.cpus),
            n.numaNodes === null ? '-' : String(n.numaNodes),
            ago(now - Date.parse(n.lastSeen)),
          ]),
        ),
      );
    });
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}
