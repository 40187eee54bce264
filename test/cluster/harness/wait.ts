// Polling with a deadline: every wait in the harness is bounded, and says what it waited for.
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined | false> | T | undefined | false, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message ?? String(lastError)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
