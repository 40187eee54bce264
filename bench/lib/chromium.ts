// Debian's Chromium, headless, driven by playwright-core, for the figures that measure the
// dashboard in a real browser. The bench cannot import test/helpers (its own project), so
// this is the bench's copy of the same recipe: no browser download, the flags that keep
// Chromium off the internet (shared recipes.md), and the controller's certificate trusted
// by its public-key pin rather than by ignoring certificate errors altogether.
import { X509Certificate, createHash } from 'node:crypto';
import { existsSync, readlinkSync, readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import type { Browser } from 'playwright-core';
import { processTree } from './proc-sampling.js';
import { onTeardown } from './teardown.js';

export const CHROMIUM = '/usr/bin/chromium';
/** Where Debian installs the real binaries; /usr/bin/chromium is a shell wrapper that execs them. */
const CHROMIUM_LIB = '/usr/lib/chromium/';

/** Why the browser figures cannot run here, or null. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM) ? null : `${CHROMIUM} is not installed (Debian package chromium)`;
}

/** base64 SHA-256 of the server certificate's SubjectPublicKeyInfo, as --ignore-certificate-errors-spki-list takes it. */
export function spkiPin(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca }, () => {
      const cert = new X509Certificate(socket.getPeerCertificate().raw);
      socket.end();
      resolve(createHash('sha256').update(cert.publicKey.export({ type: 'spki', format: 'der' })).digest('base64'));
    });
    socket.once('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('TLS handshake timed out')));
  });
}

/** A headless Chromium that trusts `pin`; closed at teardown whatever happens to the figure. */
export async function launchChromium(pin: string): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    timeout: 60_000,
    args: [
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--ignore-certificate-errors-spki-list=${pin}`,
    ],
  });
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

