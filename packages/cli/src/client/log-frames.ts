// Reader of the controller's `format=frames` log stream: a JSON header line per
// record, then that record's raw bytes. Output reaches the terminal as the bytes the
// ranks wrote, with no text decoding or JSON escaping on the way.
import { CliError, ExitCode } from '../exit-codes.js';

export interface OutputFrame {
  kind: 'output';
  rank: number;
  stream: 'stdout' | 'stderr';
  offset: number;
  data: Buffer;
  /** When the controller stored it (RFC 3339), when the stream was asked in time order. */
  time?: string;
}

export interface EndFrame {
  kind: 'end';
  state: string;
  reason: string;
  exitCode: number | null;
}

/** The job waits in the queue (sent again whenever its reason changes), or has left it and started. */
export type QueueFrame = { kind: 'queued'; reason: string } | { kind: 'started' };

/** A warning the ranks of one node carry, once per node and message. */
export interface WarningFrame {
  kind: 'warning';
  node: string;
  ranks: number[];
  message: string;
}

/** An attempt's output begins (0-based `attempt`): sent when the job has had more than one. */
export interface AttemptFrame {
  kind: 'attempt';
  attempt: number;
  nodes: string[];
  startedAt: string;
}

/** How a failed attempt ended, the job restarting (LogRestart in the protocol). */
export interface AttemptFailureInfo {
  rank: number;
  node: string;
  /** The rank's state: exited, failed-to-start, unknown (lost). */
  state: string;
  exitCode: number | null;
  signal: string | null;
  reason: string;
  lastLines: string[];
}

/** A followed attempt failed and the job starts again: the next attempt's offsets start at 0. */
export interface RestartFrame {
  kind: 'restart';
  attempt: number;
  maxRestarts: number;
  failure: AttemptFailureInfo | null;
  reason: string;
  excluded: string[];
  /** Seconds. */
  delay: number;
}

export type LogFrame = OutputFrame | EndFrame | QueueFrame | WarningFrame | AttemptFrame | RestartFrame;

const NL = 0x0a;
/** Headers are tens of bytes; a longer "line" means the stream is not what we think. */
const MAX_HEADER_BYTES = 4096;

export async function* readLogFrames(body: AsyncIterable<Buffer>): AsyncGenerator<LogFrame> {
  let headerParts: Buffer[] = [];
  let headerBytes = 0;
  let current: Omit<OutputFrame, 'data'> | null = null;
  let need = 0;
  let payload: Buffer[] = [];
  for await (const chunk of body) {
    let pos = 0;
    while (pos < chunk.length) {
      if (!current) {
        const nl = chunk.indexOf(NL, pos);
        const piece = chunk.subarray(pos, nl < 0 ? chunk.length : nl);
        headerParts.push(piece);
        headerBytes += piece.length;
        if (headerBytes > MAX_HEADER_BYTES) throw malformed(`a header line longer than ${MAX_HEADER_BYTES} bytes`);
        if (nl < 0) break;
        pos = nl + 1;
        const header = parseHeader(Buffer.concat(headerParts).toString('utf8'));
        headerParts = [];
        headerBytes = 0;
        if (header.kind !== 'output') {
          yield header;
          continue;
        }
        current = header.frame;
        need = header.bytes;
        payload = [];
        if (need > 0) continue;
      } else {
        const take = Math.min(need, chunk.length - pos);
        payload.push(chunk.subarray(pos, pos + take));
        pos += take;
        need -= take;
        if (need > 0) continue;
      }
      yield { ...current, data: payload.length === 1 ? payload[0]! : Buffer.concat(payload) };
      current = null;
    }
  }
  if (current || headerBytes > 0) throw new CliError('the log stream ended mid-record', ExitCode.Unreachable);
}

type Header =
  | EndFrame
  | QueueFrame
  | WarningFrame
  | AttemptFrame
  | RestartFrame
  | { kind: 'output'; frame: Omit<OutputFrame, 'data'>; bytes: number };

