// The history checker: reads the controller's event log (and the stored log files it
// speaks of) and lists every broken invariant, in words a reader can act on.
//
//   - every rank of an ended attempt has exactly one terminal state (one rank.exited);
//   - a rank's stored log offsets are contiguous: each stored chunk starts where the
//     previous one ended, a restart never finds fewer bytes than were recorded, the
//     exit's byte counts are where the offsets reached, and so are the files;
//   - no rank starts, ends or stores output after its attempt was released or its job
//     ended, and an ended job changes state no more;
//   - no job is marked succeeded with a rank of its last attempt unknown, failed or non-zero;
//   - each attempt of a job (rankd run --max-restarts) is allocated once and released
//     once, attempts are allocated in order (0, 1, 2 …: none skipped, none run twice), and
//     two attempts of one job are never live together (allocated, the other not released).
//
// Events (see packages/controller/src/jobs): job.submitted {worldSize}, job.state {from,
// to}, job.allocated {attempt}, job.released {attempt}, rank.started {node, pid},
// rank.output {stream, offset, bytes}, rank.output.size {stdout, stderr} (after a
// controller restart), rank.exited {state, code, signal, stdout, stderr}. Rank events have
// the subject "<attemptId>/<rank>": the attempt id is the job's id for attempt 0 and
// "<jobId>-<k>" for attempt k (job-records.ts attemptId()), and so are the log folders.
import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { allocationOverlaps } from '../../helpers/allocations.js';

