// The lifecycle's time: when a transition happened and when a job's --timeout fires. One
// seam, so that tests drive timeouts with a fake clock instead of waiting for them.

export interface Clock {
  now(): number;
  /** Calls `fn` once after `ms`; the answer cancels it. The timer keeps no process alive. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
