// The node's PMI-1 server: one key-value space per job, one connection per rank, and
// the fences that join the nodes through the controller.
//
// A rank reaches it on an inherited socket (PMI_FD=3), which nobody else can open, or,
// under a terminal where node-pty passes no extra descriptor, over its job's own loopback
// TCP port with a random single-use PMI_ID (PMI_PORT; pmi-port.ts bounds guessing and
// closes the port once no rank can still come). Whatever a rank sends can end only its own
// job's PMI; the agent and other jobs never see it.
import type net from 'node:net';
import type { PmiChunk, PmiFenced, PmiJobSpec, PmiPairs } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from '../link/controller-link.js';
import type { RankExit } from '../ranks/rank-spec.js';
import { PmiConnection, type PmiEnd, type PmiTarget } from './pmi-connection.js';
import { PmiJob, type FenceTransport } from './pmi-job.js';
import { PmiPort } from './pmi-port.js';

/** The descriptor number a rank finds its PMI socket on (the supervisor passes it through). */
export const PMI_FD = 3;
/** A fence frame carries at most this much of a node's puts; the rest follow with `more`. */
const FENCE_FRAME_BYTES = 256 * 1024;
/** How long a pulled chunk may take before the get that needed it fails. */
const FETCH_TIMEOUT_MS = 30_000;
/** A rank whose PMI closed before finalize is reported with its exit code if it exits within this long. */
const EXIT_WAIT_MS = 500;

/**
 * What keeps MPI libraries from re-pinning the ranks rankd has pinned: Intel MPI pins
 * unless I_MPI_PIN is off, MVAPICH2 unless MV2_ENABLE_AFFINITY is 0. MPICH itself does not
 * pin (only hydra does, and hydra is not involved).
 */
const NO_REPIN_ENV = { I_MPI_PIN: 'off', MV2_ENABLE_AFFINITY: '0' };

interface JobEntry {
  job: PmiJob;
  connections: Map<number, PmiConnection>;
  /** Ranks whose PMI ended badly, waiting for their exit code before the report. */
  failing: Map<number, { reason: string; timer: NodeJS.Timeout }>;
  /** Ranks reported to the controller already: one report each. */
  reported: Set<number>;
  /** The job's PMI_PORT, for `--pty` ranks; null until the first of them asks for one. */
  port: PmiPort | null;
}

