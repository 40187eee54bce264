// The job-wide PMI fence, as a star through the controller: each node of a job sends its
// ranks' puts of an epoch; once every node has, each gets the merged puts back. A tree
// (hydra's proxies, Flux's overlay) would implement the same two entry points.
//
// Answers are encoded once and the same bytes go to every node. Merged puts larger than
// INLINE_BYTES are not pushed at all: the answer says how many chunks hold them and an
// agent pulls them when one of its ranks first asks for a key it lacks. A fence of 2,000
// nodes then costs 2,000 small frames, not 2,000 copies of every node's cards.
import {
  EncodedPmiPairs,
  encodePmiChunk,
  encodePmiFenced,
  type PmiChunk,
  type PmiFence,
  type PmiFetch,
  type PmiPairs,
} from '@rankd/protocol';
import type { Logger } from 'pino';

/** Merged puts up to this size travel inline with every answer. */
export const INLINE_BYTES = 64 * 1024;
/** A pulled chunk holds about this much (well under the 1 MiB frame cap). */
const CHUNK_BYTES = 256 * 1024;
/** What one node may put in one epoch before the job is failed for it. */
const NODE_EPOCH_BYTES = 32 * 1024 * 1024;

export interface FenceJobs {
  /** The nodes of a live job served by PMI, in node order; null when there is no such job. */
  nodes(jobId: string): readonly string[] | null;
  /** Fails the job with a reason (a node that broke the exchange). */
  fail(jobId: string, reason: string): void;
  /** Told of a frame from a node that has no rank of the live job it names (it is refused, and changes nothing). */
  foreign?(node: string, jobId: string, type: string): void;
}

export interface FenceNetwork {
  /** Sends an encoded text frame to a node; false when it is not connected. */
  sendEncoded(node: string, frame: Buffer): boolean;
}

interface Epoch {
  /** When its first frame came (performance.now()), for the fence's duration. */
  opened: number;
  /** Complete contributions, by node, with their size as they travel (summed as they came). */
  arrived: Map<string, { frames: PmiPairs[]; bytes: number }>;
  /** Frames of a node's contribution still coming (`more`). */
  partial: Map<string, { frames: PmiPairs[]; next: number; bytes: number }>;
  /** Set once every node has fenced: the answer, and the chunks a lazy answer points at. */
  answer: Buffer | null;
  chunks: EncodedPmiPairs[];
}

interface JobExchange {
  /** In node order: the merge follows it. */
  nodes: readonly string[];
  members: ReadonlySet<string>;
  /** By epoch number. Normally one is open at a time: no node can fence e+1 before e is answered. */
  epochs: Map<number, Epoch>;
}

const FOREIGN = Symbol('a node with no rank of the job');

export class FenceExchange {
  private readonly jobs = new Map<string, JobExchange>();

  constructor(
    private readonly live: FenceJobs,
    private readonly network: FenceNetwork,
    private readonly log: Logger,
    /** Told each fence's duration once its answer has gone out. */
    private readonly observe: (seconds: number) => void = () => {},
  ) {}

  /** A frame of a node's fence. */
  fence(node: string, m: PmiFence): void {
    const job = this.job(m.jobId, node, m.type);
    if (!job || job === FOREIGN) return;
    // Two open epochs mean the nodes disagree on where the job is: after a controller
    // restart during a fence, some nodes had the answer and moved on, and it is lost.
    const other = [...job.epochs].find(([n, e]) => n !== m.epoch && e.answer === null);
    if (other)
      return this.live.fail(
        m.jobId,
        `node ${node} fenced epoch ${m.epoch} while epoch ${other[0]} is open (was the controller restarted during a fence?)`,
      );
    let epoch = job.epochs.get(m.epoch);
    if (!epoch)
      job.epochs.set(
        m.epoch,
        (epoch = { opened: performance.now(), arrived: new Map(), partial: new Map(), answer: null, chunks: [] }),
      );
    if (epoch.answer) {
      // a fence re-sent after a reconnect, for an epoch that is over: the node missed the answer
      if (!m.more) this.network.sendEncoded(node, epoch.answer);
      return;
    }
    if (epoch.arrived.has(node)) return;
    let partial = epoch.partial.get(node);
    if (m.part === 0) epoch.partial.set(node, (partial = { frames: [], next: 0, bytes: 0 }));
    if (!partial || m.part !== partial.next) {
      epoch.partial.delete(node);
      return this.live.fail(m.jobId, `node ${node} sent part ${m.part} of fence ${m.epoch} out of order`);
    }
    partial.frames.push(m.pairs);
    partial.next++;
    for (const pair of m.pairs) partial.bytes += pairBytes(pair);
    if (partial.bytes > NODE_EPOCH_BYTES) {
      epoch.partial.delete(node);
      return this.live.fail(m.jobId, `node ${node} put more than ${NODE_EPOCH_BYTES >> 20} MiB in fence ${m.epoch}`);
    }
    if (m.more) return;
    epoch.partial.delete(node);
    epoch.arrived.set(node, { frames: partial.frames, bytes: partial.bytes });
    if (epoch.arrived.size === job.nodes.length) this.complete(m.jobId, job, m.epoch, epoch);
  }

