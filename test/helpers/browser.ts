// Debian's Chromium for the browser tests. The launch recipe (no browser download, flags that
// keep it off the internet, the controller's certificate trusted by its public-key pin) is
// shared with the bench's dashboard figure: bench/shared/chromium-launch.ts.
import { existsSync } from 'node:fs';
import { CHROMIUM } from '../../bench/shared/chromium-launch.js';

export { CHROMIUM, launchChromium, spkiPin } from '../../bench/shared/chromium-launch.js';

/** Why browser tests cannot run here, or null. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.env['CI'] === 'true')
    throw new Error(`${CHROMIUM} is missing in CI: scripts/test-deps.sh installs Debian's chromium`);
  return `${CHROMIUM} not installed (Debian package chromium; npm test installs it as root)`;
}
