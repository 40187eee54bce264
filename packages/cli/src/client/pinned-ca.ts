// Whether the controller's certificate is one the pinned CA (RANKD_CA, the client config's
// `ca`) issued for the host the CLI connects to, checked in JS.
//
// Why: Node 20 builds its store of ~140 bundled root certificates (a visible part of a short
// `rankd run`) the first time a `ca` is added to a TLS context, though that CA then
// replaces them. The CLI's connections therefore trust nothing in OpenSSL (`ca: []`) and
// verify here, before the socket is handed to HTTP, so before any request byte is sent.
//
// Only the common case is decided here: a certificate that a pinned, self-signed root CA
// signed directly (as the controller's own CA does), with the algorithms, key sizes and
// extensions the checks below know. That is a chain OpenSSL builds the same way with the
// CA file as its only trust anchors. Anything else (an intermediate, a pinned certificate
// that is not self-signed, which OpenSSL refuses as an anchor without
// X509_V_FLAG_PARTIAL_CHAIN, the pinned certificate itself, a critical extension not read
// here, a name-constrained CA, another algorithm) is `unsure`, and the connection is made
// again with Node's own verification against the same CA: this file can only refuse
// sooner, never accept what OpenSSL would refuse.
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { criticalExtensions, hasExtension, keyUsageBits, signatureAlgorithm } from './der.js';

export type PeerVerdict =
  { trusted: true } | { trusted: false; error: NodeJS.ErrnoException } | { trusted: 'unsure'; why: string };

const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  nameConstraints: '2.5.29.30',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  anyExtendedKeyUsage: '2.5.29.37.0',
} as const;

/** Extensions whose meaning is checked here (or by Node's host check) and may be critical. */
const UNDERSTOOD = new Set<string>([OID.basicConstraints, OID.keyUsage, OID.extKeyUsage, OID.subjectAltName]);

/** ECDSA with SHA-2, RSA PKCS#1 v1.5 with SHA-2, Ed25519: what OpenSSL accepts at its default level. */
const SIGNATURES = new Set([
  '1.2.840.10045.4.3.2',
  '1.2.840.10045.4.3.3',
  '1.2.840.10045.4.3.4',
  '1.2.840.113549.1.1.11',
  '1.2.840.113549.1.1.12',
  '1.2.840.113549.1.1.13',
  '1.3.101.112',
]);
const CURVES = new Set(['prime256v1', 'secp384r1', 'secp521r1']);

/** Key usage bits a TLS server's key needs one of (digitalSignature, keyEncipherment, keyAgreement). */
const KU_TLS_SERVER = 0x80 | 0x20 | 0x08;

/** Every certificate of a PEM file (the pinned CA file may hold several). */
export function pinnedCertificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (block) => new X509Certificate(block),
  );
}

function tlsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

function strongKey(cert: X509Certificate): boolean {
  const key = cert.publicKey;
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'ec') return CURVES.has(details.namedCurve ?? '');
  if (key.asymmetricKeyType === 'rsa') return (details.modulusLength ?? 0) >= 2048;
  return key.asymmetricKeyType === 'ed25519';
}

/** Why a certificate's form is outside what is checked here, or undefined. */
function outsideChecks(cert: X509Certificate, role: 'leaf' | 'ca'): string | undefined {
  if (!SIGNATURES.has(signatureAlgorithm(cert.raw)))
    return `${role}: signature algorithm ${signatureAlgorithm(cert.raw)}`;
  if (!strongKey(cert)) return `${role}: key type or size`;
  const unknown = criticalExtensions(cert.raw).filter((oid) => !UNDERSTOOD.has(oid));
  if (unknown.length > 0) return `${role}: critical extension ${unknown.join(', ')}`;
  if (role === 'ca' && hasExtension(cert.raw, OID.nameConstraints)) return 'ca: name constraints';
  return undefined;
}