  /** A node pulls a chunk of a lazily answered epoch. */
  fetch(node: string, m: PmiFetch): void {
    const job = this.job(m.jobId, node, m.type);
    if (job === FOREIGN) return;
    const chunk = job?.epochs.get(m.epoch)?.chunks[m.chunk];
    const head: Omit<PmiChunk, 'pairs'> = {
      type: 'pmi.chunk',
      ...(m.id ? { id: m.id } : {}),
      jobId: m.jobId,
      epoch: m.epoch,
      chunk: m.chunk,
    };
    const frame = chunk
      ? encodePmiChunk(head, chunk)
      : encodePmiChunk({ ...head, error: `no chunk ${m.chunk} of fence ${m.epoch} of job ${m.jobId}` }, null);
    this.network.sendEncoded(node, frame);
  }

  /** The job has ended: its puts go. */
  endJob(jobId: string): void {
    this.jobs.delete(jobId);
  }

  /** The job's exchange; null when it is not live or has no PMI; FOREIGN when the node has no rank of it (refused). */
  private job(jobId: string, node: string, type: string): JobExchange | typeof FOREIGN | null {
    let job = this.jobs.get(jobId);
    if (!job) {
      const nodes = this.live.nodes(jobId);
      if (!nodes) {
        this.log.warn({ jobId, node }, 'PMI frame for a job that is not live or has no PMI');
        return null;
      }
      this.jobs.set(jobId, (job = { nodes, members: new Set(nodes), epochs: new Map() }));
    }
    if (!job.members.has(node)) {
      this.log.warn({ jobId, node }, 'PMI frame from a node that has no rank of the job');
      this.live.foreign?.(node, jobId, type);
      return FOREIGN;
    }
    return job;
  }

  private complete(jobId: string, job: JobExchange, n: number, epoch: Epoch): void {
    // node order, each node's puts in the order they were made: a later put of a key wins
    const merged: PmiPairs = [];
    let bytes = 0;
    for (const node of job.nodes) {
      const arrived = epoch.arrived.get(node)!;
      bytes += arrived.bytes;
      for (const frame of arrived.frames) for (const pair of frame) merged.push(pair);
    }
    epoch.arrived.clear();
    if (bytes <= INLINE_BYTES) {
      epoch.answer = encodePmiFenced({ type: 'pmi.fenced', jobId, epoch: n, chunks: 0 }, new EncodedPmiPairs(merged));
    } else {
      epoch.chunks = chunked(merged).map((c) => new EncodedPmiPairs(c));
      epoch.answer = encodePmiFenced({ type: 'pmi.fenced', jobId, epoch: n, chunks: epoch.chunks.length }, null);
    }
    for (const node of job.nodes) this.network.sendEncoded(node, epoch.answer);
    this.observe((performance.now() - epoch.opened) / 1000);
  }
}

function chunked(pairs: PmiPairs): PmiPairs[] {
  const chunks: PmiPairs[] = [[]];
  let bytes = 0;
  for (const pair of pairs) {
    const size = pairBytes(pair);
    if (bytes + size > CHUNK_BYTES && chunks.at(-1)!.length > 0) {
      chunks.push([]);
      bytes = 0;
    }
    chunks.at(-1)!.push(pair);
    bytes += size;
  }
  return chunks;
}

/** Printable ASCII but `"` and `\`: what JSON writes as is, one byte a character. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A pair's size as it travels: JSON escapes can make a value up to six times its length. */
export function pairBytes(pair: readonly [string, string]): number {
  // `["k","v"]` and a separator: 8 bytes around plain text. Cards are hex, so this is the
  // common case, and it spares a JSON encoding per pair (three per pair per fence before).
  if (PLAIN.test(pair[0]) && PLAIN.test(pair[1])) return pair[0].length + pair[1].length + 8;
  return Buffer.byteLength(JSON.stringify(pair)) + 1;
}
