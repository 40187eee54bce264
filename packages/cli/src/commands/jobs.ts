// `rankd jobs`, `rankd job ID`, `rankd cancel ID`.
import type { Command } from 'commander';
import type { JobList, JobView } from '@rankd/protocol';
import { formatCpuList } from '@rankd/protocol/cpuset';
import { loadClientConfig } from '../client/config.js';
import { request } from '../client/http.js';
import { renderTable } from '../table.js';

export function register(program: Command): void {
  program
    .command('jobs')
    .description('list recent jobs')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { jobs } = await request<JobList>(loadClientConfig(), '/v1/jobs');
      if (opts.json) return void process.stdout.write(JSON.stringify(jobs, null, 2) + '\n');
      process.stdout.write(
        renderTable(
          ['ID', 'STATE', 'RANKS', 'NODES', 'EXIT', 'CREATED', 'COMMAND'],
          jobs.map((j) => [j.id, j.state, String(j.worldSize), j.nodes.join(','), j.exitCode === null ? '-' : String(j.exitCode), j.createdAt.replace('T', ' ').slice(0, 19), j.command.join(' ')]),
        ),
      );
    });

  program
    .command('job')
    .description('one job: its state, rank map and the actual binding of every rank')
    .argument('<id>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const job = await request<JobView>(loadClientConfig(), `/v1/jobs/${encodeURIComponent(id)}`);
      if (opts.json) return void process.stdout.write(JSON.stringify(job, null, 2) + '\n');
      process.stdout.write(`job ${job.id}  ${job.state}  ${job.reason}\ncommand: ${job.command.join(' ')}\nexit code: ${job.exitCode ?? '-'}\n\n`);
      process.stdout.write(
        renderTable(
          ['RANK', 'NODE', 'STATE', 'PID', 'EXIT', 'PLANNED CPUS', 'ACTUAL CPUS', 'MEM', 'BOUND', 'OUT/ERR BYTES'],
          job.ranks.map((r) => [
            String(r.rank),
            r.node,
            r.state,
            r.pid === null ? '-' : String(r.pid),
            r.signal ?? (r.exitCode === null ? '-' : String(r.exitCode)),
            formatCpuList(r.planned.cpus) || '-',
            r.actual ? formatCpuList(r.actual.cpus) || '-' : '-',
            r.actual ? formatCpuList(r.actual.memNodes) || '-' : formatCpuList(r.planned.memNodes) || '-',
            r.actual ? (r.actual.verified ? 'verified' : (r.actual.detail ?? 'unverified')) : '-',
            `${r.outputBytes.stdout}/${r.outputBytes.stderr}`,
          ]),
        ),
      );
      for (const r of job.ranks) if (r.error) process.stdout.write(`rank ${r.rank}: ${r.error}\n`);
    });

  program
    .command('cancel')
    .description('cancel a job: SIGTERM to every rank, the grace period, then SIGKILL')
    .argument('<id>')
    .action(async (id: string) => {
      const job = await request<JobView>(loadClientConfig(), `/v1/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      process.stderr.write(`rankd: job ${job.id}: ${job.reason}\n`);
    });
}
