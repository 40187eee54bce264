// A clock whose timers fire only when the test moves time on (the lifecycle's and the job
// manager's Clock seam), so that delays and timeouts are driven, not waited for.
import type { Clock } from '#controller/jobs/clock';

export class FakeClock implements Clock {
  private timers: Array<{ due: number; fn: () => void; cancelled: boolean }> = [];

  constructor(private at: number) {}

  now(): number {
    return this.at;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { due: this.at + ms, fn, cancelled: false };
    this.timers.push(timer);
    return () => (timer.cancelled = true);
  }

  /** Timers not yet fired nor cancelled. */
  get pending(): number {
    return this.timers.filter((x) => !x.cancelled).length;
  }

  /** The wall clock steps back by `ms` (as NTP may): timers, on a monotonic clock, keep the time they had left. */
  stepBack(ms: number): void {
    this.at -= ms;
    for (const x of this.timers) x.due -= ms;
  }

  /** Moves time on by `ms`, firing each timer that falls due on the way, at its time. */
  advance(ms: number): void {
    const until = this.at + ms;
    for (;;) {
      const next = this.timers.filter((x) => !x.cancelled && x.due <= until).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.at = next.due;
      next.cancelled = true;
      next.fn();
    }
    this.at = until;
  }
}
