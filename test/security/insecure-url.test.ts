// The CLI never offers its bearer token to a connection that is not TLS: an http://
// controller URL (RANKD_URL, or "url" in the client config) is refused with
// RANKD_INSECURE_URL before any connection is made. A plain TCP listener on loopback
// records whether anyone connected, and what they sent.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { scratchDir } from '../helpers/scratch.js';

const TOKEN = 'rankd_' + 'S'.repeat(43);
const connections: string[] = [];
const sockets = new Set<Socket>();
const listener = createServer((socket) => {
  sockets.add(socket);
  let got = '';
  connections.push(got);
  const at = connections.length - 1;
  socket.on('data', (d: Buffer) => (connections[at] = got = (got + d.toString('latin1')).slice(0, 8192)));
  socket.on('close', () => sockets.delete(socket));
  // answers nothing: a client waits until it gives up
  setTimeout(() => socket.destroy(), 2000).unref();
});
await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
const port = (listener.address() as { port: number }).port;
t.teardown(() => {
  for (const s of sockets) s.destroy();
  listener.close();
});

const home = scratchDir('rankd-home-');
const plain = `http://127.0.0.1:${port}`;

for (const argv of [['nodes'], ['run', '--', 'true'], ['logs', 'j1'], ['shell', 'node-a'], ['join-command']]) {
  t.test(`rankd ${argv.join(' ')} with RANKD_URL=http://…: refused, nothing connects`, async (t) => {
    const before = connections.length;
    const r = await runCli(argv, { RANKD_URL: plain, RANKD_TOKEN: TOKEN, RANKD_HOME: home });
    t.equal(r.code, 64, r.stderr);
    t.match(
      r.stderr,
      /RANKD_URL is http:\/\/127\.0\.0\.1:\d+: the controller speaks https:\/\/ only.*\(RANKD_INSECURE_URL\)/,
    );
    t.equal(connections.length, before, 'no connection was made');
  });
}

t.test('"url": "http://…" in the client config file: refused, nothing connects', async (t) => {
  const fileHome = scratchDir('rankd-home-');
  mkdirSync(fileHome, { recursive: true });
  writeFileSync(join(fileHome, 'config.json'), JSON.stringify({ url: plain, token: TOKEN }), { mode: 0o600 });
  const before = connections.length;
  const r = await runCli(['nodes'], { RANKD_HOME: fileHome, RANKD_URL: '', RANKD_TOKEN: '' });
  t.equal(r.code, 64, r.stderr);
  t.match(r.stderr, /"url" in .*config\.json is http:\/\/.*RANKD_INSECURE_URL/);
  t.equal(connections.length, before);
});

t.test('rankd join-command --controller http://…: refused before a token is minted', async (t) => {
  const before = connections.length;
  const r = await runCli(['join-command', '--controller', plain], {
    RANKD_URL: `https://127.0.0.1:${port}`,
    RANKD_TOKEN: TOKEN,
    RANKD_HOME: home,
  });
  t.equal(r.code, 64, r.stderr);
  t.match(r.stderr, /--controller is http:\/\/.*RANKD_INSECURE_URL/);
  t.equal(connections.length, before, 'the controller was not even asked');
});

t.test(
  'control: an https:// URL to the same listener does connect (so the counts above can fail), and sends no token in clear',
  async (t) => {
    const before = connections.length;
    const r = await runCli(
      ['nodes'],
      { RANKD_URL: `https://127.0.0.1:${port}`, RANKD_TOKEN: TOKEN, RANKD_HOME: home },
      20_000,
    );
    t.not(r.code, 0);
    await waitUntil('the connection', 5000, () => connections.length > before);
    t.notOk(
      connections.slice(before).some((c) => c.includes(TOKEN)),
      'a TLS ClientHello, not the token',
    );
  },
);
