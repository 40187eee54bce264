// The CLI verifies the controller against the pinned CA alone, in JS (so that Node 20 never
// builds its bundled root store: packages/cli/src/client/pinned-ca.ts). Each certificate
// here is served by a real HTTPS server on loopback; a refused one must never see a request.
import { webcrypto, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 needs it loaded first, as the controller's pki does
import * as x509 from '@peculiar/x509';
import t, { type Test } from 'tap';
import { request } from '@rankd/cli/client/http';
import { pinnedCertificates, verifyPeer } from '@rankd/cli/client/pinned-ca';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

interface Issued {
  certPem: string;
  keyPem: string;
  cert: x509.X509Certificate;
  keys: webcrypto.CryptoKeyPair;
}

const pemKey = async (keys: webcrypto.CryptoKeyPair) => `-----BEGIN PRIVATE KEY-----\n${Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----\n`;

async function makeCa(name: string): Promise<Issued> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    keys,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  return { cert, keys, certPem: cert.toString('pem') + '\n', keyPem: await pemKey(keys) };
}

/** A serving certificate as the controller's CA issues it, with what a case changes. */
async function issue(ca: Issued, opts: { ips?: string[]; notAfter?: Date; usage?: string } = {}): Promise<Issued> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
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
      new x509.SubjectAlternativeNameExtension((opts.ips ?? ['127.0.0.1']).map((value) => ({ type: 'ip' as const, value }))),
    ],
  });
  return { cert, keys, certPem: cert.toString('pem') + '\n', keyPem: await pemKey(keys) };
}

/** Serves `leaf` on loopback; counts the requests that reached it. */
async function serve(t: Test, leaf: Issued): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => {
    requests++;
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return { url: `https://127.0.0.1:${port}`, requests: () => requests };
}

const dir = t.testdir();
let files = 0;
function caFile(...cas: Issued[]): string {
  const file = join(dir, `ca-${files++}.crt`);
  writeFileSync(file, cas.map((c) => c.certPem).join(''));
  return file;
}

const ca = await makeCa('CN=rankd cluster CA 1, O=rankd');
const pinned = caFile(ca);

async function outcome(t: Test, leaf: Issued, caPath = pinned) {
  const server = await serve(t, leaf);
  const result = await request({ url: server.url, token: 'x', ca: caPath }, '/v1/x', { timeoutMs: 10_000 }).then(
    (body) => ({ body, error: undefined }),
    (error: Error) => ({ body: undefined, error }),
  );
  return { ...result, requests: server.requests() };
}

t.test("the controller's certificate, issued by the pinned CA for the address: the request goes through", async (t) => {
  const r = await outcome(t, await issue(ca));
  t.same(r.body, { ok: true });
  t.equal(r.requests, 1);
});

t.test('a CA file of several certificates: the one that issued the certificate is found', async (t) => {
  const r = await outcome(t, await issue(ca), caFile(await makeCa('CN=other, O=rankd'), ca));
  t.same(r.body, { ok: true });
});

t.test('a certificate from another CA of the same name (another key) is refused before any request', async (t) => {
  const impostor = await makeCa('CN=rankd cluster CA 1, O=rankd');
  const r = await outcome(t, await issue(impostor));
  t.match(r.error?.message, /not trusted \(CERT_SIGNATURE_FAILURE\)/);
  t.equal(r.requests, 0);
});

t.test("a certificate from an unrelated CA is left to Node's verification, which refuses it", async (t) => {
  const r = await outcome(t, await issue(await makeCa('CN=someone else, O=elsewhere')));
  t.match(r.error?.message, /not trusted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/);
  t.equal(r.requests, 0);
});

t.test('a certificate for another address is refused before any request', async (t) => {
  const r = await outcome(t, await issue(ca, { ips: ['10.77.9.9'] }));
  t.match(r.error?.message, /not trusted \(ERR_TLS_CERT_ALTNAME_INVALID\)/);
  t.equal(r.requests, 0);
});

t.test('an expired certificate is refused before any request', async (t) => {
  const r = await outcome(t, await issue(ca, { notAfter: new Date(Date.now() - DAY) }));
  t.match(r.error?.message, /not trusted \(CERT_HAS_EXPIRED\)/);
  t.equal(r.requests, 0);
});

t.test("a node's client certificate (clientAuth only) cannot pose as the controller", async (t) => {
  const r = await outcome(t, await issue(ca, { usage: x509.ExtendedKeyUsage.clientAuth }));
  t.match(r.error?.message, /not trusted \(INVALID_PURPOSE\)/);
  t.equal(r.requests, 0);
});

t.test("rankd's own certificates are decided without Node's verification (so its root store is never built)", async (t) => {
  const leaf = new X509Certificate((await issue(ca)).certPem);
  t.same(verifyPeer(leaf, leaf.toLegacyObject(), pinnedCertificates(ca.certPem), '127.0.0.1'), { trusted: true });
  const other = new X509Certificate((await issue(await makeCa('CN=someone else, O=elsewhere'))).certPem);
  t.equal(verifyPeer(other, other.toLegacyObject(), pinnedCertificates(ca.certPem), '127.0.0.1').trusted, 'unsure', 'not issued by the pinned CA: left to Node');
});
