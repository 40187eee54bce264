// One `--pty` job's PMI_PORT on this node: a loopback TCP listener that its ranks reach
// with `cmd=initack pmiid=N`, open only as long as a rank of the job may still come.
//
// Any local process can connect to a loopback port, so the port is kept small and short:
// - Each rank's PMI_ID is random (31 bits) and claimed once.
// - Guesses are bounded per source. On loopback the source is the Unix user owning the
//   client's socket (peer-uid.ts). After MAX_BAD_IDS connections of one user that did not
//   name a valid id, that user's further connections are closed unread: its guesses make
//   no difference any more, and the job's ranks, running as the job's own user, are not
//   affected. (A process of the job's own user can already signal or trace the job's ranks,
//   so if it guesses, blocking it loses nothing.)
// - Once every local rank has claimed its id, or its rank has exited, the port stops
//   listening: a later connection is refused by the kernel (ECONNREFUSED). PMI clients
//   never reconnect and rankd refuses `spawn`, so no rank needs it after that. It closes at
//   the job's end here too.
import net from 'node:net';
import type { Logger } from 'pino';
import { randomInt } from 'node:crypto';
import { PmiConnection, type PmiConnectionHooks, type PmiEnd, type PmiTarget } from './pmi-connection.js';
import { loopbackPeerUid } from './peer-uid.js';

/** Connections of one Unix user that failed to name a valid PMI_ID before that user is refused on this port. */
export const MAX_BAD_IDS = 3;

export class PmiPort {
  /** PMI_IDs handed out and not yet claimed, by id. */
  private readonly ids = new Map<number, number>();
  /** Ranks that are done with the port: claimed their id, or exited without. */
  private readonly done = new Set<number>();
  private readonly strikes = new Map<number, number>();
  private readonly server: net.Server;
  private readonly listening: Promise<number>;
  private closed = false;

  constructor(
    readonly jobId: string,
    /** The job's ranks on this node: the port closes once each has connected or exited. */
    private readonly localRanks: ReadonlySet<number>,
    /** The rank behind a claimed id, and what happens when a connection ends. */
    private readonly jobTarget: (rank: number) => PmiTarget | null,
    private readonly onEnded: PmiConnectionHooks['ended'],
    private readonly log: Logger,
  ) {
    this.server = net.createServer((socket) => this.accept(socket));
    this.listening = new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        const address = this.server.address();
        if (address === null || typeof address === 'string')
          reject(new Error(`the PMI_PORT of job ${jobId} has no TCP address`));
        else resolve(address.port);
      });
    });
  }

  /** A new single-use PMI_ID for a rank, and the port it is good on. */
  async issue(rank: number): Promise<{ port: number; id: number }> {
    const port = await this.listening;
    let id: number;
    do id = randomInt(1, 2 ** 31 - 1);
    while (this.ids.has(id));
    this.ids.set(id, rank);
    return { port, id };
  }

  /** A rank has exited: it will not connect any more. */
  rankExited(rank: number): void {
    for (const [id, owner] of this.ids) if (owner === rank) this.ids.delete(id);
    this.markDone(rank);
  }

  /** Stops listening (the job is over here, or no rank will come any more); open connections go on. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.listening.then(
      () => this.server.close(),
      () => undefined,
    );
  }

  private accept(socket: net.Socket): void {
    let uid: number | null;
    try {
      uid = loopbackPeerUid(socket);
    } catch (err) {
      uid = null;
      this.log.warn(
        { jobId: this.jobId, err: err instanceof Error ? err.message : String(err) },
        'cannot read /proc/net/tcp to identify a PMI_PORT client',
      );
    }
    if (uid === null) {
      // every live client is listed: one that is not has gone, or is not what it seems
      this.log.warn(
        { jobId: this.jobId, port: socket.localPort },
        'PMI_PORT connection from a socket the kernel does not list; closed',
      );
      return void socket.destroy();
    }
    if ((this.strikes.get(uid) ?? 0) >= MAX_BAD_IDS) {
      this.log.warn(
        { jobId: this.jobId, uid },
        `PMI_PORT connection refused: uid ${uid} already presented ${MAX_BAD_IDS} bad PMI_IDs on this port`,
      );
      return void socket.destroy();
    }
    const hooks: PmiConnectionHooks = {
      // connections opened before the limit was reached are held to it too: a guess is
      // weighed only while its user is under the limit
      claim: (pmiid) => ((this.strikes.get(uid) ?? 0) >= MAX_BAD_IDS ? null : this.claim(pmiid)),
      ended: (connection: PmiConnection, end: PmiEnd) => {
        if (connection.rank === null) this.strike(uid, end);
        this.onEnded(connection, end);
      },
    };
    new PmiConnection(socket, null, hooks);
  }

  private claim(pmiid: number): PmiTarget | null {
    const rank = this.ids.get(pmiid);
    if (rank === undefined) return null;
    this.ids.delete(pmiid);
    const target = this.jobTarget(rank);
    this.markDone(rank);
    return target;
  }

  private strike(uid: number, end: PmiEnd): void {
    const n = (this.strikes.get(uid) ?? 0) + 1;
    this.strikes.set(uid, n);
    const why = end.kind === 'protocol' ? end.reason : 'it closed before naming a PMI_ID';
    this.log.warn(
      { jobId: this.jobId, uid, strikes: n },
      `PMI_PORT connection without a valid PMI_ID (${why})${n >= MAX_BAD_IDS ? `; uid ${uid} is refused on this port from now on` : ''}`,
    );
  }

  private markDone(rank: number): void {
    this.done.add(rank);
    if ([...this.localRanks].every((r) => this.done.has(r))) this.close();
  }
}
