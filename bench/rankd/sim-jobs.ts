// The job side of the simulated agents (agent-sim.ts): what a real agent tells the
// controller about a job, without running anything. A node answers job.start with one
// rank.started per rank (a pid, the start time, and the binding of the plan, verified, as
// an agent reports it once /proc matched); on the figure's word it fences (its ranks'
// business cards in one pmi.fence, as a real agent does once all its local ranks are in
// barrier_in), notes when pmi.fenced comes back, pulls an epoch's chunks one after the
// other as a real agent's first missed get does, and at the end reports every rank's exit
// so the job ends cleanly.
//
// A few programs end on their own, as they would under a real agent: `true` exits 0,
// `false` exits 1, and `echo ARGS…` writes ARGS and a newline on stdout (one rank.output
// binary frame at offset 0, as the agent's output pump sends it) and exits 0. They end
// `exitDelayMs` after their start (SIM_EXIT_DELAY_MS; 0, the default, ends them at once,
// right behind their rank.started), each rank's output before its rank.exit, whose
// outputBytes count it. Any other program runs until the figure's `exit` command (or, with
// sleepRanks, `sleep S` for S seconds).
//
// Timestamps are performance.timeOrigin + performance.now(): milliseconds on a clock the
// simulator processes on one machine share (hrtime is per process).
import type WebSocket from 'ws';
import { encodeBinaryFrame } from '@rankd/protocol';

export const now = (): number => performance.timeOrigin + performance.now();

/** A business card: about what MPICH over UCX puts per rank (a hex-encoded address). */
export const CARD_BYTES = 400;
export function card(rank: number): string {
  return rank
    .toString(16)
    .padStart(8, '0')
    .repeat(CARD_BYTES / 8);
}

/** Bounds of every wait, so that a lost answer ends a round with a reason instead of hanging. */
const FENCE_TIMEOUT_MS = 120_000;
const FETCH_TIMEOUT_MS = 30_000;

export type Command =
  | { cmd: 'fence'; jobId: string; epoch: number }
  | { cmd: 'pull'; jobId: string; epoch: number; chunks: number; nodes: number; verify: boolean }
  | { cmd: 'exit'; jobId: string }
  /** agent-sim.ts takes the node's link down (a lost node) or brings it back. */
  | { cmd: 'lose' | 'revive'; node: string };

interface RankLaunchLite {
  rank: number;
  argv: string[];
  cpus: number[];
  memNodes: number[];
}

/** How a program that ends on its own ends: its exit code, and what it writes on stdout. */
interface OwnEnd {
  code: number;
  stdout?: Buffer;
}

/** `true`, `false` and `echo` end on their own (by name or path, as a shell finds them); anything else waits. */
function ownEnd(program: string, args: string[]): OwnEnd | undefined {
  switch (program.slice(program.lastIndexOf('/') + 1)) {
    case 'true':
      return { code: 0 };
    case 'false':
      return { code: 1 };
    case 'echo':
      return { code: 0, stdout: Buffer.from(`${args.join(' ')}\n`) };
    default:
      return undefined;
  }
}

interface NodeJob {
  ranks: number[];
  /** The node's puts, built at job.start: a fence only serializes and sends them. */
  pairs: Array<[string, string]>;
  /** The epoch fenced last, when it was sent and when its answer came. */
  fence: { epoch: number; sentAt: number; fencedAt: number | null; chunks: number | null } | null;
}

export interface SimNode {
  name: string;
  ws: WebSocket;
  jobs: Map<string, NodeJob>;
}

export class SimJobs {
  private readonly nodes: SimNode[] = [];
  private readonly fetches = new Map<
    string,
    { resolve: (frame: Buffer) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }
  >();
  private fetchSeq = 0;
  private fenceWait: { epoch: number; done: () => void } | null = null;
  /** Per job, the nodes of this process that got its job.start so far: "started" is reported once all have. */
  private readonly starts = new Map<string, { nodes: number; ranks: number; firstAt: number; lastAt: number }>();

  constructor(
    private readonly emit: (event: Record<string, unknown>) => void,
    /** Ranks whose argv is `sleep S` exit after S seconds; aborted ones end by SIGTERM. */
    private readonly sleepRanks = false,
    /** How long after their start the programs that end on their own (`true`, `false`, `echo`) end. */
    private readonly exitDelayMs = 0,
  ) {}

  addNode(name: string, ws: WebSocket): SimNode {
    const node: SimNode = { name, ws, jobs: new Map() };
    this.nodes.push(node);
    return node;
  }

  /** The node is lost: its ranks are gone with it, and it reports nothing of them. */
  forget(node: SimNode): void {
    node.jobs.clear();
  }

