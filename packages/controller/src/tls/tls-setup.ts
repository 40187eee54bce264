// What the controller serves TLS with: its own CA and serving certificate (created at
// first start, kept in the data directory with mode 0600), or an organisation's own
// certificate and key (--tls-cert/--tls-key, with --tls-ca naming the CA that clients pin).
// Node certificates are always issued by the controller's own CA, and client certificates
// are verified against it alone.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import { ErrorCode } from '@rankd/protocol';
import { pinnableCa } from '@rankd/protocol/ca-pin';
import type { Logger } from 'pino';
import type { RefusalEvent } from '../store/audit-refusals.js';
import { issueServingCert, loadOrCreateCa, servingNames, type DerivedCaKey, type KeyPair } from './pki.js';

export interface TlsOptions {
  /** PEM files of an organisation's own serving certificate (chain) and key. */
  certFile?: string;
  keyFile?: string;
  /** The root CA that certFile chains to, as clients should trust it (exactly one self-signed CA certificate); default: the last certificate of certFile's chain. */
  caFile?: string;
  /** An instance's CA key, derived from its join secret (@rankd/protocol/join-secret). */
  derivedCa?: DerivedCaKey;
  /** The host name or address clients are told to use (`--advertise`): it goes in the SANs. */
  advertised?: string;
}

export interface TlsMaterial {
  /** Signs node certificates; verifies client certificates. */
  ca: KeyPair;
  serverCert: string;
  serverKey: string;
  /** What clients and agents trust (served at GET /v1/enroll/ca): exactly one self-signed CA certificate. */
  trustPem: string;
  /** sha256:HEX of trustPem's SubjectPublicKeyInfo: the pin of `--ca-hash`. */
  caHash: string;
}

export async function setupTls(dataDir: string, listenHost: string, options: TlsOptions = {}): Promise<TlsMaterial> {
  const ca = await loadOrCreateCa(dataDir, options.derivedCa);
  if (options.certFile || options.keyFile) {
    if (!options.certFile || !options.keyFile) throw new Error('--tls-cert and --tls-key go together');
    const serverCert = readFileSync(options.certFile, 'utf8');
    const serverKey = readFileSync(options.keyFile, 'utf8');
    let trust;
    // agents pin exactly one certificate (protocol/ca-pin.ts): a bundle here would be refused by every one of them
    if (options.caFile) trust = pinnableCa(readFileSync(options.caFile, 'utf8'), `--tls-ca ${options.caFile}`);
    else {
      const chain = serverCert.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      if (chain.length < 2)
        throw new Error(
          `${options.certFile} holds no issuer certificate: pass --tls-ca FILE (the root CA clients and agents pin)`,
        );
      trust = pinnableCa(
        chain[chain.length - 1]!,
        `the last certificate of --tls-cert ${options.certFile} (pass --tls-ca FILE to name the root CA)`,
      );
    }
    new X509Certificate(serverCert); // throws on a file that is not a certificate
    return { ca, serverCert, serverKey, trustPem: trust.pem, caHash: trust.hash };
  }
  const { certPem, keyPem } = await issueServingCert(ca, dataDir, servingNames(listenHost, options.advertised));
  const own = pinnableCa(ca.certPem, `the controller's CA ${dataDir}/ca.crt`);
  return { ca, serverCert: certPem, serverKey: keyPem, trustPem: own.pem, caHash: own.hash };
}

/** The fastify/https options: TLS always; client certificates requested, checked per route. */
export function httpsOptions(tls: TlsMaterial) {
  return {
    key: tls.serverKey,
    cert: tls.serverCert,
    // client certificates are verified against the controller's own CA only
    ca: tls.ca.certPem,
    requestCert: true,
    // REST clients present no certificate; the agent gateway and renewal require one
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2' as const,
  };
}

/**
 * Plain HTTP on the TLS port gets no API answer: a fixed 400 with RANKD_PLAINTEXT_ON_TLS_PORT
 * written on the raw socket, then close. Nothing about the cluster is in it. Each one is
 * `refused` (the audit log counts them per source and minute: anyone can send one).
 */
export function answerPlaintext(
  server: { on(event: 'tlsClientError', l: (err: NodeJS.ErrnoException, socket: TLSSocket) => void): unknown },
  log: Logger,
  refused: (event: RefusalEvent) => void,
): void {
  server.on('tlsClientError', (err, socket) => {
    if (err.code !== 'ERR_SSL_HTTP_REQUEST') return;
    // _parent is the TCP socket under the TLS one; best effort, the socket closes either way
    const raw = (socket as unknown as { _parent?: import('node:net').Socket })._parent;
    const source = socket.remoteAddress ?? raw?.remoteAddress ?? 'unknown';
    log.warn({ remote: source, code: ErrorCode.PlaintextOnTlsPort }, 'plain HTTP on the TLS port refused');
    refused({
      source,
      user: null,
      method: 'CONNECT',
      route: '(plain HTTP)',
      status: 400,
      code: ErrorCode.PlaintextOnTlsPort,
      reason: 'plain HTTP on the TLS port (use https://)',
    });
    if (!raw || raw.destroyed) return;
    const body = JSON.stringify({
      statusCode: 400,
      code: ErrorCode.PlaintextOnTlsPort,
      error: 'Bad Request',
      message: 'this port speaks HTTPS only: use https://',
    });
    try {
      raw.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    } catch {
      // already gone
    }
  });
}

/** The verified client certificate of a request's socket: node name and serial, or why there is none. */
export function peerNode(
  socket: unknown,
): { ok: true; node: string; serial: string } | { ok: false; code: string; message: string } {
  const tls = socket as TLSSocket;
  if (typeof tls.getPeerCertificate !== 'function')
    return { ok: false, code: ErrorCode.NodeCertRequired, message: 'not a TLS connection' };
  const cert = tls.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0)
    return {
      ok: false,
      code: ErrorCode.NodeCertRequired,
      message: 'a node certificate is required (enroll with a join token first)',
    };
  if (!tls.authorized) {
    const why = String(tls.authorizationError ?? 'unverified');
    if (why === 'CERT_HAS_EXPIRED')
      return {
        ok: false,
        code: ErrorCode.NodeCertExpired,
        message: 'the node certificate has expired: enroll again with a new join token',
      };
    return {
      ok: false,
      code: ErrorCode.NodeCertInvalid,
      message: `the node certificate is not valid for this controller (${why})`,
    };
  }
  const cn = cert.subject?.CN;
  const node = Array.isArray(cn) ? '' : (cn ?? '');
  if (!node) return { ok: false, code: ErrorCode.NodeCertInvalid, message: 'the node certificate names no node' };
  return { ok: true, node, serial: cert.serialNumber };
}
