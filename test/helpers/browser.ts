// Debian's Chromium for the browser tests. The launch recipe (no browser download, flags that
// keep it off the internet, the controller's certificate trusted by its public-key pin) is
// shared with the bench's dashboard figure: bench/shared/chromium-launch.ts.
import { existsSync } from 'node:fs';
import type { Locator, Page, Request } from 'playwright-core';
import { CHROMIUM } from '../../bench/shared/chromium-launch.js';

export { CHROMIUM, launchChromium, spkiPin } from '../../bench/shared/chromium-launch.js';

/** Why browser tests cannot run here, or null. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.env['CI'] === 'true')
    throw new Error(`${CHROMIUM} is missing in CI: scripts/test-deps.sh installs Debian's chromium`);
  return `${CHROMIUM} not installed (Debian package chromium; npm test installs it as root)`;
}

/**
 * What a page did, for a failure message: its console, its errors, and every request with how
 * it ended (or that it never did). A wait that times out then says what the page showed instead.
 */
export function recordPage(page: Page): { describe(): Promise<string> } {
  const events: string[] = [];
  const pending = new Map<Request, string>();
  const at = () => `${(performance.now() / 1000).toFixed(2)} s`;
  page.on('console', (m) => events.push(`${at()} console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => events.push(`${at()} page error: ${e.message}`));
  page.on('request', (r) => pending.set(r, `${at()} ${r.method()} ${r.url()}`));
  page.on('response', (r) => events.push(`${at()} ${r.status()} ${r.request().method()} ${r.url()}`));
  page.on('requestfinished', (r) => {
    events.push(`${pending.get(r) ?? r.url()} → ${at()} finished`);
    pending.delete(r);
  });
  page.on('requestfailed', (r) => {
    events.push(`${pending.get(r) ?? r.url()} → ${at()} failed: ${r.failure()?.errorText ?? '?'}`);
    pending.delete(r);
  });
  return {
    async describe() {
      const body = await page
        .evaluate(
          () => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText,
        )
        .catch((err: Error) => `(unreadable: ${err.message})`);
      return [
        `page ${page.url()} at ${at()} shows: ${JSON.stringify(body.slice(0, 500))}`,
        ...events.slice(-40),
        ...[...pending.values()].map((r) => `${r} → never ended`),
      ].join('\n');
    },
  };
}

/** Waits for a locator; a timeout fails with what the page showed and did instead. */
export async function shown(locator: Locator, page: { describe(): Promise<string> }, timeout?: number): Promise<void> {
  try {
    await locator.waitFor(timeout === undefined ? {} : { timeout });
  } catch (err) {
    throw new Error(`${(err as Error).message.split('\n')[0]}\n${await page.describe()}`, { cause: err });
  }
}
