// What a job listing (`rankd jobs`, `GET /v1/jobs`) takes: its bounds and the states and
// words of --state / ?state=, without the schema library: the CLI checks its flags with
// these before any request, and loading TypeBox for them would cost it hundreds of ms.

export const DEFAULT_JOB_LIST_LIMIT = 100;
export const MAX_JOB_LIST_LIMIT = 1000;

/** Every state of a job, in the order a job goes through them (rest/jobs.ts's JobState). */
export const JOB_STATES = [
  'queued',
  'pending',
  'starting',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'timed-out',
  'lost',
] as const;
export type JobStateName = (typeof JOB_STATES)[number];

/**
 * Words for several states at once, as squeue users think of them: `active` is every job that
 * has not ended (waiting or running), `done` every job that has (however it ended).
 */
export const JOB_STATE_GROUPS: Readonly<Record<'active' | 'done', readonly JobStateName[]>> = {
  active: ['queued', 'pending', 'starting', 'running'],
  done: ['succeeded', 'failed', 'cancelled', 'timed-out', 'lost'],
};

/** The words --state and ?state= take, for messages. */
export const JOB_STATE_WORDS: readonly string[] = [...JOB_STATES, ...Object.keys(JOB_STATE_GROUPS)];

/**
 * "running,queued", "done" → the states named, each once, in JOB_STATES order; or the first
 * word that names none, so that the refusal can name it.
 */
export function parseJobStates(text: string): { states: JobStateName[] } | { bad: string } {
  const named = new Set<JobStateName>();
  for (const word of text.split(',')) {
    const group = JOB_STATE_GROUPS[word as keyof typeof JOB_STATE_GROUPS];
    if (group) for (const s of group) named.add(s);
    else if ((JOB_STATES as readonly string[]).includes(word)) named.add(word as JobStateName);
    else return { bad: word };
  }
  return { states: JOB_STATES.filter((s) => named.has(s)) };
}
