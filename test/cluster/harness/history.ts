// The history checker: reads the controller's event log (and the stored log files it
// speaks of) and lists every broken invariant, in words a reader can act on.
//
//   - every rank of an ended job has exactly one terminal state (one rank.exited);
//   - a rank's stored log offsets are contiguous: each stored chunk starts where the
//     previous one ended, a restart never finds fewer bytes than were recorded, the
//     exit's byte counts are where the offsets reached, and so are the files;
//   - no rank starts, ends or stores output after its job ended, and an ended job
//     changes state no more;
//   - no job is marked succeeded with a rank that is unknown, failed or non-zero.
//
// Events (see packages/controller/src/jobs): job.submitted {worldSize}, job.state {from,
// to}, rank.started {node, pid}, rank.output {stream, offset, bytes}, rank.output.size
// {stdout, stderr} (after a controller restart), rank.exited {state, code, signal,
// stdout, stderr}. Rank events have the subject "<jobId>/<rank>".
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
  /** Size of a stored rank stream, or null when there is no such file. */
  logSize?: (jobId: string, rank: number, stream: Stream) => number | null;
}

interface RankTrack {
  started: number;
  exits: HistoryEvent[];
  end: Record<Stream, number>;
}

interface JobTrack {
  worldSize: number;
  ended: HistoryEvent | null;
  ranks: Map<number, RankTrack>;
}

/** Every violated invariant, one line each; empty when the history is sound. */
export function checkHistory(history: History): string[] {
  // no two jobs ever held one core or GPU (job.allocated / job.released)
  const problems: string[] = allocationOverlaps(history.events);
  const jobs = new Map<string, JobTrack>();
  const rankOf = (e: HistoryEvent): { jobId: string; job: JobTrack; rank: number; track: RankTrack } | null => {
    const slash = e.subject.lastIndexOf('/');
    const jobId = e.subject.slice(0, slash);
    const rank = Number(e.subject.slice(slash + 1));
    const job = jobs.get(jobId);
    if (slash < 0 || !Number.isInteger(rank) || !job) {
      problems.push(`event ${e.id} ${e.kind}: subject ${e.subject} is no rank of a submitted job`);
      return null;
    }
    if (rank < 0 || rank >= job.worldSize) {
      problems.push(`event ${e.id} ${e.kind}: job ${jobId} has no rank ${rank} (world size ${job.worldSize})`);
      return null;
    }
    let track = job.ranks.get(rank);
    if (!track) job.ranks.set(rank, (track = { started: 0, exits: [], end: { stdout: 0, stderr: 0 } }));
    return { jobId, job, rank, track };
  };
  const afterEnd = (job: JobTrack, e: HistoryEvent, what: string): void => {
    if (job.ended)
      problems.push(
        `${e.subject}: ${what} (event ${e.id}) after its job ended ${job.ended.data['to']} (event ${job.ended.id})`,
      );
  };

  for (const e of [...history.events].sort((a, b) => a.id - b.id)) {
    switch (e.kind) {
      case 'job.submitted': {
        if (jobs.has(e.subject)) problems.push(`job ${e.subject} submitted twice (event ${e.id})`);
        jobs.set(e.subject, { worldSize: Number(e.data['worldSize']), ended: null, ranks: new Map() });
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
      case 'rank.started': {
        const r = rankOf(e);
        if (!r) break;
        r.track.started++;
        if (r.track.started > 1) problems.push(`${e.subject}: started ${r.track.started} times (event ${e.id})`);
        if (r.track.exits.length > 0) problems.push(`${e.subject}: started (event ${e.id}) after its terminal state`);
        afterEnd(r.job, e, 'started');
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
        afterEnd(r.job, e, `stored ${stream} output`);
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
        afterEnd(r.job, e, `ended ${e.data['state']}`);
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

  for (const [jobId, job] of jobs) {
    if (!job.ended) continue;
    const state = String(job.ended.data['to']);
    for (let rank = 0; rank < job.worldSize; rank++) {
      const track = job.ranks.get(rank);
      const exits = track?.exits ?? [];
      if (exits.length === 0)
        problems.push(`${jobId}/${rank}: the job ended ${state} but the rank has no terminal state`);
      const exit = exits[0];
      if (state === 'succeeded' && exit) {
        const {
          state: rankState,
          code,
          signal,
        } = exit.data as { state: string; code: number | null; signal: string | null };
        if (rankState !== 'exited' || code !== 0 || signal !== null) {
          problems.push(
            `${jobId}: marked succeeded, but rank ${rank} ended ${rankState} (code ${code}, signal ${signal})`,
          );
        }
      }
      if (track && history.logSize) {
        for (const stream of STREAMS) {
          const size = history.logSize(jobId, rank, stream);
          if (size !== null && size !== track.end[stream])
            problems.push(
              `${jobId}/${rank} ${stream}: the stored file has ${size} bytes, the offsets reach ${track.end[stream]}`,
            );
        }
      }
    }
  }
  return problems;
}

/** The controller's events and log files from its data directory (read-only; the controller may be running). */
export function readHistory(dataDir: string): Required<History> {
  const db = new Database(join(dataDir, 'rankd.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT id, at, kind, subject, data FROM events ORDER BY id').all() as Array<
      Omit<HistoryEvent, 'data'> & { data: string }
    >;
    const events = rows.map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
    const logSize = (jobId: string, rank: number, stream: Stream): number | null => {
      const file = join(dataDir, 'logs', jobId, `${rank}.${stream}`);
      return existsSync(file) ? statSync(file).size : null;
    };
    return { events, logSize };
  } finally {
    db.close();
  }
}