function validAt(cert: X509Certificate, now: Date): NodeJS.ErrnoException | undefined {
  if (now.getTime() < Date.parse(cert.validFrom))
    return tlsError('CERT_NOT_YET_VALID', `certificate is not yet valid (from ${cert.validFrom})`);
  if (now.getTime() > Date.parse(cert.validTo))
    return tlsError('CERT_HAS_EXPIRED', `certificate has expired (${cert.validTo})`);
  return undefined;
}

/** Extended key usage, when the certificate limits it, must allow a TLS server. */
function servesTls(cert: X509Certificate): boolean {
  const eku = cert.keyUsage; // Node names the extended key usage OIDs so
  return eku === undefined || eku.length === 0 || eku.includes(OID.serverAuth) || eku.includes(OID.anyExtendedKeyUsage);
}

/**
 * The verdict on a server's certificate for `host`, trusting only `pinned`: checked are the
 * issuer (name, key identifier, keyCertSign) and signature, that the issuer is a CA, both
 * certificates' validity at `now`, the leaf's purpose (extended and plain key usage) and the
 * host or IP address, as Node checks it (tls.checkServerIdentity).
 */
export function verifyPeer(
  leaf: X509Certificate,
  peer: PeerCertificate,
  pinned: readonly X509Certificate[],
  host: string,
  now = new Date(),
): PeerVerdict {
  try {
    return verdict(leaf, peer, pinned, host, now);
  } catch (err) {
    return { trusted: 'unsure', why: `unreadable certificate: ${(err as Error).message}` };
  }
}

/** A self-signed certificate: its own issuer by name and key identifier, and its signature verifies with its own key. */
function selfSigned(cert: X509Certificate): boolean {
  return cert.checkIssued(cert) && cert.verify(cert.publicKey);
}

function verdict(
  leaf: X509Certificate,
  peer: PeerCertificate,
  pinned: readonly X509Certificate[],
  host: string,
  now: Date,
): PeerVerdict {
  if (pinned.some((ca) => ca.raw.equals(leaf.raw))) return { trusted: 'unsure', why: 'the pinned certificate itself' };
  const issuers = pinned.filter((ca) => leaf.checkIssued(ca));
  if (issuers.length === 0) return { trusted: 'unsure', why: 'not issued directly by a pinned certificate' };
  if (issuers.length > 1) return { trusted: 'unsure', why: 'several pinned certificates could have issued it' };
  const issuer = issuers[0]!;
  // OpenSSL takes a pinned intermediate as an anchor only with X509_V_FLAG_PARTIAL_CHAIN, which Node does not set
  if (!selfSigned(issuer)) return { trusted: 'unsure', why: 'the pinned issuer is not a self-signed root' };
  const outside = outsideChecks(leaf, 'leaf') ?? outsideChecks(issuer, 'ca');
  if (outside) return { trusted: 'unsure', why: outside };
  if (!issuer.ca) return { trusted: 'unsure', why: 'the issuer is not a CA' };
  if (!servesTls(issuer)) return { trusted: 'unsure', why: "the CA's extended key usage leaves out TLS servers" };
  if (!leaf.verify(issuer.publicKey))
    return {
      trusted: false,
      error: tlsError('CERT_SIGNATURE_FAILURE', 'certificate signature failure: not signed by the pinned CA'),
    };
  const caTime = validAt(issuer, now);
  if (caTime) return { trusted: false, error: caTime };
  const leafTime = validAt(leaf, now);
  if (leafTime) return { trusted: false, error: leafTime };
  const ku = keyUsageBits(leaf.raw);
  if (!servesTls(leaf) || (ku !== undefined && (ku & KU_TLS_SERVER) === 0)) {
    return {
      trusted: false,
      error: tlsError('INVALID_PURPOSE', 'unsuitable certificate purpose: not a TLS server certificate'),
    };
  }
  const identity = checkServerIdentity(host, peer);
  if (identity) return { trusted: false, error: identity };
  return { trusted: true };
}
