// `rankd queue`: like squeue, the running jobs and then the queued ones in the order
// they will start, with owner, state, reason, restarts, what each asked for and what it holds.
import type { Command } from 'commander';
import type { QueueEntry } from '@rankd/protocol';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { printJson } from '../json-output.js';
import { renderTable } from '../table.js';
import { plural } from '@rankd/protocol/plural';

export function register(program: Command): void {
  program
    .command('queue')
    .description('running and queued jobs (like squeue): owner, state, position, reason, what each asked for and holds')
    .option('--json', 'print the REST document of GET /v1/queue: {"jobs": [...], "lastPassMs": N}')
    .addHelpText(
      'after',
      "\nRESTARTS: restarts taken out of the most the job may take (rankd run --max-restarts), as sacct's Restarts;" +
        '\na job between attempts is queued, its REASON "restart 1/3: …" (what its next attempt waits for).',
    )
    .action(async (opts: { json?: boolean }) => {
      const queue = await call(loadClientConfig(), 'GET /v1/queue');
      if (opts.json) return printJson(queue);
      process.stdout.write(
        renderTable(
          ['ID', 'OWNER', 'STATE', 'POS', 'PRIO', 'RESTARTS', 'ASKED', 'HELD', 'REASON'],
          queue.jobs.map((j) => [
            j.id,
            j.owner ?? '-',
            j.state,
            j.position === null ? '-' : String(j.position),
            String(j.priority),
            j.maxRestarts === 0 ? '-' : `${j.attempt}/${j.maxRestarts}`,
            asked(j),
            held(j),
            j.reason,
          ]),
        ),
      );
    });
}

function asked(j: QueueEntry): string {
  const a = j.asked;
  if (!a) return '-';
  const gpus = a.gpus > 0 ? ` ${plural(a.gpus, 'gpu')}` : '';
  const mode = a.mode === 'normal' ? '' : ` ${a.mode}`;
  return `${plural(a.ranks, 'rank')} ${plural(a.nodes, 'node')} ${plural(a.cores, 'core')}${gpus}${mode}`;
}

function held(j: QueueEntry): string {
  const h = j.held;
  if (!h) return '-';
  return `${h.nodes.join(',')}: ${plural(h.cpus, 'cpu')}${h.gpus > 0 ? ` ${plural(h.gpus, 'gpu')}` : ''}`;
}
