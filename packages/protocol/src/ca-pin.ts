// The one CA certificate a node or client pins, and its pin: the SHA-256 of its
// SubjectPublicKeyInfo (DER), as kubeadm's --discovery-token-ca-cert-hash.
//
// Exactly one certificate, and nothing else: a PEM that holds the pinned CA followed by a
// second one would let whoever appended the second be trusted under the first one's hash.
// So zero certificates, two or more, text outside the one block, bytes after the DER, or a
// certificate that is not a self-signed CA are all refused, never "the first one" taken.
//
// Not exported from the package index: it needs node:crypto, which the dashboard lacks.
import { X509Certificate, createHash } from 'node:crypto';
import { ErrorCode, RankdError } from './errors.js';

export interface PinnableCa {
  /** The certificate alone, as PEM (re-encoded from its DER: what is saved and trusted). */
  pem: string;
  /** sha256:HEX of its SubjectPublicKeyInfo. */
  hash: string;
  cert: X509Certificate;
}

const BLOCK = /^-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)\r?\n?-----END CERTIFICATE-----$/;

/** sha256:HEX of a certificate's SubjectPublicKeyInfo (DER). */
export function spkiHash(cert: X509Certificate): string {
  return (
    'sha256:' +
    createHash('sha256')
      .update(cert.publicKey.export({ type: 'spki', format: 'der' }))
      .digest('hex')
  );
}

/**
 * The single CA certificate `pem` holds, or RANKD_CA_BUNDLE_INVALID naming what is wrong.
 * `source` names where the PEM came from, for the message ("the controller at https://…").
 */
export function pinnableCa(pem: string, source: string): PinnableCa {
  const refuse = (why: string) =>
    new RankdError(
      ErrorCode.CaBundleInvalid,
      `${source}: ${why}; a pinned CA is exactly one CA certificate and nothing else`,
    );
  const text = pem.trim();
  const markers = text.match(/-----BEGIN [^-]*-----/g) ?? [];
  if (markers.length === 0) throw refuse('holds no PEM certificate');
  const certs = markers.filter((m) => m === '-----BEGIN CERTIFICATE-----').length;
  if (certs > 1) throw refuse(`holds ${certs} certificates`);
  if (markers.length > 1 || certs === 0)
    throw refuse(`holds ${markers.map((m) => m.slice(11, -5)).join(', ')}, not one certificate`);
  const block = BLOCK.exec(text);
  if (!block) throw refuse('has text outside its one certificate, or a malformed one');
  const der = Buffer.from(block[1]!.replace(/[\r\n]/g, ''), 'base64');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch (err) {
    throw refuse(`is not a readable X.509 certificate (${(err as Error).message})`);
  }
  if (!cert.raw.equals(der)) throw refuse('has bytes after its certificate');
  const subject = cert.subject.replace(/\n/g, ', ');
  if (!cert.ca) throw refuse(`${subject} is not a CA certificate (basicConstraints CA:TRUE)`);
  // OpenSSL (so Node's TLS) takes only a self-signed root as the sole trust anchor: an
  // intermediate pinned alone would be refused at the next handshake, so say it now
  if (!cert.checkIssued(cert) || !cert.verify(cert.publicKey))
    throw refuse(`${subject} is not self-signed (an intermediate CA?): pin the root CA`);
  return { pem: cert.toString(), hash: spkiHash(cert), cert };
}
