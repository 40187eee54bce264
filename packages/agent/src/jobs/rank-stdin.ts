// The job's stdin on this node: for each rank that reads it, the agent's end of the socket
// the rank holds as fd 0 (ranks/supervisor.ts). The controller sends the bytes in order
// (rank.stdin) and their end (rank.stdin.end); each chunk is acknowledged only once it is in
// the kernel's socket buffer, and the controller keeps at most a window unacknowledged, so a
// rank that reads slowly holds its producer back instead of filling this process's memory.
//
// The bytes are written, never looked at. The rank's stdin ends (EOF) when the controller
// says so, when the link to the controller drops (what was in flight cannot be resumed), and
// when this agent exits: a rank that survives an agent restart has read its last byte.
import type { Socket } from 'node:net';
import type { RankStdin, RankStdinEnd } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from '../link/controller-link.js';

interface Channel {
  jobId: string;
  rank: number;
  socket: Socket;
  /** The controller has been told that this stdin takes nothing more. */
  closed: boolean;
  ended: boolean;
}

export class RankStdinChannels {
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly link: ControllerLink,
    private readonly log: Logger,
  ) {
    link.handle('rank.stdin', (m) => this.write(m));
    link.handle('rank.stdin.end', (m) => this.end(m));
    link.on('down', () => this.endAll('the link to the controller dropped'));
  }

  /** The rank started with `socket` as its stdin. */
  attach(jobId: string, rank: number, socket: Socket): void {
    const ch: Channel = { jobId, rank, socket, closed: false, ended: false };
    this.channels.set(key(jobId, rank), ch);
    // the rank could write into its fd 0 (it is a socket): read and dropped, so that it never blocks on it
    socket.resume();
    socket.on('error', (err: NodeJS.ErrnoException) =>
      this.closed(ch, `rank ${rank}'s stdin is closed (${err.code ?? err.message})`),
    );
    socket.on('close', () => this.closed(ch, `rank ${rank} closed its stdin or ended`));
    // a rank that closed it while its start was being checked: the socket may have seen its end already
    if (socket.destroyed) this.closed(ch, `rank ${rank} closed its stdin or ended`);
  }

  /** The job's spool is released: nothing of it reads any more. */
  forgetJob(jobId: string): void {
    for (const ch of this.channels.values()) {
      if (ch.jobId !== jobId) continue;
      ch.closed = true;
      ch.socket.destroy();
      this.channels.delete(key(ch.jobId, ch.rank));
    }
  }

  close(): void {
    this.endAll('the agent is stopping');
  }

  private write(m: RankStdin): void {
    const ch = this.channels.get(key(m.jobId, m.rank));
    if (!ch || ch.closed || ch.ended) {
      if (!ch)
        this.link.send({
          type: 'rank.stdin.closed',
          jobId: m.jobId,
          rank: m.rank,
          reason: `rank ${m.rank} of job ${m.jobId} reads no stdin on this node`,
        });
      return;
    }
    const bytes = Buffer.from(m.data, 'base64');
    if (bytes.length === 0) return;
    ch.socket.write(bytes, (err) => {
      if (!err && !ch.closed)
        this.link.send({ type: 'rank.stdin.ack', jobId: m.jobId, rank: m.rank, bytes: bytes.length });
    });
  }

  private end(m: RankStdinEnd): void {
    const ch = this.channels.get(key(m.jobId, m.rank));
    if (!ch || ch.ended) return;
    ch.ended = true;
    // after what is queued: the rank reads every byte, then EOF
    ch.socket.end();
  }

  private endAll(why: string): void {
    for (const ch of this.channels.values()) {
      if (ch.ended || ch.closed) continue;
      this.log.info({ jobId: ch.jobId, rank: ch.rank }, `ending the rank's stdin: ${why}`);
      ch.ended = true;
      ch.socket.end();
    }
  }

  private closed(ch: Channel, reason: string): void {
    if (this.channels.get(key(ch.jobId, ch.rank)) === ch) this.channels.delete(key(ch.jobId, ch.rank));
    if (ch.closed) return;
    ch.closed = true;
    ch.socket.destroy();
    // after an end the controller expects nothing more; before it, it must stop sending
    if (!ch.ended) this.link.send({ type: 'rank.stdin.closed', jobId: ch.jobId, rank: ch.rank, reason });
  }
}

function key(jobId: string, rank: number): string {
  return `${jobId}/${rank}`;
}