  /** job.start: every rank is "running" at once; the cards are made now, not at fence time. */
  started(node: SimNode, m: { jobId: string; ranks: RankLaunchLite[] }): void {
    if (node.jobs.has(m.jobId)) return; // repeated after a reconnect
    const at = now();
    const ranks = m.ranks.map((r) => r.rank);
    node.jobs.set(m.jobId, { ranks, pairs: ranks.map((r) => [`card-${r}`, card(r)]), fence: null });
    const startedAt = new Date().toISOString();
    for (const r of m.ranks) {
      // binding as planned and verified: what an agent reports once /proc matched the plan
      send(node.ws, {
        type: 'rank.started',
        jobId: m.jobId,
        rank: r.rank,
        pid: 100_000 + r.rank,
        startedAt,
        binding: { cpus: r.cpus, memNodes: r.memNodes, verified: true },
        warnings: [],
      });
    }
    const [program, ...args] = m.ranks[0]?.argv ?? [];
    const own = program === undefined ? undefined : ownEnd(program, args);
    if (own) {
      if (this.exitDelayMs > 0) setTimeout(() => this.endOwn(node, m.jobId, own), this.exitDelayMs).unref();
      else this.endOwn(node, m.jobId, own);
    } else if (this.sleepRanks && program === 'sleep' && Number.isFinite(Number(args[0]))) {
      setTimeout(() => this.endRanks(node, m.jobId, 0, null), Number(args[0]) * 1000).unref();
    }
    // counted per job rather than read off node.jobs: ranks that end on their own leave it at once
    const tally = this.starts.get(m.jobId) ?? { nodes: 0, ranks: 0, firstAt: at, lastAt: at };
    tally.nodes++;
    tally.ranks += ranks.length;
    tally.lastAt = at;
    this.starts.set(m.jobId, tally);
    if (tally.nodes === this.nodes.length) {
      this.starts.delete(m.jobId);
      this.emit({ event: 'started', jobId: m.jobId, ...tally });
    }
  }

  /** A program that ends on its own: its output, then every rank's exit, as the agent's pump orders them. */
  private endOwn(node: SimNode, jobId: string, own: OwnEnd): void {
    const job = node.jobs.get(jobId);
    if (!job) return; // aborted or ended first
    node.jobs.delete(jobId);
    const endedAt = new Date().toISOString();
    const bytes = own.stdout?.length ?? 0;
    for (const rank of job.ranks) {
      if (own.stdout)
        node.ws.send(encodeBinaryFrame({ type: 'rank.output', jobId, rank, stream: 'stdout', offset: 0 }, own.stdout));
      send(node.ws, {
        type: 'rank.exit',
        jobId,
        rank,
        code: own.code,
        signal: null,
        endedAt,
        outputBytes: { stdout: bytes, stderr: 0 },
      });
    }
  }

  /** job.abort: with sleepRanks, the node's ranks of the job end as SIGTERM ends `sleep`. */
  aborted(node: SimNode, m: { jobId: string }): void {
    if (this.sleepRanks) this.endRanks(node, m.jobId, null, 'SIGTERM');
  }

  private endRanks(node: SimNode, jobId: string, code: number | null, signal: string | null): void {
    const job = node.jobs.get(jobId);
    if (!job) return;
    node.jobs.delete(jobId);
    const endedAt = new Date().toISOString();
    for (const rank of job.ranks)
      send(node.ws, { type: 'rank.exit', jobId, rank, code, signal, endedAt, outputBytes: { stdout: 0, stderr: 0 } });
  }

  fenced(node: SimNode, m: { jobId: string; epoch: number; chunks: number }): void {
    const at = now();
    const f = node.jobs.get(m.jobId)?.fence;
    if (!f || f.epoch !== m.epoch || f.fencedAt !== null) return;
    f.fencedAt = at;
    f.chunks = m.chunks;
    const answered = (n: SimNode) => {
      const j = n.jobs.get(m.jobId);
      return !j || (j.fence?.epoch === m.epoch && j.fence.fencedAt !== null);
    };
    if (this.fenceWait?.epoch === m.epoch && this.nodes.every(answered)) this.fenceWait.done();
  }

  /** A pmi.chunk answer, as raw bytes: parsing 256-KiB chunks is left to whoever asked (see pull). */
  chunk(id: string, frame: Buffer, error?: string): void {
    const pending = this.fetches.get(id);
    if (!pending) return;
    this.fetches.delete(id);
    clearTimeout(pending.timer);
    if (error) pending.reject(new Error(error));
    else pending.resolve(frame);
  }

  async command(c: Command): Promise<void> {
    try {
      if (c.cmd === 'fence') await this.fence(c.jobId, c.epoch);
      else if (c.cmd === 'pull') await this.pull(c);
      else if (c.cmd === 'exit') this.exit(c.jobId);
    } catch (err) {
      this.emit({ event: 'error', cmd: c.cmd, message: (err as Error).message });
    }
  }

