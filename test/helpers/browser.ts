// Debian's Chromium, headless, driven by playwright-core: no browser download, nothing
// reached but loopback (recipes.md's flags keep it off the internet). The controller's
// certificate is trusted by its public key pin, as a user who imported the rankd CA would
// trust it, not by ignoring certificate errors altogether.
import { existsSync } from 'node:fs';
import { X509Certificate, createHash } from 'node:crypto';
import { connect } from 'node:tls';
import type { Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why browser tests cannot run here, or null. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.env['CI'] === 'true') throw new Error(`${CHROMIUM} is missing in CI: scripts/test-deps.sh installs Debian's chromium`);
  return `${CHROMIUM} not installed (Debian package chromium; npm test installs it as root)`;
}

/** base64 SHA-256 of the server certificate's SubjectPublicKeyInfo, as --ignore-certificate-errors-spki-list takes it. */
export function spkiPin(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca, servername: hostname === '127.0.0.1' ? undefined : hostname }, () => {
      const cert = new X509Certificate(socket.getPeerCertificate().raw);
      socket.end();
      resolve(createHash('sha256').update(cert.publicKey.export({ type: 'spki', format: 'der' })).digest('base64'));
    });
    socket.once('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('TLS handshake timed out')));
  });
}

export async function launchChromium(pin: string): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
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
}
