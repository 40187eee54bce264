// Real certificates for tests that play a man in the middle or an organisation's own PKI:
// root and intermediate CAs and TLS server certificates, made with @peculiar/x509 (as the
// controller's pki.ts makes its own), ECDSA P-256.
import { webcrypto } from 'node:crypto';
import 'reflect-metadata'; // @peculiar/x509 needs it loaded first, as the controller's pki does
import * as x509 from '@peculiar/x509';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;
let serials = 1;

export interface Issued {
  certPem: string;
  keyPem: string;
  cert: x509.X509Certificate;
  keys: webcrypto.CryptoKeyPair;
}

const pemKey = async (keys: webcrypto.CryptoKeyPair) =>
  `-----BEGIN PRIVATE KEY-----\n${Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
    .toString('base64')
    .replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----\n`;

const newKeys = async () => await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
const serial = () => (serials++).toString(16).padStart(2, '0');

async function finish(cert: x509.X509Certificate, keys: webcrypto.CryptoKeyPair): Promise<Issued> {
  return { cert, keys, certPem: cert.toString('pem') + '\n', keyPem: await pemKey(keys) };
}

/** A self-signed root CA. */
export async function makeCa(name: string): Promise<Issued> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  return finish(cert, keys);
}

/** An intermediate CA that `parent` signed. */
export async function makeIntermediate(parent: Issued, name: string): Promise<Issued> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: name,
    issuer: parent.cert.subject,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 300 * DAY),
    signingKey: parent.keys.privateKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  return finish(cert, keys);
}

/** A TLS server certificate for `ips` (loopback by default), as a controller's; `usage` changes its purpose. */
export async function issueServer(
  ca: Issued,
  opts: { ips?: string[]; notAfter?: Date; usage?: string } = {},
): Promise<Issued> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=rankd controller, O=rankd',
    issuer: ca.cert.subject,
    notBefore: new Date(Date.now() - 2 * DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + 30 * DAY),
    signingKey: ca.keys.privateKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([opts.usage ?? x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        (opts.ips ?? ['127.0.0.1']).map((value) => ({ type: 'ip' as const, value })),
      ),
    ],
  });
  return finish(cert, keys);
}