export class PmiServer implements FenceTransport {
  private readonly jobs = new Map<string, JobEntry>();
  private readonly fetches = new Map<
    string,
    { resolve: (p: PmiPairs) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  private fetchSeq = 0;

  constructor(
    private readonly link: ControllerLink,
    private readonly log: Logger,
  ) {
    link.handle('pmi.fenced', (m) => this.onFenced(m));
    link.handle('pmi.chunk', (m) => this.onChunk(m));
    link.on('ready', () => {
      for (const entry of this.jobs.values()) entry.job.resendFence();
    });
  }

  /** Opens a job's key-value space here; its local ranks are the ones every barrier waits for. */
  openJob(jobId: string, spec: PmiJobSpec, localRanks: readonly number[]): void {
    if (this.jobs.has(jobId)) return; // a job.start repeated after a reconnect
    this.jobs.set(jobId, {
      job: new PmiJob(jobId, spec, new Set(localRanks), this),
      connections: new Map(),
      failing: new Map(),
      reported: new Set(),
      port: null,
    });
  }

  hasJob(jobId: string): boolean {
    return this.jobs.has(jobId);
  }

  /** The environment that points a rank at its PMI server; `fd` says the rank needs the inherited socket. */
  async rankEnv(jobId: string, rank: number, pty: boolean): Promise<{ env: Record<string, string>; fd: boolean }> {
    const entry = this.require(jobId);
    const { job } = entry;
    const env: Record<string, string> = { ...NO_REPIN_ENV, PMI_RANK: String(rank), PMI_SIZE: String(job.spec.size) };
    if (!pty) return { env: { ...env, PMI_FD: String(PMI_FD) }, fd: true };
    entry.port ??= new PmiPort(
      jobId,
      job.localRanks,
      (r) => (this.jobs.get(jobId) === entry ? { job, rank: r } : null),
      this.hooks.ended,
      this.log,
    );
    const { port, id } = await entry.port.issue(rank);
    return { env: { ...env, PMI_PORT: `127.0.0.1:${port}`, PMI_ID: String(id) }, fd: false };
  }

  /** Serves a rank on the agent's end of its inherited socket. */
  attach(jobId: string, rank: number, socket: net.Socket): void {
    const entry = this.jobs.get(jobId);
    if (!entry) return void socket.destroy();
    entry.connections.set(rank, new PmiConnection(socket, { job: entry.job, rank }, this.hooks));
  }

  /**
   * A rank of a PMI job has exited. If its PMI was initialized and never finalized (or it
   * broke the protocol), the failure goes to the controller now, ahead of the rank's exit,
   * with the rank's own code when that is not a success.
   */
  rankExited(exit: RankExit): void {
    const entry = this.jobs.get(exit.jobId);
    entry?.port?.rankExited(exit.rank);
    const failing = entry?.failing.get(exit.rank);
    if (!entry || !failing) return;
    clearTimeout(failing.timer);
    entry.failing.delete(exit.rank);
    const status = exit.outcome === 'exited' ? exit.code : null;
    this.report(entry, exit.rank, status && status > 0 ? status : 1, failing.reason);
  }

  /** The job is over here (aborted or released): blocked ranks get an error, sockets close, ids are void. */
  closeJob(jobId: string, reason: string): void {
    const entry = this.jobs.get(jobId);
    if (!entry) return;
    entry.job.fail(reason);
    for (const c of entry.connections.values()) c.close();
    for (const f of entry.failing.values()) clearTimeout(f.timer);
    entry.port?.close();
    this.jobs.delete(jobId);
  }

  close(): void {
    for (const jobId of [...this.jobs.keys()]) this.closeJob(jobId, 'the agent is stopping');
  }

  // FenceTransport over the controller link (a star; a tree would implement the same two calls)

  fence(jobId: string, epoch: number, pairs: PmiPairs): boolean {
    const frames: PmiPairs[] = [[]];
    let bytes = 0;
    for (const pair of pairs) {
      // as it travels: JSON escapes can make a value up to six times its length
      const size = Buffer.byteLength(JSON.stringify(pair)) + 1;
      if (bytes + size > FENCE_FRAME_BYTES && frames.at(-1)!.length > 0) {
        frames.push([]);
        bytes = 0;
      }
      frames.at(-1)!.push(pair);
      bytes += size;
    }
    return frames.every((frame, i) =>
      this.link.send({
        type: 'pmi.fence',
        jobId,
        epoch,
        part: i,
        pairs: frame,
        ...(i < frames.length - 1 ? { more: true } : {}),
      }),
    );
  }

  fetch(jobId: string, epoch: number, chunk: number): Promise<PmiPairs> {
    const id = `pmi-${++this.fetchSeq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fetches.delete(id);
        reject(new Error(`chunk ${chunk} of fence ${epoch} did not come within ${FETCH_TIMEOUT_MS / 1000} s`));
      }, FETCH_TIMEOUT_MS);
      this.fetches.set(id, { resolve, reject, timer });
      if (!this.link.send({ type: 'pmi.fetch', id, jobId, epoch, chunk })) {
        clearTimeout(timer);
        this.fetches.delete(id);
        reject(new Error('the controller is not connected'));
      }
    });
  }

  private onFenced(m: PmiFenced): void {
    this.jobs.get(m.jobId)?.job.fenced(m.epoch, m.pairs, m.chunks);
  }

  private onChunk(m: PmiChunk): void {
    if (m.id === undefined) return;
    const pending = this.fetches.get(m.id);
    if (!pending) return;
    this.fetches.delete(m.id);
    clearTimeout(pending.timer);
    if (m.error) pending.reject(new Error(m.error));
    else pending.resolve(m.pairs);
  }

  private readonly hooks = {
    // PMI_FD connections know their rank from the start; PMI_PORT ones are claimed through their job's PmiPort
    claim: (): PmiTarget | null => null,
    ended: (connection: PmiConnection, end: PmiEnd): void => {
      const jobId = connection.jobId;
      const rank = connection.rank;
      const entry = jobId === null ? undefined : this.jobs.get(jobId);
      if (!entry || rank === null) {
        if (end.kind === 'protocol') this.log.warn({ reason: end.reason }, 'PMI connection refused');
        return;
      }
      if (end.kind === 'abort') {
        const code = end.exitCode & 255 || 1;
        return this.report(
          entry,
          rank,
          code,
          `rank ${rank} called MPI_Abort (PMI abort with exit code ${end.exitCode})`,
        );
      }
      const reason =
        end.kind === 'protocol'
          ? `rank ${rank} broke the PMI protocol: ${end.reason}`
          : end.phase === 'initialized'
            ? `rank ${rank} closed its PMI connection without PMI finalize (it exited or crashed before MPI_Finalize)`
            : null;
      if (reason === null || entry.reported.has(rank) || entry.failing.has(rank)) return;
      // its exit usually follows at once: wait for it, to report the rank's own code
      const timer = setTimeout(() => {
        entry.failing.delete(rank);
        this.report(entry, rank, null, reason);
      }, EXIT_WAIT_MS);
      entry.failing.set(rank, { reason, timer });
    },
  };

  private report(entry: JobEntry, rank: number, exitCode: number | null, reason: string): void {
    if (entry.reported.has(rank)) return;
    entry.reported.add(rank);
    this.log.warn({ jobId: entry.job.jobId, rank, exitCode }, reason);
    this.link.send({ type: 'pmi.failed', jobId: entry.job.jobId, rank, exitCode, reason });
  }

  private require(jobId: string): JobEntry {
    const entry = this.jobs.get(jobId);
    if (!entry) throw new Error(`job ${jobId} has no PMI space on this node`);
    return entry;
  }
}
