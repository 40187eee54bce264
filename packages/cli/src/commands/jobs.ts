// `rankd jobs`, `rankd job ID`, `rankd cancel ID`.
import { InvalidArgumentError, type Command } from 'commander';
import { formatCpuList } from '@rankd/protocol/cpuset';
import { DEFAULT_JOB_LIST_LIMIT, JOB_STATE_WORDS, MAX_JOB_LIST_LIMIT, parseJobStates } from '@rankd/protocol/job-list';
import { describeNodeWarning, warningsByNode } from '@rankd/protocol/rank-warnings';
import { loadClientConfig } from '../client/config.js';
import type { JobView } from '@rankd/protocol';
import { attemptLabel, describeFailure } from '../client/attempt-lines.js';
import { call } from '../client/rest.js';
import { JOB_ID_ARGUMENT, resolveJobId } from '../client/job-id.js';
import { elapsedOf, tableTime } from '../elapsed.js';
import { positiveInt, since } from '../options.js';
import { printJson } from '../json-output.js';
import { renderTable } from '../table.js';
import { USER_NAME } from '@rankd/protocol/user-name';

export function register(program: Command): void {
  program
    .command('jobs')
    .description(`list recent jobs, newest first (the newest ${DEFAULT_JOB_LIST_LIMIT} unless --limit)`)
    .option(
      '--limit <n>',
      `at most this many jobs, 1 to ${MAX_JOB_LIST_LIMIT} (default ${DEFAULT_JOB_LIST_LIMIT})`,
      listLimit,
    )
    .option(
      '--state <states>',
      `only jobs in these states, comma-separated: ${JOB_STATE_WORDS.join(', ')} (active: not ended; done: ended)`,
      jobStates,
    )
    .option('--user <name>', "only this rankd user's jobs (another's: admin, operator or reader)", userName)
    .option('--since <time>', 'only jobs submitted since: a time back from now (30m, 2h, 1d) or an ISO time', since)
    .option('--json', 'print the REST document of GET /v1/jobs: {"jobs": [...], "more": …}')
    .addHelpText(
      'after',
      "\nELAPSED is squeue's TIME: M:SS, H:MM:SS or D-HH:MM:SS, up to now for a running job, " +
        '"-" for one that has not started.' +
        "\nRESTARTS is sacct's Restarts out of the most the job may take (rankd run --max-restarts): 1/3; " +
        '"-" for a job that may not restart.' +
        '\nTimes are UTC.',
    )
    .action(async (opts: { limit?: number; state?: string; user?: string; since?: string; json?: boolean }) => {
      const { limit, state, user, since } = opts;
      const list = await call(loadClientConfig(), 'GET /v1/jobs', { query: { limit, state, user, since } });
      if (opts.json) return printJson(list);
      const { jobs, more } = list;
      const now = Date.now();
      process.stdout.write(
        renderTable(
          ['ID', 'USER', 'STATE', 'RANKS', 'NODES', 'EXIT', 'RESTARTS', 'CREATED', 'START', 'ELAPSED', 'COMMAND'],
          jobs.map((j) => [
            j.id,
            j.owner ?? '-',
            j.state,
            String(j.worldSize),
            j.nodes.join(',') || '-',
            j.exitCode === null ? '-' : String(j.exitCode),
            restartsCell(j),
            tableTime(j.createdAt),
            tableTime(j.startedAt),
            elapsedOf(j, now),
            j.command.join(' '),
          ]),
        ),
      );
      if (more) process.stderr.write(`rankd: more jobs match than the ${jobs.length} shown; ${moreHint(opts)}\n`);
    });

  program
    .command('job')
    .description(
      'one job: its state, times, attempts (with restarts), rank map and the actual binding of every rank ' +
        'of its current (or last) attempt',
    )
    .argument('<id>', JOB_ID_ARGUMENT)
    .option('--json', 'print the REST document of GET /v1/jobs/ID')
    .action(async (id: string, opts: { json?: boolean }) => {
      const config = loadClientConfig();
      const job = await call(config, 'GET /v1/jobs/:id', { params: { id: await resolveJobId(config, id) } });
      if (opts.json) return printJson(job);
      const now = Date.now();
      process.stdout.write(
        `job ${job.id}  ${job.state}  ${job.reason}\ncommand: ${job.command.join(' ')}\nexit code: ${job.exitCode ?? '-'}\n`,
      );
      process.stdout.write(
        `created: ${tableTime(job.createdAt)}  start: ${tableTime(job.startedAt)}  end: ${tableTime(job.endedAt)}  elapsed: ${elapsedOf(job, now)}\n\n`,
      );
      // a job that may restart, or did: its attempts, then the ranks of the current (or last) one
      if (job.maxRestarts > 0 || job.attempts.length > 1) {
        process.stdout.write(attemptsTable(job, now));
        if (job.excluded.length > 0)
          process.stdout.write(`excluded from its next attempts: ${job.excluded.join(',')}\n`);
        if (job.ranks.length > 0) process.stdout.write(`\nranks of ${attemptLabel(job.attempt, job.maxRestarts)}:\n`);
      }
      process.stdout.write(
        renderTable(
          [
            'RANK',
            'NODE',
            'STATE',
            'PID',
            'EXIT',
            'START',
            'ELAPSED',
            'PLANNED CPUS',
            'ACTUAL CPUS',
            'MEM',
            'BOUND',
            'OUT/ERR BYTES',
          ],
          job.ranks.map((r) => [
            String(r.rank),
            r.node,
            r.state,
            r.pid === null ? '-' : String(r.pid),
            r.signal ?? (r.exitCode === null ? '-' : String(r.exitCode)),
            tableTime(r.startedAt),
            elapsedOf(r, now),
            formatCpuList(r.planned.cpus) || '-',
            r.actual ? formatCpuList(r.actual.cpus) || '-' : '-',
            r.actual ? formatCpuList(r.actual.memNodes) || '-' : formatCpuList(r.planned.memNodes) || '-',
            r.actual ? (r.actual.verified ? 'verified' : (r.actual.detail ?? 'unverified')) : '-',
            `${r.outputBytes.stdout}/${r.outputBytes.stderr}`,
          ]),
        ),
      );
      for (const r of job.ranks) if (r.error) process.stdout.write(`rank ${r.rank}: ${r.error}\n`);
      // once per node and message: every rank of a node usually carries the same ones
      for (const w of warningsByNode(job.ranks)) process.stdout.write(`warning: ${describeNodeWarning(w)}\n`);
    });

  program
    .command('cancel')
    .description('cancel a job: SIGTERM to every rank, the grace period, then SIGKILL')
    .argument('<id>', JOB_ID_ARGUMENT)
    .action(async (id: string) => {
      const config = loadClientConfig();
      const job = await call(config, 'POST /v1/jobs/:id/cancel', { params: { id: await resolveJobId(config, id) } });
      process.stderr.write(`rankd: job ${job.id}: ${job.reason}\n`);
    });
}

