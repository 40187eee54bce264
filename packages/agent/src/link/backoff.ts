// Reconnect delays: exponential, capped, with "equal jitter" (half fixed, half random)
// so that a fleet reconnecting after a controller restart spreads out instead of
// arriving in one wave, while no agent retries in a tight loop.
export interface BackoffOptions {
  baseMs: number;
  capMs: number;
  random?: () => number;
}

export class Backoff {
  private attempt = 0;
  constructor(private readonly options: BackoffOptions) {}

  next(): number {
    const { baseMs, capMs, random = Math.random } = this.options;
    const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(ceiling / 2 + random() * (ceiling / 2));
  }

  reset(): void {
    this.attempt = 0;
  }
}
