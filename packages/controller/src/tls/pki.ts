// The controller's PKI: its own CA (ECDSA P-256), its serving certificate, and the node
// certificates it issues from CSRs. Built on @peculiar/x509 (WebCrypto-based, no
// hand-written ASN.1); node:crypto's X509Certificate reads and verifies.
//
// The CA decides every field of a node certificate and ignores the rest of the CSR:
// CN = the node name, clientAuth only, CA:false, no SANs. The serving certificate carries
// serverAuth and IP/DNS SANs that a node certificate never has, so a node cannot pose
// as the controller.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { X509Certificate, createHash, createPublicKey, randomBytes, webcrypto } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { InstanceErrorCode, RankdError } from '@rankd/protocol';
import { spkiHash } from '@rankd/protocol/ca-pin';

type CryptoKey = webcrypto.CryptoKey;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

export interface KeyPair {
  cert: x509.X509Certificate;
  certPem: string;
  keyPem: string;
  key: CryptoKey;
}

/** Serials compared the way Node reports them: upper-case hex, no leading zeros. */
export function normalSerial(serial: string): string {
  return serial.toUpperCase().replace(/^0+/, '');
}

function serial(): string {
  const b = randomBytes(16);
  b[0] = 0x10 | (b[0]! & 0x6f); // positive, and no leading zero byte
  return b.toString('hex');
}

function pemOfKey(pkcs8: ArrayBuffer): string {
  const b64 = Buffer.from(pkcs8).toString('base64');
  return `-----BEGIN PRIVATE KEY-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
}

async function importKeyPair(pem: string): Promise<webcrypto.CryptoKeyPair> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const spki = createPublicKey(pem).export({ type: 'spki', format: 'der' });
  return {
    privateKey: await webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']),
    publicKey: await webcrypto.subtle.importKey('spki', spki, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']),
  };
}

function writeSecret(path: string, content: string): void {
  writeFileSync(path + '.tmp', content, { mode: 0o600 });
  chmodSync(path + '.tmp', 0o600);
  renameSync(path + '.tmp', path);
}

/** The derived CA of an instance: its key, and the pin every agent already knows. */
export interface DerivedCaKey {
  keyPem: string;
  caHash: string;
}

/**
 * Loads the CA from the data directory, or creates it (ca.crt, ca.key, mode 0600). With
 * `derived`, a new CA gets that key, and a kept CA must have it: agents pin the derived key.
 */
export async function loadOrCreateCa(dataDir: string, derived?: DerivedCaKey): Promise<KeyPair> {
  const certPath = join(dataDir, 'ca.crt');
  const keyPath = join(dataDir, 'ca.key');
  if (existsSync(certPath) && existsSync(keyPath)) {
    const certPem = readFileSync(certPath, 'utf8');
    const keyPem = readFileSync(keyPath, 'utf8');
    if (derived) {
      const kept = spkiHash(new X509Certificate(certPem));
      if (kept !== derived.caHash)
        throw new RankdError(
          InstanceErrorCode.JoinSecretMismatch,
          `the CA in ${dataDir} (${kept}) is not the join secret's (${derived.caHash}): ` +
            'start this instance with a fresh data directory, or with the secret it was made with',
        );
    }
    return { cert: new x509.X509Certificate(certPem), certPem, keyPem, key: await importKey(keyPem) };
  }
  const keys = derived
    ? await importKeyPair(derived.keyPem)
    : await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=rankd cluster CA ${randomBytes(4).toString('hex')}, O=rankd`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 10 * 365 * DAY),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = cert.toString('pem') + '\n';
  const keyPem = pemOfKey(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  writeSecret(keyPath, keyPem);
  writeSecret(certPath, certPem);
  return { cert, certPem, keyPem, key: keys.privateKey };
}

/** The serving certificate's subject alternative names: the listen and advertised addresses, loopback, localhost and the hostname. */
export function servingNames(listenHost: string, advertised?: string): { ips: string[]; dns: string[] } {
  const ips = new Set<string>(['127.0.0.1', '::1']);
  const dns = new Set<string>(['localhost', hostname()]);
  const short = hostname().split('.')[0];
  if (short) dns.add(short);
  if (listenHost === '0.0.0.0' || listenHost === '::') {
    for (const list of Object.values(networkInterfaces()))
      for (const a of list ?? []) ips.add(a.address.split('%')[0]!);
  } else if (isIP(listenHost)) ips.add(listenHost);
  else if (listenHost) dns.add(listenHost);
  // the name clients are told to use, which a 0.0.0.0 listener's interface list may not hold
  if (advertised) (isIP(advertised) ? ips : dns).add(advertised);
  return { ips: [...ips], dns: [...dns] };
}

/** Issues the controller's serving certificate (serverAuth, the SANs above), written as server.crt/server.key. */
export async function issueServingCert(
  ca: KeyPair,
  dataDir: string,
  names: { ips: string[]; dns: string[] },
): Promise<{ certPem: string; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=rankd controller, O=rankd',
    issuer: ca.cert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 2 * 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: ca.key,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...names.ips.map((value) => ({ type: 'ip' as const, value })),
        ...names.dns.map((value) => ({ type: 'dns' as const, value })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = cert.toString('pem') + '\n' + ca.certPem;
  const keyPem = pemOfKey(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  writeSecret(join(dataDir, 'server.key'), keyPem);
  writeSecret(join(dataDir, 'server.crt'), certPem);
  return { certPem, keyPem };
}

export interface ParsedCsr {
  name: string;
  /** sha256 hex of the CSR's SubjectPublicKeyInfo: the replay check. */
  spkiHash: string;
  csr: x509.Pkcs10CertificateRequest;
}

/** Parses and verifies a CSR (its own signature, an ECDSA P-256 key, a CN); throws a plain Error saying why not. */
export async function parseCsr(pem: string): Promise<ParsedCsr> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(pem);
  } catch (err) {
    throw new Error(`not a PKCS#10 CSR in PEM: ${(err as Error).message}`, { cause: err });
  }
  const algorithm = csr.publicKey.algorithm as { name: string; namedCurve?: string };
  if (algorithm.name !== 'ECDSA' || algorithm.namedCurve !== 'P-256')
    throw new Error(`the CSR's key must be ECDSA P-256 (got ${algorithm.name} ${algorithm.namedCurve ?? ''})`);
  if (!(await csr.verify())) throw new Error("the CSR's signature does not verify");
  const cn = csr.subjectName.getField('CN');
  if (cn.length !== 1) throw new Error('the CSR must name exactly one CN (the node name)');
  const spkiHash = createHash('sha256').update(Buffer.from(csr.publicKey.rawData)).digest('hex');
  return { name: cn[0]!, spkiHash, csr };
}

/** Issues a node certificate for a verified CSR. Only the CSR's public key is used. */
export async function issueNodeCert(
  ca: KeyPair,
  csr: ParsedCsr,
  ttlMs: number,
): Promise<{ certPem: string; serial: string; notAfter: number }> {
  const now = Date.now();
  const notAfter = now + ttlMs;
  // a little backdating absorbs clock skew; a short test lifetime keeps its proportions
  const backdate = Math.min(60_000, Math.floor(ttlMs / 10));
  const publicKey = await csr.csr.publicKey.export(ALG, ['verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${csr.name}`,
    issuer: ca.cert.subject,
    notBefore: new Date(now - backdate),
    notAfter: new Date(notAfter),
    publicKey,
    signingKey: ca.key,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', serial: normalSerial(cert.serialNumber), notAfter };
}