function parseHeader(line: string): Header {
  let h: Record<string, unknown>;
  try {
    h = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw malformed(`a header that is not JSON: ${line.slice(0, 80)}`);
  }
  if (typeof h.end === 'object' && h.end !== null) {
    const end = h.end as Record<string, unknown>;
    return {
      kind: 'end',
      state: String(end.state),
      reason: String(end.reason ?? ''),
      exitCode: typeof end.exitCode === 'number' ? end.exitCode : null,
    };
  }
  if (typeof h.queued === 'object' && h.queued !== null)
    return { kind: 'queued', reason: String((h.queued as Record<string, unknown>).reason ?? '') };
  if (typeof h.started === 'object' && h.started !== null) return { kind: 'started' };
  if (typeof h.warning === 'object' && h.warning !== null) {
    const w = h.warning as Record<string, unknown>;
    const ranks = Array.isArray(w.ranks) ? w.ranks.filter(isCount) : [];
    return { kind: 'warning', node: String(w.node ?? ''), ranks, message: String(w.message ?? '') };
  }
  if (typeof h.attempt === 'object' && h.attempt !== null) return attemptFrame(h.attempt as Record<string, unknown>);
  if (typeof h.restart === 'object' && h.restart !== null) return restartFrame(h.restart as Record<string, unknown>);
  if (typeof h.revoked === 'object' && h.revoked !== null) {
    // the token, user or session behind this stream was revoked: reconnecting cannot help
    const revoked = h.revoked as Record<string, unknown>;
    throw new CliError(
      `the controller ended this log stream: ${String(revoked.message ?? '')} (${String(revoked.code ?? '')})`,
      ExitCode.Unauthorized,
    );
  }
  const { rank, stream, offset, bytes, time } = h;
  if (
    !isCount(rank) ||
    (stream !== 'stdout' && stream !== 'stderr') ||
    !isCount(offset) ||
    !isCount(bytes) ||
    (time !== undefined && typeof time !== 'string')
  ) {
    throw malformed(`an unexpected header: ${line.slice(0, 80)}`);
  }
  return {
    kind: 'output',
    frame: { kind: 'output', rank, stream, offset, ...(time === undefined ? {} : { time }) },
    bytes,
  };
}

function attemptFrame(a: Record<string, unknown>): AttemptFrame {
  if (!isCount(a.attempt)) throw malformed(`an attempt line without its number: ${JSON.stringify(a).slice(0, 80)}`);
  return { kind: 'attempt', attempt: a.attempt, nodes: strings(a.nodes), startedAt: String(a.startedAt ?? '') };
}

function restartFrame(r: Record<string, unknown>): RestartFrame {
  if (!isCount(r.attempt) || !isCount(r.maxRestarts))
    throw malformed(`a restart line without its attempt: ${JSON.stringify(r).slice(0, 80)}`);
  const f = typeof r.failure === 'object' && r.failure !== null ? (r.failure as Record<string, unknown>) : null;
  return {
    kind: 'restart',
    attempt: r.attempt,
    maxRestarts: r.maxRestarts,
    failure: f && {
      rank: isCount(f.rank) ? f.rank : 0,
      node: String(f.node ?? ''),
      state: String(f.state ?? ''),
      exitCode: typeof f.exitCode === 'number' ? f.exitCode : null,
      signal: typeof f.signal === 'string' ? f.signal : null,
      reason: String(f.reason ?? ''),
      lastLines: strings(f.lastLines),
    },
    reason: String(r.reason ?? ''),
    excluded: strings(r.excluded),
    delay: typeof r.delay === 'number' && r.delay >= 0 ? r.delay : 0,
  };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function malformed(what: string): CliError {
  return new CliError(`the controller sent a malformed log stream: ${what}`, ExitCode.RemoteFailure);
}
