// A man in the middle at enrollment: a real HTTPS server on loopback with a CA of his own,
// answering GET /v1/enroll/ca as he likes and recording every request that reaches him.
// A real `rankd agent` process, pinned to the real controller's CA hash and holding a real
// join token (in a 0600 file), is pointed at him. It must refuse with a stable code and
// exit 77, no join token may reach him, and nothing may be saved in its state directory.
import { X509Certificate, createHash } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { fetchPinnedCa } from '#agent/link/enroll';
import { spawnDaemon, startController, type ControllerHandle } from '../helpers/daemons.js';
import { enrollIdentity } from '../helpers/tls.js';
import { issueServer, makeCa, makeIntermediate, type Issued } from '../helpers/test-pki.js';
import { scratchDir } from '../helpers/scratch.js';

interface Mitm {
  url: string;
  /** Every request that reached him: method, path and body. */
  seen: Array<{ method: string; path: string; body: string }>;
}

/** The MITM: TLS with his own certificate; /v1/enroll/ca answers `caAnswer`, anything else a 401 (he keeps what he got). */
async function mitm(t: Test, own: Issued, caAnswer: string): Promise<Mitm> {
  const seen: Mitm['seen'] = [];
  const leaf = await issueServer(own);
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body = (body + d.toString()).slice(0, 64 * 1024)));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', body });
      if (req.url === '/v1/enroll/ca') return res.end(caAnswer);
      res.statusCode = 401;
      res.end(JSON.stringify({ code: 'RANKD_JOIN_TOKEN_UNKNOWN', message: 'thanks for the token' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

const spkiHash = (pem: string) =>
  'sha256:' +
  createHash('sha256')
    .update(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');

/** Runs a real agent against `url`, pinned to `caHash`, with the join token in a 0600 file; returns its exit, output and state dir. */
async function runAgent(url: string, caHash: string, joinToken: string) {
  const dir = scratchDir('rankd-mitm-');
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, joinToken + '\n', { mode: 0o600 });
  const stateDir = join(dir, 'state');
  const agent = spawnDaemon([
    'agent',
    '--controller',
    url,
    '--ca-hash',
    caHash,
    '--join-token-file',
    tokenFile,
    '--state-dir',
    stateDir,
    '--spool-dir',
    join(dir, 'spool'),
    '--name',
    'victim',
    '--config',
    '/dev/null',
  ]);
  const timer = setTimeout(() => void agent.stop('SIGKILL'), 20_000);
  const exit = await agent.exited;
  clearTimeout(timer);
  return { exit, output: agent.output(), stateDir };
}

const saved = (stateDir: string) => (existsSync(stateDir) ? readdirSync(stateDir) : []);

let controller: ControllerHandle;
let realCa: string;
let secret: string;
t.before(async () => {
  controller = await startController();
  realCa = controller.ca;
  secret = controller.joinToken.split('.')[1]!;
});
t.teardown(() => controller?.stop());

t.test(
  'the real CA followed by his own: refused as a bundle (RANKD_CA_BUNDLE_INVALID, exit 77), no token reaches him, nothing saved',
  async (t) => {
    const own = await makeCa('CN=rankd cluster CA 0000, O=rankd');
    const m = await mitm(t, own, realCa + own.certPem);
    const r = await runAgent(m.url, controller.caHash, controller.joinToken);
    t.equal(r.exit.code, 77, r.output);
    t.match(r.output, /RANKD_CA_BUNDLE_INVALID/);
    t.match(r.output, /holds 2 certificates/);
    t.same(
      m.seen.map((s) => `${s.method} ${s.path}`),
      ['GET /v1/enroll/ca'],
      'he was asked for the CA and nothing else',
    );
    t.notOk(
      m.seen.some((s) => s.body.includes(secret)),
      'no request body holds the join token secret',
    );
    t.same(saved(r.stateDir), [], 'nothing saved in the state directory');
  },
);

t.test(
  'only his own CA: refused by the hash (RANKD_CA_HASH_MISMATCH, exit 77), no token reaches him, nothing saved',
  async (t) => {
    const own = await makeCa('CN=rankd cluster CA 0000, O=rankd');
    const m = await mitm(t, own, own.certPem);
    const r = await runAgent(m.url, controller.caHash, controller.joinToken);
    t.equal(r.exit.code, 77, r.output);
    t.match(r.output, /RANKD_CA_HASH_MISMATCH/);
    t.same(
      m.seen.map((s) => `${s.method} ${s.path}`),
      ['GET /v1/enroll/ca'],
    );
    t.notOk(m.seen.some((s) => s.body.includes(secret)));
    t.same(saved(r.stateDir), []);
  },
);

t.test(
  'the real CA relayed alone, with his own TLS certificate: the verified connection fails before the token is written',
  async (t) => {
    const own = await makeCa('CN=rankd cluster CA 0000, O=rankd');
    const m = await mitm(t, own, realCa);
    const r = await runAgent(m.url, controller.caHash, controller.joinToken);
    t.equal(r.exit.code, 77, r.output);
    t.match(r.output, /RANKD_SERVER_CERT_UNTRUSTED/);
    t.match(r.output, /The join token was not sent/);
    t.same(
      m.seen.map((s) => `${s.method} ${s.path}`),
      ['GET /v1/enroll/ca'],
      'the enrollment POST never reached him',
    );
    t.notOk(m.seen.some((s) => s.body.includes(secret)));
    t.same(saved(r.stateDir), []);
  },
);

t.test(
  'control: an agent pinned to his CA does send him the token, so the recorder above would have seen it',
  async (t) => {
    const own = await makeCa('CN=rankd cluster CA 0000, O=rankd');
    const m = await mitm(t, own, own.certPem);
    const r = await runAgent(m.url, spkiHash(own.certPem), controller.joinToken);
    t.ok(
      m.seen.some((s) => s.method === 'POST' && s.path === '/v1/enroll' && s.body.includes(secret)),
      'the token reached the server the agent was pinned to',
    );
    t.equal(r.exit.code, 77, 'his refusal ends the agent');
    t.same(saved(r.stateDir), [], 'a refused enrollment saves nothing');
  },
);

t.test('whatever /v1/enroll/ca serves must be exactly one self-signed CA certificate', async (t) => {
  const root = await makeCa('CN=org root, O=org');
  const intermediate = await makeIntermediate(root, 'CN=org intermediate, O=org');
  const leaf = await issueServer(root);
  const der = new X509Certificate(realCa).raw;
  const padded = `-----BEGIN CERTIFICATE-----\n${Buffer.concat([der, Buffer.from([0x30, 0x00])])
    .toString('base64')
    .replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`;
  const cases: Array<[string, string, string, RegExp]> = [
    ['nothing', '', spkiHash(realCa), /holds no PEM certificate/],
    ['two certificates', realCa + root.certPem, spkiHash(realCa), /holds 2 certificates/],
    ['the same certificate twice', realCa + realCa, spkiHash(realCa), /holds 2 certificates/],
    ['trailing text', realCa + 'and more\n', spkiHash(realCa), /text outside its one certificate/],
    ['bytes after the DER', padded, spkiHash(realCa), /bytes after its certificate/],
    ['leading text', 'Subject: x\n' + realCa, spkiHash(realCa), /text outside its one certificate/],
    [
      'a private key beside it',
      realCa + root.keyPem,
      spkiHash(realCa),
      /CERTIFICATE, PRIVATE KEY, not one certificate/,
    ],
    ['a server certificate, not a CA', leaf.certPem, spkiHash(leaf.certPem), /is not a CA certificate/],
    ['an intermediate CA', intermediate.certPem, spkiHash(intermediate.certPem), /is not self-signed/],
  ];
  const own = await makeCa('CN=mitm, O=mitm');
  for (const [what, served, pin, why] of cases) {
    const m = await mitm(t, own, served);
    const err = await fetchPinnedCa(m.url, pin).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    t.equal(err?.code, 'RANKD_CA_BUNDLE_INVALID', what);
    t.match(err?.message, why, what);
  }
  // and the real one, alone, is what is returned and pinned
  t.equal(await fetchPinnedCa(controller.url, controller.caHash), new X509Certificate(realCa).toString());
});

t.test(
  'a state directory whose ca.crt holds a second certificate (pinned by an older agent) is refused at start, not trusted',
  async (t) => {
    const stateDir = scratchDir('rankd-old-state-');
    await enrollIdentity(controller, 'old-agent', stateDir);
    appendFileSync(join(stateDir, 'ca.crt'), (await makeCa('CN=mitm, O=mitm')).certPem);
    const agent = spawnDaemon([
      'agent',
      '--controller',
      controller.url,
      '--state-dir',
      stateDir,
      '--spool-dir',
      join(stateDir, 'spool'),
      '--name',
      'old-agent',
      '--config',
      '/dev/null',
    ]);
    const timer = setTimeout(() => void agent.stop('SIGKILL'), 20_000);
    const exit = await agent.exited;
    clearTimeout(timer);
    t.equal(exit.code, 77, agent.output());
    t.match(agent.output(), /RANKD_CA_BUNDLE_INVALID/);
    t.match(agent.output(), /the pinned CA .*ca\.crt: holds 2 certificates/);
    const nodes = await controller.api<{ nodes: Array<{ name: string }> }>('/v1/nodes');
    t.notOk(
      nodes.body.nodes.some((n) => n.name === 'old-agent'),
      'it never connected',
    );
  },
);
