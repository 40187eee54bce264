// `rankd logs ID [-f] [--rank R] [--stream out|err] [--offset N] [--timestamps]`: every
// rank's lines in the order the controller stored them.
import type { Command } from 'commander';
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
    .option('-f, --follow', 'keep streaming until the job ends')
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
        // every flag is checked above, before the first request
        const job = await call(config, 'GET /v1/jobs/:id', { params: { id: await resolveJobId(config, id) } });
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
        });
      },
    );
}
