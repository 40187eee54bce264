// A job's attempts (rankd run --max-restarts) on one time axis: a bar per attempt from its
// start to its end, coloured by how it ended, the wait before the next one as the gap
// between bars, and under each bar what it ran on, how it failed and what it left out.
import type { JobView } from '../api/client';
import { StateBadge, duration, when } from '../format';

type Attempt = JobView['attempts'][number];
type Failure = NonNullable<Attempt['firstFailure']>;

/** A bar narrower than this (in % of the axis) would not be seen: a quick failure still shows. */
const MIN_BAR_PCT = 0.5;

/** "attempt 1/2": the current attempt (0-based, as RANKD_ATTEMPT) over the restarts the job may take. */
export function attemptLabel(job: Pick<JobView, 'attempt' | 'maxRestarts'>): string {
  return `attempt ${job.attempt}/${job.maxRestarts}`;
}

export function AttemptTimeline({ job, now }: { job: JobView; now: number }) {
  const attempts = job.attempts;
  if (attempts.length === 0) return null;
  const start = Date.parse(attempts[0]!.startedAt);
  const last = attempts.at(-1)!;
  // a queued restart's axis runs to now, or to when its next attempt is due if later
  const end = Math.max(
    start + 1,
    waitingToRestart(job) || !last.endedAt ? Math.max(now, waitEnd(last) ?? 0) : Date.parse(last.endedAt),
  );
  const pct = (t: number) => ((t - start) / (end - start)) * 100;
  return (
    <section aria-labelledby="attempts-h">
      <h2 id="attempts-h">Attempts</h2>
      <p class="summary">
        <span title="RANKD_ATTEMPT of its ranks, over the restarts it may take (--max-restarts)">
          {attemptLabel(job)}
        </span>
        {job.excluded.length > 0 && ` · left out: ${job.excluded.join(', ')}`}
        {waitingToRestart(job) && ` · ${job.reason}`}
      </p>
      <ol class="timeline" aria-label="Attempt timeline">
        {attempts.map((a) => {
          const from = Date.parse(a.startedAt);
          const to = a.endedAt ? Date.parse(a.endedAt) : now;
          const left = pct(from);
          const width = Math.max(MIN_BAR_PCT, Math.min(100 - left, pct(to) - left));
          return (
            <li class="attempt" data-attempt={a.attempt} key={a.attempt}>
              <span class="attempt-name">Attempt {a.attempt}</span>
              <div class="track">
                <div
                  class={`bar state-${a.state}`}
                  style={{ left: `${left}%`, width: `${width}%` }}
                  title={barTitle(a)}
                />
                {a.restartDelay !== null && a.restartDelay > 0 && (
                  <div
                    class="wait"
                    style={waitStyle(left + width, pct(waitEnd(a)!))}
                    title={`a wait of ${seconds(a.restartDelay)} before the next attempt (--restart-delay, backoff)`}
                  />
                )}
              </div>
              <AttemptDetail attempt={a} now={now} />
            </li>
          );
        })}
      </ol>
      <p class="axis muted">
        <span>{when(attempts[0]!.startedAt)}</span>
        <span>
          {axisEnd(end, now)} ({duration(attempts[0]!.startedAt, null, end)} after)
        </span>
      </p>
    </section>
  );
}

function AttemptDetail({ attempt: a, now }: { attempt: Attempt; now: number }) {
  return (
    <div class="attempt-detail">
      <StateBadge state={a.state} /> {duration(a.startedAt, a.endedAt, now)}
      {a.exitCode !== null && ` · exit ${a.exitCode}`} · on {a.nodes.join(', ')}
      {a.firstFailure && (
        <div class="failure">
          First failure: <FailureText failure={a.firstFailure} />
        </div>
      )}
      {a.excluded.length > 0 && <div>Left out of the next attempts: {a.excluded.join(', ')}</div>}
      {a.restartDelay !== null && <div>Next attempt after {seconds(a.restartDelay)}</div>}
    </div>
  );
}

/** "rank 5 on c was killed by SIGBUS · last line: CUDA error …": the rank, its node, its exit or signal. */
function FailureText({ failure: f }: { failure: Failure }) {
  const lastLine = f.lastLines.at(-1);
  return (
    <>
      {f.reason}
      {lastLine !== undefined && (
        <>
          {' '}
          · last line: <span class="mono">{lastLine}</span>
        </>
      )}
    </>
  );
}

function barTitle(a: Attempt): string {
  return `attempt ${a.attempt}: ${a.state}, ${when(a.startedAt)} → ${a.endedAt ? when(a.endedAt) : 'now'}`;
}

/** The wait after a bar: from the bar's drawn end (a quick attempt's bar is drawn wider) to the next start. */
function waitStyle(fromPct: number, toPct: number): { left: string; width: string } {
  const to = Math.min(100, toPct);
  return { left: `${fromPct}%`, width: `${Math.max(0, to - fromPct)}%` };
}

/** The axis's right end: now, a past end, or when a restarting job's next attempt is due. */
function axisEnd(end: number, now: number): string {
  const at = when(new Date(end).toISOString());
  if (end > now + 1000) return `${at} (next attempt due)`;
  return end >= now - 1000 ? 'now' : at;
}

/** When an attempt's wait for the next one ends; null for an attempt not (yet) followed by one. */
function waitEnd(a: Attempt): number | null {
  return a.endedAt === null || a.restartDelay === null ? null : Date.parse(a.endedAt) + a.restartDelay * 1000;
}

function waitingToRestart(job: Pick<JobView, 'state' | 'attempt'>): boolean {
  return job.state === 'queued' && job.attempt > 0;
}

function seconds(s: number): string {
  return s < 10 ? `${Number(s.toFixed(1))} s` : `${Math.round(s)} s`;
}
