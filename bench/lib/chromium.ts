// The bench's side of Chromium: whether the browser figures can run, a launch closed at
// teardown, and the browser's processes for the figures that sample them. The launch
// recipe itself (flags, certificate pin) is shared with the tests: ../shared/chromium-launch.ts.
import { existsSync, readlinkSync, readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium as launch } from '../shared/chromium-launch.js';
import { processTree } from './proc-sampling.js';
import { onTeardown } from './teardown.js';

export { CHROMIUM, spkiPin } from '../shared/chromium-launch.js';
/** Where Debian installs the real binaries; /usr/bin/chromium is a shell wrapper that execs them. */
const CHROMIUM_LIB = '/usr/lib/chromium/';

/** Why the browser figures cannot run here, or null. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM) ? null : `${CHROMIUM} is not installed (Debian package chromium)`;
}

/** A headless Chromium that trusts `pin`; closed at teardown whatever happens to the figure. */
export async function launchChromium(pin: string): Promise<{ browser: Browser; close(): Promise<void> }> {
  const browser = await launch(pin);
  const close = onTeardown('chromium', () => browser.close());
  return { browser, close };
}

/** Every Chromium process this bench started (browser, renderers, GPU and utility processes), by pid. */
export function chromiumPids(): number[] {
  return processTree(process.pid).filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/exe`).startsWith(CHROMIUM_LIB);
    } catch {
      return false;
    }
  });
}

/** The renderer processes among them (where the page's main thread runs). */
export function isRenderer(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer');
  } catch {
    return false;
  }
}
