// Every channel is authenticated: the agent upgrade (node certificate) and every REST route (API token).
import t from 'tap';
import WebSocket from 'ws';
import { startController } from '../helpers/daemons.js';
import { gatewayUrl, identityFor } from '../helpers/tls.js';

function upgrade(
  url: string,
  headers: Record<string, string>,
  protocols: string[] = ['rankd.v1'],
  tls: { ca: string; cert?: string; key?: string } = { ca: '' },
): Promise<{ status: number | null; body: string; opened: boolean }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(gatewayUrl(url), protocols, { headers, handshakeTimeout: 5000, ...tls });
    ws.on('open', () => {
      ws.close();
      resolve({ status: 101, body: '', opened: true });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? null, body, opened: false }));
    });
    ws.on('error', () => undefined);
  });
}

t.test('agent upgrade without a node certificate is refused with 401 before any WebSocket exists', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const ca = { ca: controller.ca };

  const none = await upgrade(controller.url, {}, ['rankd.v1'], ca);
  t.equal(none.status, 401);
  t.equal(none.opened, false);
  t.equal(JSON.parse(none.body).code, 'RANKD_NODE_CERT_REQUIRED');

  const joinTokenInstead = await upgrade(
    controller.url,
    { authorization: `Bearer ${controller.joinToken}` },
    ['rankd.v1'],
    ca,
  );
  t.equal(joinTokenInstead.status, 401, 'a join token opens no link: it only enrolls');

  const apiTokenInstead = await upgrade(
    controller.url,
    { authorization: `Bearer ${controller.apiToken}` },
    ['rankd.v1'],
    ca,
  );
  t.equal(apiTokenInstead.status, 401, 'the API token opens no link either');

  const id = await identityFor(controller, 'auth-node');
  const noSubprotocol = await upgrade(controller.url, {}, [], id);
  t.equal(noSubprotocol.status, 400);
  t.match(JSON.parse(noSubprotocol.body).message, /rankd\.v1/);

  const good = await upgrade(controller.url, {}, ['rankd.v1'], id);
  t.equal(good.opened, true);
});

t.test('REST requests without the API token get 401', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  for (const path of ['/v1/nodes', '/v1/nodes/x', '/v1/openapi.json', '/v1/no-such-route']) {
    const none = await controller.api<{ code: string }>(path, { token: null });
    t.equal(none.status, 401, `${path} without a token`);
    t.equal(none.body.code, 'RANKD_UNAUTHORIZED');
    const wrong = await controller.api(path, { token: 'wrong' });
    t.equal(wrong.status, 401, `${path} with a wrong token`);
  }
  const ok = await controller.api('/v1/nodes');
  t.equal(ok.status, 200);
  const health = await controller.api<{ status: string }>('/healthz', { token: null });
  t.equal(health.status, 200, '/healthz is open and says only that the process is up');
  t.equal(health.body.status, 'ok');
});

t.test(
  'the API token, CA and keys are generated once, stored 0600, and the controller binds loopback over TLS',
  async (t) => {
    const controller = await startController();
    t.teardown(() => controller.stop());
    const { statSync, readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    for (const f of ['api-token', 'ca.crt', 'ca.key', 'server.crt', 'server.key']) {
      const mode = statSync(join(controller.dataDir, f)).mode & 0o777;
      t.equal(mode, 0o600, `${f} mode`);
    }
    t.match(controller.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { existsSync } = await import('node:fs');
    t.notOk(existsSync(join(controller.dataDir, 'join-token')), 'no shared join token exists any more');
    const before = readFileSync(join(controller.dataDir, 'api-token'), 'utf8');
    await controller.stop();
    const again = await startController({ dataDir: controller.dataDir });
    t.teardown(() => again.stop());
    t.equal(readFileSync(join(controller.dataDir, 'api-token'), 'utf8'), before, 'a restart keeps the tokens');
    t.equal(again.caHash, controller.caHash, 'and the CA');
  },
);

t.test('the OpenAPI document is generated from the schemas', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const doc = await controller.api<{ openapi: string; paths: Record<string, unknown>; components: unknown }>(
    '/v1/openapi.json',
  );
  t.equal(doc.status, 200);
  t.match(doc.body.openapi, /^3\./);
  t.ok(doc.body.paths['/v1/nodes'], 'lists /v1/nodes');
  t.ok(doc.body.paths['/v1/nodes/{name}/facts'], 'lists the facts route');
});
