// The CLI verifies the controller against the pinned CA alone, in JS (so that Node 20 never
// builds its bundled root store: packages/cli/src/client/pinned-ca.ts). Each certificate
// here is served by a real HTTPS server on loopback; a refused one must never see a request.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 needs it loaded first, as the controller's pki does
import * as x509 from '@peculiar/x509';
import t, { type Test } from 'tap';
import { exchange } from '#cli/client/http';
import { pinnedCertificates, verifyPeer } from '#cli/client/pinned-ca';
import { issueServer as issue, makeCa, makeIntermediate, type Issued } from '../helpers/test-pki.js';

const DAY = 86_400_000;

/** Serves `leaf` (followed by `chain`) on loopback; counts the requests that reached it. */
async function serve(t: Test, leaf: Issued, chain: Issued[] = []): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer(
    { cert: leaf.certPem + chain.map((c) => c.certPem).join(''), key: leaf.keyPem },
    (_req, res) => {
      requests++;
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    },
  );
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

async function outcome(t: Test, leaf: Issued, caPath = pinned, chain: Issued[] = []) {
  const server = await serve(t, leaf, chain);
  const result = await exchange({ url: server.url, token: 'x', ca: caPath }, '/v1/x', { timeoutMs: 10_000 }).then(
    ({ text }) => ({ body: JSON.parse(text) as unknown, error: undefined }),
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

t.test(
  "rankd's own certificates are decided without Node's verification (so its root store is never built)",
  async (t) => {
    const leaf = new X509Certificate((await issue(ca)).certPem);
    t.same(verifyPeer(leaf, leaf.toLegacyObject(), pinnedCertificates(ca.certPem), '127.0.0.1'), { trusted: true });
    const other = new X509Certificate((await issue(await makeCa('CN=someone else, O=elsewhere'))).certPem);
    t.equal(
      verifyPeer(other, other.toLegacyObject(), pinnedCertificates(ca.certPem), '127.0.0.1').trusted,
      'unsure',
      'not issued by the pinned CA: left to Node',
    );
  },
);

/** What OpenSSL itself says of `leaf` with `caPath` as its only trust anchors and `chain` as untrusted intermediates. */
function opensslVerify(leaf: Issued, caPath: string, chain: Issued[] = []): string {
  const leafFile = join(dir, `leaf-${files++}.crt`);
  writeFileSync(leafFile, leaf.certPem);
  const untrusted = chain.length ? ['-untrusted', caFile(...chain)] : [];
  try {
    return execFileSync('openssl', ['verify', '-CAfile', caPath, ...untrusted, leafFile], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    return `${(err as { stdout?: string }).stdout ?? ''}${(err as { stderr?: string }).stderr ?? ''}`;
  }
}

t.test('a pinned intermediate with no root: refused before any request, as OpenSSL refuses it', async (t) => {
  const root = await makeCa('CN=org root, O=org');
  const intermediate = await makeIntermediate(root, 'CN=org issuing CA, O=org');
  const leaf = await issue(intermediate);
  const intermediateOnly = caFile(intermediate);
  t.match(
    opensslVerify(leaf, intermediateOnly, [intermediate]),
    /unable to get issuer certificate/,
    'OpenSSL refuses it (no X509_V_FLAG_PARTIAL_CHAIN)',
  );
  const leafInfo = new X509Certificate(leaf.certPem);
  t.same(
    verifyPeer(leafInfo, leafInfo.toLegacyObject(), pinnedCertificates(intermediate.certPem), '127.0.0.1'),
    { trusted: 'unsure', why: 'the pinned issuer is not a self-signed root' },
    'not decided in JS',
  );
  for (const chain of [[], [intermediate]]) {
    const r = await outcome(t, leaf, intermediateOnly, chain);
    t.match(
      r.error?.message,
      /not trusted \(UNABLE_TO_GET_ISSUER_CERT\)/,
      `served with ${chain.length} chain certificate(s)`,
    );
    t.equal(r.requests, 0, 'no request reached the server');
  }
});

t.test('the root of the same chain pinned: accepted, as OpenSSL accepts it', async (t) => {
  const root = await makeCa('CN=org root, O=org');
  const intermediate = await makeIntermediate(root, 'CN=org issuing CA, O=org');
  const leaf = await issue(intermediate);
  const rootOnly = caFile(root);
  t.match(opensslVerify(leaf, rootOnly, [intermediate]), /: OK/);
  const r = await outcome(t, leaf, rootOnly, [intermediate]);
  t.same(r.body, { ok: true });
  t.equal(r.requests, 1);
  const direct = await outcome(t, await issue(root), rootOnly);
  t.same(direct.body, { ok: true }, 'and a certificate the root signed directly');
});

t.test('a pinned certificate that is the server certificate itself is left to OpenSSL', async (t) => {
  const leaf = await issue(ca);
  const info = new X509Certificate(leaf.certPem);
  t.equal(verifyPeer(info, info.toLegacyObject(), pinnedCertificates(leaf.certPem), '127.0.0.1').trusted, 'unsure');
  const r = await outcome(t, leaf, caFile(leaf));
  t.match(
    opensslVerify(leaf, caFile(leaf)),
    /unable to get local issuer certificate|unable to get issuer certificate/,
    'OpenSSL: not self-signed, so no anchor',
  );
  t.ok(r.error, 'refused');
  t.equal(r.requests, 0);
});
