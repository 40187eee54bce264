// Enrollment under attack, over real TLS to a real controller: join tokens that are
// unknown, expired, revoked or spent; replayed and oversize CSRs; names that are taken or
// not names; expired certificates; plain HTTP on the TLS port.
import { connect } from 'node:net';
import t from 'tap';
import { keyAndCsr } from '#agent/link/csr';
import { runCli, startController, type ControllerHandle } from '../helpers/daemons.js';
import { enrollIdentity, httpsFetch, upgradeWith } from '../helpers/tls.js';

async function mint(controller: ControllerHandle, body: Record<string, unknown> = {}): Promise<string> {
  const r = await controller.api<{ token: string }>('/v1/join-tokens', { method: 'POST', body });
  if (r.status !== 200) throw new Error(`mint: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token;
}

async function post(controller: ControllerHandle, token: string, csr: string) {
  return controller.api<{ code: string; message: string; certificate?: string }>('/v1/enroll', {
    method: 'POST',
    token: null,
    body: { token, csr },
  });
}

t.test('join tokens: unknown, expired, revoked and spent tokens get stable codes and change nothing', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const { csr } = await keyAndCsr('node-x');

  const unknown = await post(controller, 'abcdef.0123456789abcdef', csr);
  t.equal(unknown.status, 401);
  t.equal(unknown.body.code, 'RANKD_JOIN_TOKEN_UNKNOWN');
  const wrongSecret = await post(controller, controller.joinToken.split('.')[0] + '.0000000000000000', csr);
  t.equal(wrongSecret.body.code, 'RANKD_JOIN_TOKEN_UNKNOWN', 'a known id with the wrong secret is unknown');
  const malformed = await post(controller, '../../etc/passwd', csr);
  t.equal(malformed.body.code, 'RANKD_JOIN_TOKEN_UNKNOWN');

  const shortLived = await mint(controller, { ttlSeconds: 1 });
  await new Promise((r) => setTimeout(r, 1500));
  const expired = await post(controller, shortLived, csr);
  t.equal(expired.status, 401);
  t.equal(expired.body.code, 'RANKD_JOIN_TOKEN_EXPIRED');

  const revokedToken = await mint(controller);
  const revoke = await runCli(['join-token', 'revoke', revokedToken.split('.')[0]!], controller.clientEnv);
  t.equal(revoke.code, 0, revoke.stderr);
  const revoked = await post(controller, revokedToken, csr);
  t.equal(revoked.status, 401);
  t.equal(revoked.body.code, 'RANKD_JOIN_TOKEN_REVOKED');

  // single-use by default: the second node with the same token is refused
  const once = await mint(controller);
  const first = await post(controller, once, csr);
  t.equal(first.status, 200, JSON.stringify(first.body));
  const second = await post(controller, once, (await keyAndCsr('node-y')).csr);
  t.equal(second.status, 401);
  t.equal(second.body.code, 'RANKD_JOIN_TOKEN_USED');

  // a replayed CSR (same key), even with a token that has uses left
  const replay = await post(controller, controller.joinToken, csr);
  t.equal(replay.status, 409);
  t.equal(replay.body.code, 'RANKD_CSR_REPLAYED');

  const list = await runCli(['join-token', 'list', '--json'], controller.clientEnv);
  const { tokens } = JSON.parse(list.stdout) as { tokens: Array<{ id: string; state: string }> };
  t.equal(tokens.find((x) => x.id === shortLived.split('.')[0])?.state, 'expired');
  t.equal(tokens.find((x) => x.id === revokedToken.split('.')[0])?.state, 'revoked');
  t.equal(tokens.find((x) => x.id === once.split('.')[0])?.state, 'used');
  t.notOk(list.stdout.includes(once.split('.')[1]!), 'secrets are never listed');
  const nodes = await controller.api<{ nodes: unknown[] }>('/v1/nodes');
  t.same(nodes.body.nodes, [], 'no refused enrollment created a node');
});

t.test(
  'the answers are whole: mint, list, revoke, enroll, renew and remove send every field their schemas name',
  async (t) => {
    // fastify serializes these answers with their response schemas: a field a schema lacked would be dropped
    const controller = await startController();
    t.teardown(() => controller.stop());
    const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
    const pem = /^-----BEGIN CERTIFICATE-----\n/;
    const minted = await controller.api<Record<string, unknown>>('/v1/join-tokens', {
      method: 'POST',
      body: { uses: 2, description: 'shapes' },
    });
    t.equal(minted.status, 200);
    t.same(Object.keys(minted.body).sort(), ['caHash', 'expiresAt', 'id', 'maxUses', 'token']);
    t.match(minted.body, {
      token: /^[a-z0-9]{6}\.[a-z0-9]{16}$/,
      expiresAt: iso,
      maxUses: 2,
      caHash: controller.caHash,
    });
    t.equal(String(minted.body.token).split('.')[0], minted.body.id, "the id is the token's public part");

    const { key, csr } = await keyAndCsr('shape-node');
    const enrolled = await post(controller, String(minted.body.token), csr);
    t.equal(enrolled.status, 200);
    const issued = enrolled.body as unknown as Record<string, string>;
    const certificateKeys = ['ca', 'certificate', 'clusterCa', 'node', 'notAfter', 'serial'];
    t.same(Object.keys(issued).sort(), certificateKeys);
    t.match(issued, {
      node: 'shape-node',
      certificate: pem,
      serial: /^[0-9A-F]+$/,
      notAfter: iso,
      ca: controller.ca,
      clusterCa: pem,
    });

    const renewed = await httpsFetch(`${controller.url}/v1/enroll/renew`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ csr: (await keyAndCsr('shape-node')).csr }),
      ca: controller.ca,
      cert: issued.certificate!,
      key,
    });
    t.equal(renewed.status, 200);
    const renewal = JSON.parse(await renewed.text()) as Record<string, unknown>;
    t.same(Object.keys(renewal).sort(), certificateKeys, 'a renewal answers as an enrollment does');
    t.not(renewal.serial, issued.serial, 'with a new certificate');

    const listed = await controller.api<{ tokens: Array<Record<string, unknown>> }>('/v1/join-tokens');
    const view = listed.body.tokens.find((x) => x.id === minted.body.id);
    t.same(Object.keys(view ?? {}).sort(), [
      'createdAt',
      'description',
      'expiresAt',
      'id',
      'maxUses',
      'revoked',
      'state',
      'uses',
    ]);
    t.match(view, {
      description: 'shapes',
      createdAt: iso,
      expiresAt: minted.body.expiresAt,
      maxUses: 2,
      uses: 1,
      revoked: false,
      state: 'valid',
    });
    const revoked = await controller.api<Record<string, unknown>>(`/v1/join-tokens/${String(minted.body.id)}`, {
      method: 'DELETE',
    });
    t.equal(revoked.status, 200);
    t.same(
      revoked.body,
      { ...view, revoked: true, state: 'revoked' },
      'revoking answers with the token as a list shows it',
    );
    const unknown = await controller.api<{ code: string }>('/v1/join-tokens/zzzzzz', { method: 'DELETE' });
    t.same([unknown.status, unknown.body.code], [401, 'RANKD_JOIN_TOKEN_UNKNOWN']);

    const removed = await controller.api<Record<string, unknown>>('/v1/nodes/shape-node', { method: 'DELETE' });
    t.equal(removed.status, 200);
    t.same(Object.keys(removed.body).sort(), ['droppedLinks', 'node', 'revokedSerials']);
    t.match(removed.body, { node: 'shape-node', droppedLinks: 0 });
    t.same(
      removed.body.revokedSerials,
      [renewal.serial],
      'the live certificate: the renewal already revoked the one it renewed',
    );
    const never = await controller.api<{ code: string }>('/v1/nodes/nobody', { method: 'DELETE' });
    t.same([never.status, never.body.code], [404, 'RANKD_NODE_NOT_FOUND']);
  },
);

t.test('CSRs: oversize, garbage, and names that are not names', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const huge = await post(controller, controller.joinToken, 'A'.repeat(200_000));
  t.equal(huge.status, 413);
  t.equal(huge.body.code, 'RANKD_CSR_TOO_LARGE');
  const over = await post(controller, controller.joinToken, 'A'.repeat(8200));
  t.equal(over.status, 413);
  t.equal(over.body.code, 'RANKD_CSR_TOO_LARGE');
  const garbage = await post(
    controller,
    controller.joinToken,
    '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n',
  );
  t.equal(garbage.status, 400);
  t.equal(garbage.body.code, 'RANKD_CSR_INVALID');
  for (const name of ['a/b', '..', 'x..y', 'bad name', '-lead']) {
    const r = await post(controller, controller.joinToken, (await keyAndCsr(name)).csr);
    t.equal(r.body.code, 'RANKD_INVALID_NODE_NAME', `"${name}" refused`);
  }
});

t.test('a name in use needs an admin: refused until `rankd node remove`, then it may enroll again', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const first = await enrollIdentity(controller, 'twin');
  const err = await enrollIdentity(controller, 'twin').then(
    () => null,
    (e: { code?: string }) => e,
  );
  t.equal(err?.code, 'RANKD_NODE_NAME_IN_USE', 'the same name under another key is refused');
  t.equal((await upgradeWith(controller.url, first)).status, 101, 'the first owner still connects');
  const removed = await runCli(['node', 'remove', 'twin'], controller.clientEnv);
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stderr, /1 certificate revoked/);
  const refused = await upgradeWith(controller.url, first);
  t.same(
    refused,
    { status: 401, code: 'RANKD_NODE_CERT_REVOKED' },
    'the removed certificate is refused at the handshake',
  );
  const again = await enrollIdentity(controller, 'twin');
  t.equal((await upgradeWith(controller.url, again)).status, 101, 'the admin freed the name: a new key enrolls');
});

t.test('an expired node certificate is refused at the handshake', async (t) => {
  const controller = await startController({ extra: ['--node-cert-ttl', '2s'] });
  t.teardown(() => controller.stop());
  const id = await enrollIdentity(controller, 'shortlived');
  t.equal((await upgradeWith(controller.url, id)).status, 101);
  await new Promise((r) => setTimeout(r, 2500));
  t.same(await upgradeWith(controller.url, id), { status: 401, code: 'RANKD_NODE_CERT_EXPIRED' });
});

t.test('plain HTTP on the TLS port gets no API answer, only a fixed error', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const port = Number(new URL(controller.url).port);
  const answer = await new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () =>
      s.write(`GET /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${controller.apiToken}\r\n\r\n`),
    );
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString()));
    s.on('close', () => resolve(text));
    s.on('error', reject);
    setTimeout(() => s.destroy(), 5000).unref();
  });
  t.match(answer, /^HTTP\/1\.1 400 /);
  t.match(answer, /RANKD_PLAINTEXT_ON_TLS_PORT/);
  t.notMatch(answer, /nodes"/, 'no API data');
  const cli = await runCli(['nodes'], { ...controller.clientEnv, RANKD_URL: controller.url.replace('https', 'http') });
  t.not(cli.code, 0, 'a client that speaks HTTP gets nothing');
});
