// Sends one rank's output to the controller from the spool files, by offset.
//
// The pump pulls a chunk only while the socket has room (backpressure: the files are
// the buffer, so a slow link never slows the rank). After a reconnect the controller
// says where its copy ends (job.resume) and the pump continues from there; the exit
// is sent after the last byte, every time the stream is resumed, so that the
// controller hears it at least once.
import { MAX_BINARY_PAYLOAD_BYTES, RankErrorCode } from '@rankd/protocol';
import type { ControllerLink } from '../link/controller-link.js';
import type { RankExit, RankStream } from '../ranks/rank-spec.js';
import type { RankOutput } from '../ranks/output.js';

/** Above this many queued bytes on the socket the pump waits. */
const HIGH_WATER_BYTES = 4 * 1024 * 1024;
// one binary frame's payload
const CHUNK_BYTES = MAX_BINARY_PAYLOAD_BYTES;
const STREAMS: readonly RankStream[] = ['stdout', 'stderr'];

export class OutputPump {
  private readonly offsets: Record<RankStream, number> = { stdout: 0, stderr: 0 };
  private exit: RankExit | null = null;
  private exitSent = false;
  private running = false;
  private again = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    readonly jobId: string,
    readonly rank: number,
    private readonly output: RankOutput,
    private readonly link: ControllerLink,
    /** False until rank.started is sent: the exit must never overtake the start. */
    private announced: boolean,
  ) {}

  get hasEnded(): boolean {
    return this.exit !== null;
  }

  /** rank.started is on the wire: output and the exit may follow. */
  announce(): void {
    this.announced = true;
    this.kick();
  }

  /** The controller holds bytes up to these offsets: continue from there. */
  resume(offsets: Record<RankStream, number>): void {
    this.offsets.stdout = offsets.stdout;
    this.offsets.stderr = offsets.stderr;
    this.exitSent = false;
    this.kick();
  }

  /** The rank ended: its files are complete; send what is left, then the exit. */
  ended(exit: RankExit): void {
    this.exit = exit;
    this.kick();
  }

  /** Something may have been written, or the link came back. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
  }

  private async run(): Promise<void> {
    for (;;) {
      if (!this.link.connected || !this.announced) return; // the next welcome + resume (or the start) restarts us
      if (this.link.bufferedAmount > HIGH_WATER_BYTES) {
        // ws has no drain event on the client side: look again shortly
        this.retry ??= setTimeout(() => {
          this.retry = null;
          this.kick();
        }, 5);
        return;
      }
      let sent = false;
      for (const stream of STREAMS) {
        const chunk = await this.output.read(this.jobId, this.rank, stream, this.offsets[stream], CHUNK_BYTES);
        if (chunk.data.length === 0) continue;
        if (
          !this.link.sendBinary(
            { type: 'rank.output', jobId: this.jobId, rank: this.rank, stream, offset: chunk.offset },
            chunk.data,
          )
        )
          return;
        this.offsets[stream] = chunk.nextOffset;
        sent = true;
      }
      if (sent) continue;
      if (this.exit && !this.exitSent && this.announced) this.sendExit(this.exit);
      return;
    }
  }

  private sendExit(exit: RankExit): void {
    const sizes = {
      stdout: this.output.size(this.jobId, this.rank, 'stdout'),
      stderr: this.output.size(this.jobId, this.rank, 'stderr'),
    };
    // the rank is gone, so the files cannot grow: if we are behind, loop once more first
    if (sizes.stdout > this.offsets.stdout || sizes.stderr > this.offsets.stderr) {
      this.again = true;
      return;
    }
    const unknown = exit.outcome === 'unknown';
    const sent = this.link.send({
      type: 'rank.exit',
      jobId: this.jobId,
      rank: this.rank,
      code: exit.outcome === 'exited' ? exit.code : null,
      signal: exit.outcome === 'signaled' ? exit.signal : null,
      endedAt: exit.endedAt,
      outputBytes: sizes,
      ...(unknown
        ? { error: { code: RankErrorCode.StatusUnknown, message: exit.reason ?? 'no exit status was recorded' } }
        : {}),
    });
    if (sent) this.exitSent = true;
  }
}
