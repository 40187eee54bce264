// The filters of GET /v1/jobs, from its query: checked, and held to the caller's role.
import { ErrorCode, RankdError, type JobListQuery, type Role } from '@rankd/protocol';
import { DEFAULT_JOB_LIST_LIMIT, JOB_STATE_WORDS, parseJobStates } from '@rankd/protocol/job-list';
import type { JobFilter } from '../jobs/jobs-repo.js';
import type { Principal } from '../store/users-repo.js';
import { forbidden } from './auth.js';
import { GRANTS, scopeOf } from './policy.js';

/**
 * `own`: the owner the caller's role limits its listings to (its own name), undefined when it
 * reads every job. Asking for another user's jobs with such a role is a 403, never an empty
 * list: the caller learns it asked for what it may not read, not that the user has no jobs.
 */
export function jobFilterOf(query: JobListQuery, principal: Principal | null, own: string | undefined): JobFilter {
  if (query.user !== undefined && own !== undefined && query.user !== own) {
    const readers = (Object.keys(GRANTS) as Role[]).filter((r) => scopeOf(r, 'jobs.read') === 'all');
    throw forbidden(
      `user "${principal?.user}" (role ${principal?.role}) may not list the jobs of "${query.user}": that role lists its own jobs only; the role ${readers.join(' or ')} lists anyone's`,
    );
  }
  const owner = query.user ?? own;
  return {
    limit: query.limit ?? DEFAULT_JOB_LIST_LIMIT,
    ...(owner !== undefined ? { owner } : {}),
    ...(query.state !== undefined ? { states: statesOf(query.state) } : {}),
    ...(query.since !== undefined ? { since: sinceOf(query.since) } : {}),
    ...(query.idPrefix !== undefined ? { idPrefix: query.idPrefix } : {}),
  };
}

function statesOf(text: string): JobFilter['states'] {
  const parsed = parseJobStates(text);
  if ('bad' in parsed)
    throw new RankdError(
      ErrorCode.InvalidRequest,
      `state=${text.slice(0, 64)}: "${parsed.bad.slice(0, 64)}" is not a job state; the states are ${JOB_STATE_WORDS.join(', ')} (comma-separated)`,
    );
  return parsed.states;
}

/** An ISO time or milliseconds since the epoch, as GET /v1/audit takes it. */
function sinceOf(text: string): number {
  const at = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(at))
    throw new RankdError(ErrorCode.InvalidRequest, `since=${text}: an ISO time or milliseconds since the epoch`);
  return at;
}