/** sacct's Restarts out of the budget: "1/3"; "-" for a job that may not restart. */
function restartsCell(j: { attempt: number; maxRestarts: number }): string {
  return j.maxRestarts === 0 ? '-' : `${j.attempt}/${j.maxRestarts}`;
}

/** One row per attempt that started, oldest first, counted from 1 as rankd run counts them. */
function attemptsTable(job: JobView, now: number): string {
  return renderTable(
    ['ATTEMPT', 'STATE', 'START', 'END', 'ELAPSED', 'NODES', 'EXIT', 'FIRST FAILURE', 'EXCLUDED'],
    job.attempts.map((a) => [
      attemptLabel(a.attempt, job.maxRestarts).replace('attempt ', ''),
      a.state,
      tableTime(a.startedAt),
      tableTime(a.endedAt),
      elapsedOf(a, now),
      a.nodes.join(',') || '-',
      a.exitCode === null ? '-' : String(a.exitCode),
      a.firstFailure ? describeFailure(a.firstFailure) : '-',
      a.excluded.join(',') || '-',
    ]),
  );
}

function listLimit(value: string): number {
  const n = positiveInt(value);
  if (n > MAX_JOB_LIST_LIMIT)
    throw new InvalidArgumentError(`${n} is over the most a listing holds, ${MAX_JOB_LIST_LIMIT}`);
  return n;
}

/** squeue's states are upper case (RUNNING): taken in any case, sent as REST names them. */
function jobStates(value: string): string {
  const states = value.toLowerCase();
  const parsed = parseJobStates(states);
  if ('bad' in parsed)
    throw new InvalidArgumentError(`"${parsed.bad}" is not a job state; the states are ${JOB_STATE_WORDS.join(', ')}`);
  return states;
}

/** A rankd user name, as `rankd user add` takes it. */
function userName(value: string): string {
  if (!USER_NAME.test(value))
    throw new InvalidArgumentError(
      `"${value}" is not a rankd user name (lower case letters, digits, "_", "." and "-", at most 32)`,
    );
  return value;
}

/** What to type to see the jobs left off: the same filters with a larger --limit, or narrower ones. */
function moreHint(opts: { limit?: number; state?: string; user?: string; since?: string }): string {
  const limit = opts.limit ?? DEFAULT_JOB_LIST_LIMIT;
  if (limit >= MAX_JOB_LIST_LIMIT) return 'narrow them with --state, --user or --since';
  const filters = (['state', 'user', 'since'] as const).flatMap((k) =>
    opts[k] === undefined ? [] : [`--${k} ${opts[k]}`],
  );
  return `to list up to ${MAX_JOB_LIST_LIMIT}: rankd jobs ${[...filters, `--limit ${MAX_JOB_LIST_LIMIT}`].join(' ')}`;
}
