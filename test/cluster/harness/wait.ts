// The harness waits like every other test (helpers/daemons.ts), polling a little less often.
import { waitUntil } from '../../helpers/daemons.js';

export function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  everyMs = 50,
): Promise<T> {
  return waitUntil(what, timeoutMs, probe, everyMs);
}
