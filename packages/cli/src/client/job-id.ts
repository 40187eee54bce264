// Unique-prefix job ids, as git and docker take them: `rankd job jmi3k` for jmi3kq0x9a1b2c3.
//
// Resolved among the jobs the caller may list (GET /v1/jobs?idPrefix=), so the controller's
// rules for listings decide what a prefix can match: a role that reads its own jobs only
// never matches, and so never learns of, another user's job. A word that matches no job is
// sent as it is: the controller then answers for that exact id (unknown: 404).
import type { JobSummary } from '@rankd/protocol';
import { CliError, ExitCode } from '../exit-codes.js';
import { tableTime } from '../elapsed.js';
import { renderTable } from '../table.js';
import type { ClientConfig } from './config.js';
import { call } from './rest.js';

/**
 * Shorter prefixes are refused even when unique: every id starts with `j` and its creation
 * time, so three characters name whichever job happens to be alone, not the one meant.
 */
export const MIN_JOB_ID_PREFIX = 4;
/** What `<id>` is, in the help of every command that takes one. */
export const JOB_ID_ARGUMENT = `a job id, or a unique prefix of one (${MIN_JOB_ID_PREFIX} characters at least)`;
/** How many candidates an ambiguous prefix lists. */
const CANDIDATES = 10;

export async function resolveJobId(config: ClientConfig, word: string): Promise<string> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(word))
    throw new CliError(`"${word.slice(0, 80)}" is not a job id: ids are letters, digits, "_" and "-"`, ExitCode.Usage);
  const { jobs, more } = await call(config, 'GET /v1/jobs', { query: { idPrefix: word, limit: CANDIDATES } });
  if (jobs.some((j) => j.id === word) || jobs.length === 0) return word;
  if (word.length < MIN_JOB_ID_PREFIX) {
    throw new CliError(
      `job id "${word}" is too short to be a prefix: type at least ${MIN_JOB_ID_PREFIX} characters of the id ("rankd jobs" lists them)`,
      ExitCode.Usage,
    );
  }
  if (jobs.length === 1) return jobs[0]!.id;
  const listed = more ? `the newest ${jobs.length} of more than ${jobs.length} jobs` : `${jobs.length} jobs`;
  throw new CliError(
    `job id prefix "${word}" is ambiguous: it matches ${listed}; type more of the id\n${candidates(jobs)}`,
    ExitCode.Usage,
  );
}

/** The candidates, indented under the message. */
function candidates(jobs: readonly JobSummary[]): string {
  const table = renderTable(
    ['ID', 'STATE', 'CREATED', 'COMMAND'],
    jobs.map((j) => [j.id, j.state, tableTime(j.createdAt), j.command.join(' ').slice(0, 60)]),
  );
  return table
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