  /** Every node of the job fences `epoch` at once; reported when every answer is in. */
  private async fence(jobId: string, epoch: number): Promise<void> {
    const nodes = this.withJob(jobId);
    const all = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `fence ${epoch}: ${nodes.filter((n) => n.jobs.get(jobId)!.fence?.fencedAt == null).length} of ${nodes.length} nodes got no pmi.fenced within ${FENCE_TIMEOUT_MS / 1000} s`,
            ),
          ),
        FENCE_TIMEOUT_MS,
      );
      this.fenceWait = { epoch, done: () => (clearTimeout(timer), resolve()) };
    });
    for (const node of nodes) {
      const job = node.jobs.get(jobId)!;
      // one frame: 8 cards are ~3.4 KB, far under the agent's 256-KiB fence frames
      const frame = JSON.stringify({ type: 'pmi.fence', jobId, epoch, part: 0, pairs: job.pairs });
      node.ws.send(frame);
      job.fence = { epoch, sentAt: now(), fencedAt: null, chunks: null };
    }
    try {
      await all;
    } finally {
      this.fenceWait = null;
    }
    this.emit({
      event: 'fenced',
      jobId,
      epoch,
      nodes: nodes.map((n) => {
        const f = n.jobs.get(jobId)!.fence!;
        return [f.sentAt, f.fencedAt, f.chunks];
      }),
    });
  }

  /**
   * The first `nodes` nodes each pull every chunk of the epoch, one after the other (a real
   * agent's first missed get does exactly that), all nodes at once. `verify` parses every
   * chunk and checks that the whole job's cards came back; otherwise only the frame's size
   * is counted: a real agent parses and validates on its own CPU, here 500 nodes share one.
   */
  private async pull(c: Extract<Command, { cmd: 'pull' }>): Promise<void> {
    const nodes = this.withJob(c.jobId).slice(0, c.nodes);
    const results = await Promise.all(
      nodes.map(async (node) => {
        const seen = c.verify ? new Map<string, string>() : null;
        let bytes = 0;
        let pairs = 0;
        const start = now();
        for (let chunk = 0; chunk < c.chunks; chunk++) {
          const frame = await this.fetch(node, c.jobId, c.epoch, chunk);
          bytes += frame.length;
          if (seen) {
            const m = JSON.parse(frame.toString('utf8')) as { pairs: Array<[string, string]>; error?: string };
            if (m.error) throw new Error(`${node.name}: ${m.error}`);
            pairs += m.pairs.length;
            for (const [k, v] of m.pairs) seen.set(k, v);
          }
        }
        const end = now();
        const wrong = seen
          ? [...seen].filter(([k, v]) => !/^card-\d+$/.test(k) || v !== card(Number(k.slice(5)))).length
          : null;
        return { start, end, bytes, ...(seen ? { pairs, keys: seen.size, wrong } : {}) };
      }),
    );
    this.emit({ event: 'pulled', jobId: c.jobId, epoch: c.epoch, nodes: results });
  }

  private fetch(node: SimNode, jobId: string, epoch: number, chunk: number): Promise<Buffer> {
    const id = `sim-${++this.fetchSeq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fetches.delete(id);
        reject(
          new Error(`${node.name}: chunk ${chunk} of fence ${epoch} did not come within ${FETCH_TIMEOUT_MS / 1000} s`),
        );
      }, FETCH_TIMEOUT_MS);
      this.fetches.set(id, { resolve, reject, timer });
      send(node.ws, { type: 'pmi.fetch', id, jobId, epoch, chunk });
    });
  }

  /** Every rank exits 0 having written nothing: the controller holds all of its (zero) bytes. */
  private exit(jobId: string): void {
    const endedAt = new Date().toISOString();
    let ranks = 0;
    for (const node of this.withJob(jobId)) {
      for (const rank of node.jobs.get(jobId)!.ranks) {
        send(node.ws, {
          type: 'rank.exit',
          jobId,
          rank,
          code: 0,
          signal: null,
          endedAt,
          outputBytes: { stdout: 0, stderr: 0 },
        });
        ranks++;
      }
      node.jobs.delete(jobId);
    }
    this.emit({ event: 'exited', jobId, ranks });
  }

  private withJob(jobId: string): SimNode[] {
    const nodes = this.nodes.filter((n) => n.jobs.has(jobId));
    if (nodes.length === 0) throw new Error(`no node of this simulator holds job ${jobId}`);
    return nodes;
  }
}

function send(ws: WebSocket, message: Record<string, unknown>): void {
  ws.send(JSON.stringify(message));
}