export interface HistoryEvent {
  id: number;
  at: number;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

export type Stream = 'stdout' | 'stderr';
const STREAMS: readonly Stream[] = ['stdout', 'stderr'];
export const TERMINAL_JOB_STATES: ReadonlySet<string> = new Set([
  'succeeded',
  'failed',
  'cancelled',
  'timed-out',
  'lost',
]);

export interface History {
  events: HistoryEvent[];
  /** Size of a stored rank stream (by attempt id), or null when there is no such file. */
  logSize?: (attemptId: string, rank: number, stream: Stream) => number | null;
}

/** The id agents and log folders know attempt k of a job by (the controller's job-records.ts). */
export function attemptIdOf(jobId: string, attempt: number): string {
  return attempt === 0 ? jobId : `${jobId}-${attempt}`;
}

interface RankTrack {
  started: number;
  exits: HistoryEvent[];
  end: Record<Stream, number>;
}

interface AttemptTrack {
  id: string;
  attempt: number;
  job: JobTrack;
  allocated: HistoryEvent | null;
  released: HistoryEvent | null;
  ranks: Map<number, RankTrack>;
}

interface JobTrack {
  id: string;
  worldSize: number;
  ended: HistoryEvent | null;
  attempts: Map<number, AttemptTrack>;
  /** The attempt allocated and not yet released, if any. */
  live: AttemptTrack | null;
  /** The highest attempt allocated so far; -1 before the first. */
  lastAllocated: number;
}

/** Every violated invariant, one line each; empty when the history is sound. */
export function checkHistory(history: History): string[] {
  // no two jobs ever held one core or GPU (job.allocated / job.released)
  const problems: string[] = allocationOverlaps(history.events);
  const jobs = new Map<string, JobTrack>();
  const attempts = new Map<string, AttemptTrack>();
  const addAttempt = (job: JobTrack, attempt: number): AttemptTrack => {
    const track: AttemptTrack = {
      id: attemptIdOf(job.id, attempt),
      attempt,
      job,
      allocated: null,
      released: null,
      ranks: new Map(),
    };
    job.attempts.set(attempt, track);
    attempts.set(track.id, track);
    return track;
  };
  const rankOf = (e: HistoryEvent): { attempt: AttemptTrack; rank: number; track: RankTrack } | null => {
    const slash = e.subject.lastIndexOf('/');
    const attemptId = e.subject.slice(0, slash);
    const rank = Number(e.subject.slice(slash + 1));
    const attempt = attempts.get(attemptId);
    if (slash < 0 || !Number.isInteger(rank) || !attempt) {
      problems.push(`event ${e.id} ${e.kind}: subject ${e.subject} is no rank of a submitted job's attempt`);
      return null;
    }
    const { worldSize } = attempt.job;
    if (rank < 0 || rank >= worldSize) {
      problems.push(`event ${e.id} ${e.kind}: job ${attemptId} has no rank ${rank} (world size ${worldSize})`);
      return null;
    }
    let track = attempt.ranks.get(rank);
    if (!track) attempt.ranks.set(rank, (track = { started: 0, exits: [], end: { stdout: 0, stderr: 0 } }));
    return { attempt, rank, track };
  };
  const afterEnd = ({ job, released }: AttemptTrack, e: HistoryEvent, what: string): void => {
    if (released)
      problems.push(`${e.subject}: ${what} (event ${e.id}) after its attempt was released (event ${released.id})`);
    else if (job.ended)
      problems.push(
        `${e.subject}: ${what} (event ${e.id}) after its job ended ${job.ended.data['to']} (event ${job.ended.id})`,
      );
  };
  const attemptOf = (e: HistoryEvent): number => (typeof e.data['attempt'] === 'number' ? e.data['attempt'] : 0);

  for (const e of [...history.events].sort((a, b) => a.id - b.id)) {
    switch (e.kind) {
      case 'job.submitted': {
        if (jobs.has(e.subject)) problems.push(`job ${e.subject} submitted twice (event ${e.id})`);
        const job: JobTrack = {
          id: e.subject,
          worldSize: Number(e.data['worldSize']),
          ended: null,
          attempts: new Map(),
          live: null,
          lastAllocated: -1,
        };
        jobs.set(e.subject, job);
        // attempt 0 is known from the start: histories from before job.allocated existed have ranks without one
        addAttempt(job, 0);
        break;
      }
      case 'job.state': {
        const job = jobs.get(e.subject);
        if (!job) {
          problems.push(`event ${e.id}: job ${e.subject} changed state but was never submitted`);
          break;
        }
        if (job.ended)
          problems.push(
            `job ${e.subject} went from ${e.data['from']} to ${e.data['to']} (event ${e.id}) after it ended ${job.ended.data['to']}`,
          );
        else if (TERMINAL_JOB_STATES.has(String(e.data['to']))) job.ended = e;
        break;
      }
      case 'job.allocated': {
        const job = jobs.get(e.subject);
        if (!job) break; // allocationOverlaps speaks of allocations; a job never submitted is the state check's
        allocated(job, attemptOf(e), e);
        break;
      }
      case 'job.released': {
        const job = jobs.get(e.subject);
        if (job) released(job, attemptOf(e), e);
        break;
      }
      case 'rank.started': {
        const r = rankOf(e);
        if (!r) break;
        r.track.started++;
        if (r.track.started > 1) problems.push(`${e.subject}: started ${r.track.started} times (event ${e.id})`);
        if (r.track.exits.length > 0) problems.push(`${e.subject}: started (event ${e.id}) after its terminal state`);
        afterEnd(r.attempt, e, 'started');
        break;
      }
      case 'rank.output': {
        const r = rankOf(e);
        if (!r) break;
        const stream = e.data['stream'] as Stream;
        const offset = Number(e.data['offset']);
        const bytes = Number(e.data['bytes']);
        if (!STREAMS.includes(stream)) {
          problems.push(`${e.subject}: output event ${e.id} names no stream`);
          break;
        }
        if (offset !== r.track.end[stream]) {
          const what = offset > r.track.end[stream] ? 'a gap' : 'an overlap';
          problems.push(
            `${e.subject} ${stream}: ${what}: chunk at offset ${offset} (event ${e.id}), stored bytes end at ${r.track.end[stream]}`,
          );
        }
        if (!(bytes > 0)) problems.push(`${e.subject} ${stream}: event ${e.id} stores ${bytes} bytes`);
        r.track.end[stream] = offset + bytes;
        afterEnd(r.attempt, e, `stored ${stream} output`);
        break;
      }
      case 'rank.output.size': {
        const r = rankOf(e);
        if (!r) break;
        for (const stream of STREAMS) {
          const size = Number(e.data[stream]);
          if (size < r.track.end[stream])
            problems.push(
              `${e.subject} ${stream}: after a restart ${size} bytes are stored, but ${r.track.end[stream]} were recorded (event ${e.id})`,
            );
          r.track.end[stream] = size;
        }
        break;
      }
      case 'rank.exited': {
        const r = rankOf(e);
        if (!r) break;
        r.track.exits.push(e);
        if (r.track.exits.length > 1)
          problems.push(
            `${e.subject}: terminal state recorded ${r.track.exits.length} times (events ${r.track.exits.map((x) => x.id).join(', ')})`,
          );
        afterEnd(r.attempt, e, `ended ${e.data['state']}`);
        for (const stream of STREAMS) {
          const recorded = Number(e.data[stream]);
          if (recorded !== r.track.end[stream])
            problems.push(
              `${e.subject} ${stream}: the exit records ${recorded} bytes, the stored offsets reach ${r.track.end[stream]} (event ${e.id})`,
            );
        }
        break;
      }
      default:
        break;
    }
  }

  /** job.allocated: attempts in order, one at a time, each once, and none after the job ended. */
  function allocated(job: JobTrack, k: number, e: HistoryEvent): void {
    const track = job.attempts.get(k) ?? addAttempt(job, k);
    if (track.allocated) {
      problems.push(`${job.id}: attempt ${k} allocated twice (events ${track.allocated.id}, ${e.id})`);
      return;
    }
    track.allocated = e;
    if (job.ended) problems.push(`${job.id}: attempt ${k} allocated (event ${e.id}) after the job ended`);
    if (job.live)
      problems.push(
        `${job.id}: attempt ${k} allocated (event ${e.id}) while attempt ${job.live.attempt} was live: ` +
          'two attempts at once',
      );
    if (k !== job.lastAllocated + 1)
      problems.push(
        `${job.id}: attempt ${k} allocated (event ${e.id}) after attempt ${job.lastAllocated}: ` +
          (k > job.lastAllocated ? 'an attempt skipped' : 'an attempt run again'),
      );
    job.lastAllocated = Math.max(job.lastAllocated, k);
    job.live = track;
  }

  /** job.released: once per allocated attempt. */
  function released(job: JobTrack, k: number, e: HistoryEvent): void {
    const track = job.attempts.get(k);
    if (!track?.allocated) {
      problems.push(`${job.id}: attempt ${k} released (event ${e.id}) but never allocated`);
      return;
    }
    if (track.released) {
      problems.push(`${job.id}: attempt ${k} released twice (events ${track.released.id}, ${e.id})`);
      return;
    }
    track.released = e;
    if (job.live === track) job.live = null;
  }

  for (const job of jobs.values()) {
    const last = Math.max(...job.attempts.keys());
    for (const attempt of job.attempts.values()) {
      if (attempt.allocated && !attempt.released && job.ended)
        problems.push(
          `${job.id}: the job ended ${job.ended.data['to']} but attempt ${attempt.attempt} was never released`,
        );
      // an attempt is over when it was released, or when it was the job's last and the job ended
      const over = attempt.released !== null || (attempt.attempt === last && job.ended !== null);
      // a job that ended straight from the queue (cancelled, or failed by its preflight) never had ranks
      const neverRan = !attempt.allocated && attempt.ranks.size === 0 && job.ended?.data['from'] === 'queued';
      if (over && !neverRan) checkEndedAttempt(attempt, attempt.attempt === last ? job.ended : null);
    }
  }
  return problems;

  /**
   * Every rank of an ended attempt ended once; its files hold what its offsets say; the
   * ranks of a succeeded job's last attempt exited 0.
   */
  function checkEndedAttempt(attempt: AttemptTrack, jobEnd: HistoryEvent | null): void {
    const state = jobEnd ? String(jobEnd.data['to']) : null;
    for (let rank = 0; rank < attempt.job.worldSize; rank++) {
      const track = attempt.ranks.get(rank);
      const exits = track?.exits ?? [];
      if (exits.length === 0)
        problems.push(
          state
            ? `${attempt.id}/${rank}: the job ended ${state} but the rank has no terminal state`
            : `${attempt.id}/${rank}: attempt ${attempt.attempt} was released but the rank has no terminal state`,
        );
      const exit = exits[0];
      if (state === 'succeeded' && exit) {
        const {
          state: rankState,
          code,
          signal,
        } = exit.data as { state: string; code: number | null; signal: string | null };
        if (rankState !== 'exited' || code !== 0 || signal !== null) {
          problems.push(
            `${attempt.id}: marked succeeded, but rank ${rank} ended ${rankState} (code ${code}, signal ${signal})`,
          );
        }
      }
      if (track && history.logSize) {
        for (const stream of STREAMS) {
          const size = history.logSize(attempt.id, rank, stream);
          if (size !== null && size !== track.end[stream])
            problems.push(
              `${attempt.id}/${rank} ${stream}: the stored file has ${size} bytes, ` +
                `the offsets reach ${track.end[stream]}`,
            );
        }
      }
    }
  }
}

/** The controller's events and log files from its data directory (read-only; the controller may be running). */
export function readHistory(dataDir: string): Required<History> {
  const db = new Database(join(dataDir, 'rankd.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT id, at, kind, subject, data FROM events ORDER BY id').all() as Array<
      Omit<HistoryEvent, 'data'> & { data: string }
    >;
    const events = rows.map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
    const logSize = (attemptId: string, rank: number, stream: Stream): number | null => {
      const file = join(dataDir, 'logs', attemptId, `${rank}.${stream}`);
      return existsSync(file) ? statSync(file).size : null;
    };
    return { events, logSize };
  } finally {
    db.close();
  }
}
