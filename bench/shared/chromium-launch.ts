// Debian's Chromium, headless, driven by playwright-core: the one launch recipe of the
// dashboard's browser test (test/helpers/browser.ts) and the bench's dashboard figure
// (bench/lib/chromium.ts). No browser download; the flags keep Chromium off the internet
// (shared recipes.md); the controller's certificate is trusted by its public-key pin, as a
// user who imported the rankd CA would trust it, not by ignoring certificate errors.
//
// It lives in bench/shared because the bench is its own TypeScript project built to
// bench/dist (rootDir bench/), so it can import nothing outside bench/, while the tests are
// transpiled from source and may import any file. Modules here use Node built-ins and
// playwright-core only, never bench/lib or test/helpers, so both sides can import them.
import { X509Certificate, createHash } from 'node:crypto';
import { connect } from 'node:tls';
import type { Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** base64 SHA-256 of the server certificate's SubjectPublicKeyInfo, as --ignore-certificate-errors-spki-list takes it. */
export function spkiPin(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // No servername for an IP address: SNI carries host names only (Node warns otherwise).
    const socket = connect(
      { host: hostname, port: Number(port), ca, servername: hostname === '127.0.0.1' ? undefined : hostname },
      () => {
        const cert = new X509Certificate(socket.getPeerCertificate().raw);
        socket.end();
        resolve(
          createHash('sha256')
            .update(cert.publicKey.export({ type: 'spki', format: 'der' }))
            .digest('base64'),
        );
      },
    );
    socket.once('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('TLS handshake timed out')));
  });
}

/** A headless Chromium that trusts the certificate whose public key is `pin`, and nothing else beyond the usual CAs. */
export async function launchChromium(pin: string): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    timeout: 60_000,
    args: [
      // Chromium refuses to run as root with its sandbox on.
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
