// The CLI's kept-alive connections to the controller close when idle, 1 s before the
// controller's announced `Keep-Alive: timeout`, so a later request opens a new connection
// instead of racing the controller's close (a CI run lost a request that way: "socket hang
// up"). A real HTTPS server on loopback, with the CLI's own client and pinned CA.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import 'reflect-metadata'; // @peculiar/x509 needs it loaded first, as the controller's pki does
import t from 'tap';
import { exchange } from '#cli/client/http';
import { issueServer, makeCa } from '../helpers/test-pki.js';

t.test('an idle connection is not reused past the server keep-alive minus 1 s', async (t) => {
  const ca = await makeCa('CN=rankd keep-alive test CA, O=rankd');
  const leaf = await issueServer(ca);
  const caPath = join(t.testdir(), 'ca.crt');
  writeFileSync(caPath, ca.certPem);
  let connections = 0;
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  server.on('secureConnection', () => connections++);
  // announced as "Keep-Alive: timeout=2": the client's idle sockets then close after 1 s
  server.keepAliveTimeout = 2000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  const config = { url: `https://127.0.0.1:${port}`, token: 'x', ca: caPath };

  await exchange(config, '/v1/a');
  await exchange(config, '/v1/b');
  t.equal(connections, 1, 'two requests in a row share one connection');
  // past the client's 1 s, before the server's 2 s: the server still holds the old one open
  await sleep(1500);
  await exchange(config, '/v1/c');
  t.equal(connections, 2, 'after 1.5 s idle the next request opens a new connection');
});
