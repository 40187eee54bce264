// `rankd logs ID [-f] [--attempt K] [--rank R] [--stream out|err] [--offset N] [--timestamps]`:
// every rank's lines in the order the controller stored them. A job that restarted shows
// every attempt in turn, each under a heading on stdout as tail heads each file
// ("==> attempt 1/3 (nodes a,b; failed: …) <==", the first without a blank line before it).
import type { Command } from 'commander';
import type { JobView } from '@rankd/protocol';
import { attemptHeading, restartLine } from '../client/attempt-lines.js';
import { loadClientConfig } from '../client/config.js';
import { followLogs } from '../client/follow-logs.js';
import { call } from '../client/rest.js';
import { JOB_ID_ARGUMENT, resolveJobId } from '../client/job-id.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { collect } from '../options.js';

export function register(program: Command): void {
  program
    .command('logs')
    .description("a job's output, labelled by rank, in the order the ranks wrote it; -f follows it live")
    .argument('<id>', JOB_ID_ARGUMENT)
    .option('-f, --follow', 'keep streaming until the job ends (into its next attempts when it restarts)')
    .option(
      '--attempt <K>',
      "only attempt K, counted from 1 as rankd run's messages count them (its ranks' RANKD_ATTEMPT is K-1); " +
        'default every attempt, each under a heading',
    )
    .option('-q, --quiet', 'no attempt headings (as tail -q)')
    .option('--rank <r>', 'only this rank (repeatable)', collect)
    .option('--stream <out|err>', 'only stdout or only stderr')
    .option('--offset <bytes>', 'start at this byte offset of each selected stream')
    .option(
      '-t, --timestamps',
      'put the time each line was stored (RFC 3339, UTC) before it, as docker logs and kubectl logs do',
    )
    .option('--no-label', 'raw output, without the "RANK: " prefix')
    .option('--label-format <template>', 'line prefix; fields {rank} {node} {localRank} {stream}', '{rank}: ')
    .action(
      async (
        id: string,
        opts: {
          follow?: boolean;
          attempt?: string;
          quiet?: boolean;
          rank?: string[];
          stream?: string;
          offset?: string;
          timestamps?: boolean;
          label: boolean;
          labelFormat: string;
        },
      ) => {
        const config = loadClientConfig();
        const stream =
          opts.stream === undefined
            ? undefined
            : opts.stream === 'out' || opts.stream === 'stdout'
              ? 'stdout'
              : opts.stream === 'err' || opts.stream === 'stderr'
                ? 'stderr'
                : null;
        if (stream === null) throw new CliError(`--stream is out or err, not "${opts.stream}"`, ExitCode.Usage);
        const ranks = opts.rank?.map((r) => {
          if (!/^\d+$/.test(r)) throw new CliError(`--rank takes a rank number, not "${r}"`, ExitCode.Usage);
          return Number(r);
        });
        const offset = opts.offset === undefined ? undefined : Number(opts.offset);
        if (offset !== undefined && !(Number.isInteger(offset) && offset >= 0))
          throw new CliError(`--offset takes a byte offset, not "${opts.offset}"`, ExitCode.Usage);
        if (opts.attempt !== undefined && !/^[1-9][0-9]{0,5}$/.test(opts.attempt))
          throw new CliError(`--attempt takes an attempt number counted from 1, not "${opts.attempt}"`, ExitCode.Usage);
        // every flag is checked above, before the first request
        const job = await call(config, 'GET /v1/jobs/:id', { params: { id: await resolveJobId(config, id) } });
        const attempt = opts.attempt === undefined ? undefined : attemptOf(job, Number(opts.attempt));
        let headings = 0;
        // Without -f the same stream ends after the stored bytes (the server closes it).
        await followLogs(config, job, {
          label: opts.label ? opts.labelFormat : '',
          ...(ranks ? { ranks } : {}),
          ...(stream ? { stream } : {}),
          ...(offset !== undefined ? { offset } : {}),
          follow: opts.follow ?? false,
          // the ranks' lines interleaved as they were produced, not rank by rank
          order: 'time',
          ...(opts.timestamps ? { timestamps: true } : {}),
          ...(attempt !== undefined ? { attempt } : {}),
          onAttempt: (a) => {
            if (opts.quiet) return;
            process.stdout.write(`${headings++ > 0 ? '\n' : ''}${attemptHeading(job, a)}\n`);
          },
          onRestart: (r) => process.stderr.write(`rankd: ${restartLine(r)}\n`),
          // the next attempt's rank map, for {node} and {localRank} labels
          onStarted: () => call(config, 'GET /v1/jobs/:id', { params: { id: job.id } }),
        });
      },
    );
}

/** --attempt K (1-based) as the 0-based attempt the controller knows; K must have started or be about to. */
function attemptOf(job: JobView, k: number): number {
  const last = job.attempt + 1;
  if (k > last)
    throw new CliError(
      `job ${job.id} has ${last === 1 ? 'only attempt 1' : `attempts 1 to ${last}`} so far ` +
        `(it may take ${job.maxRestarts + 1}); --attempt ${k} is not one of them`,
      ExitCode.Usage,
    );
  return k - 1;
}
