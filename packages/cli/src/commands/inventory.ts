// `rankd inventory`: the controller's groups and hosts, imported from an Ansible INI
// inventory or an MPI/DeepSpeed hostfile; `match` shows what a host pattern selects.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import type { InventoryImport, InventoryView } from '@rankd/protocol';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { renderTable } from '../table.js';
import { agree, plural } from '@rankd/protocol/plural';

export function register(program: Command): void {
  const inventory = program
    .command('inventory')
    .description('inventory groups and hosts (Ansible INI, MPI/DeepSpeed hostfiles)');

  inventory
    .command('show', { isDefault: true })
    .description('show groups, hosts, their vars and agents (the default)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const view = await call(loadClientConfig(), 'GET /v1/inventory');
      process.stdout.write(opts.json ? JSON.stringify(view, null, 2) + '\n' : renderInventory(view));
    });

  inventory
    .command('import')
    .description('replace the inventory with FILE (or add to it with --merge)')
    .argument('<file>', 'an Ansible INI inventory or an MPI/DeepSpeed hostfile')
    .option('--format <ini|hostfile>', 'the file format (default: detected)')
    .option('--group <name>', 'the group a hostfile\'s hosts join (default "hostfile")')
    .option('--merge', 'add to the stored inventory instead of replacing it')
    .option('--json', 'print the resulting inventory as JSON')
    .action(async (file: string, opts: { format?: string; group?: string; merge?: boolean; json?: boolean }) => {
      if (opts.format !== undefined && opts.format !== 'ini' && opts.format !== 'hostfile') {
        throw new CliError(`--format is ini or hostfile, not "${opts.format}"`, ExitCode.Usage);
      }
      let content: string;
      try {
        content = readFileSync(file, 'utf8');
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${(err as Error).message}`, ExitCode.Software);
      }
      const body: InventoryImport = {
        content,
        source: basename(file),
        ...(opts.format ? { format: opts.format } : {}),
        ...(opts.group ? { group: opts.group } : {}),
        ...(opts.merge ? { merge: true } : {}),
      };
      const view = await call(loadClientConfig(), 'PUT /v1/inventory', { body });
      if (opts.json) {
        process.stdout.write(JSON.stringify(view, null, 2) + '\n');
        return;
      }
      const groups = view.groups.filter((g) => g.name !== 'all' && g.name !== 'ungrouped').length;
      const missing = view.hosts.filter((h) => h.agent === 'none').length;
      process.stdout.write(
        `imported ${file} (${view.source?.format}): ${plural(view.hosts.length, 'host')} in ${plural(groups, 'group')}${missing ? `; ${plural(missing, 'host')} ${agree(missing, 'has', 'have')} no agent yet` : ''}\n`,
      );
    });

  inventory
    .command('match')
    .description('list the hosts a pattern selects (all, group, host*, g1:g2, g1:&g2, g1:!g2, key=value)')
    .argument('<pattern>')
    .option('--json', 'print JSON')
    .action(async (pattern: string, opts: { json?: boolean }) => {
      const match = await call(loadClientConfig(), 'GET /v1/inventory/match', { query: { pattern } });
      if (opts.json) {
        process.stdout.write(JSON.stringify(match, null, 2) + '\n');
        return;
      }
      if (match.hosts.length === 0) process.stderr.write(`rankd: no hosts matched "${pattern}"\n`);
      else
        process.stdout.write(
          renderTable(
            ['HOST', 'NODE', 'AGENT'],
            match.hosts.map((h) => [h.host, h.node ?? '-', h.agent]),
          ),
        );
    });

  inventory
    .command('clear')
    .description('forget the inventory (patterns still reach registered nodes by name)')
    .action(async () => {
      await call(loadClientConfig(), 'DELETE /v1/inventory');
    });
}

function renderInventory(view: InventoryView): string {
  const out: string[] = [];
  out.push(
    view.source
      ? `inventory: ${view.source.name} (${view.source.format}, imported ${view.source.importedAt})\n`
      : 'inventory: none imported (patterns reach registered nodes by name)\n',
  );
  const groups = view.groups.filter((g) => g.name !== 'all' && (g.name !== 'ungrouped' || g.members.length > 0));
  if (groups.length > 0) {
    out.push(
      '\n' +
        renderTable(
          ['GROUP', 'HOSTS', 'CHILDREN', 'VARS'],
          groups.map((g) => [g.name, String(g.members.length), g.children.join(',') || '-', formatVars(g.vars)]),
        ),
    );
  }
  if (view.hosts.length > 0) {
    out.push(
      '\n' +
        renderTable(
          ['HOST', 'NODE', 'AGENT', 'GROUPS', 'VARS'],
          view.hosts.map((h) => [
            h.name,
            h.node ?? '-',
            h.agent === 'none' ? 'none (no agent registered)' : h.agent,
            h.groups.join(',') || '-',
            formatVars(h.vars),
          ]),
        ),
    );
  }
  if (view.unlisted.length > 0) out.push(`\nnodes outside the inventory: ${view.unlisted.join(', ')}\n`);
  return out.join('');
}

function formatVars(vars: Record<string, string>): string {
  const entries = Object.entries(vars);
  if (entries.length === 0) return '-';
  return entries.map(([k, v]) => `${k}=${/\s/.test(v) ? JSON.stringify(v) : v}`).join(' ');
}
