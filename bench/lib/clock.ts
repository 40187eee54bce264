// Monotonic milliseconds. hrtime, because Date.now() can step with NTP mid-run and has
// only millisecond resolution, too coarse for sub-5 ms figures.
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Wall time of one synchronous or asynchronous call. */
export async function timeCall(fn: () => unknown): Promise<number> {
  const start = nowMs();
  await fn();
  return nowMs() - start;
}
