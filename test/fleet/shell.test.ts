// rankd shell: a PTY on the node over an authenticated WebSocket. The remote program sees
// a terminal, follows the local window size, gets signals, returns its exit code, and
// ends when either side of the connection goes away.
import t from 'tap';
import WebSocket from 'ws';
import { processAlive } from '../helpers/cluster.js';
import { CLI, waitUntil } from '../helpers/daemons.js';
import { fleetUnderTest, type FleetUnderTest } from './helpers.js';

interface Session {
  ws: WebSocket;
  output: () => string;
  events: Array<{ type: string; [k: string]: unknown }>;
  closed: Promise<{ code: number }>;
}

function openSession(
  f: FleetUnderTest,
  query: string,
  token: string | null = f.controller.apiToken,
): Promise<Session | { status: number; body: { code: string; message: string } }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${f.controller.url.replace(/^https/, 'wss')}/v1/shell?${query}`, ['rankd.shell.v1'], {
      ca: f.controller.ca,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    let out = '';
    const events: Session['events'] = [];
    const closed = new Promise<{ code: number }>((r) => ws.on('close', (code) => r({ code })));
    ws.on('message', (data: Buffer, isBinary) => {
      if (isBinary) out += data.toString();
      else events.push(JSON.parse(data.toString()) as Session['events'][number]);
    });
    ws.on('open', () => resolve({ ws, output: () => out, events, closed }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as { code: string; message: string } }),
      );
    });
    ws.on('error', () => undefined);
  });
}

const isSession = (s: unknown): s is Session => typeof s === 'object' && s !== null && 'ws' in s;

t.test('rankd shell runs a command on a terminal and exits with its code', async (t) => {
  const f = await fleetUnderTest(t, ['s1']);
  const r = await f.cli(['shell', 's1', '--', 'sh', '-c', 'tty; test -t 0 && echo stdin-is-a-tty; exit 7']);
  t.equal(r.code, 7, r.stderr);
  t.match(r.stdout, /^\/dev\/pts\/\d+\r?$/m, 'tty names a pseudo-terminal');
  t.match(r.stdout, /stdin-is-a-tty/);

  const piped = await f.cli(['shell', 's1', '--', 'sh', '-c', 'stty size; exit 0']);
  t.match(piped.stdout, /^24 80\r?$/m, 'without a local terminal the remote one is 80x24');

  // Linux drops what a terminal holds when its last writer exits; none of it may be lost
  const big = await f.cli(['shell', 's1', '--', 'sh', '-c', 'seq 1 200000; exit 6']);
  t.equal(big.code, 6);
  const expected = Array.from({ length: 200000 }, (_, i) => `${i + 1}\n`).join('');
  t.ok(
    big.stdout.replace(/\r\n/g, '\n') === expected,
    `every line arrives, the last included (got ${big.stdout.length} bytes, the tail ${JSON.stringify(big.stdout.slice(-20))})`,
  );

  const unknown = await f.cli(['shell', 'nosuch']);
  t.equal(unknown.code, 65);
  t.match(unknown.stderr, /unknown node "nosuch" \(RANKD_NODE_NOT_FOUND\)/);
});

t.test('from a real local terminal: raw keystrokes, window resizes and the exit code pass through', async (t) => {
  const f = await fleetUnderTest(t, ['s2']);
  const pty = await import('node-pty');
  const term = pty.spawn(
    process.execPath,
    [CLI, 'shell', 's2', '--', 'sh', '-c', 'stty size; while read line; do echo "got $line"; stty size; done; exit 3'],
    {
      cols: 80,
      rows: 24,
      env: { ...process.env, ...f.env, TERM: 'xterm' },
    },
  );
  let out = '';
  term.onData((d) => (out += d));
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  t.teardown(() => term.kill('SIGKILL'));

  await waitUntil('the remote terminal reports 24 80', 30_000, () => /24 80/.test(out));
  term.resize(100, 40);
  // the resize travels as a signal here and a frame there: ask until the remote side sees it
  await waitUntil('the remote terminal follows the resize', 30_000, () => {
    if (/40 100/.test(out)) return true;
    term.write('ping\r');
    return false;
  });
  t.match(out, /got ping/, 'keystrokes reach the remote program');
  term.write('\x04');
  t.equal(await exited, 3, 'the remote exit code is the local one');
});

t.test('signals, authentication, and a lost client or agent ending the remote program', async (t) => {
  const f = await fleetUnderTest(t, ['s3', 's4']);

  const noToken = await openSession(f, 'node=s3', null);
  t.ok(
    !isSession(noToken) && noToken.status === 401 && noToken.body.code === 'RANKD_UNAUTHORIZED',
    'no token, no socket',
  );
  const wrong = await openSession(f, 'node=s3', f.controller.joinToken);
  t.ok(!isSession(wrong) && wrong.status === 401, 'the join token is not an API token');
  const unknown = await openSession(f, 'node=s9');
  t.ok(!isSession(unknown) && unknown.status === 404 && /unknown node "s9"/.test(unknown.body.message));
  const badSize = await openSession(f, 'node=s3&cols=0');
  t.ok(!isSession(badSize) && badSize.status === 400);

  // a signal frame reaches the remote process group
  const sig = await openSession(f, `node=s3&arg=sleep&arg=300`);
  if (!isSession(sig)) throw new Error(`upgrade refused: ${JSON.stringify(sig)}`);
  await waitUntil('started', 20_000, () => sig.events.some((e) => e.type === 'started'));
  sig.ws.send(JSON.stringify({ type: 'signal', signal: 'SIGTERM' }));
  await sig.closed;
  t.same(sig.events.at(-1), { type: 'exit', code: null, signal: 'SIGTERM' });

  // the client goes away without a word: the whole remote session is ended
  const lost = await openSession(
    f,
    `node=s3&arg=sh&arg=-c&arg=${encodeURIComponent('sleep 300 & echo "pids=$$,$!"; wait')}`,
  );
  if (!isSession(lost)) throw new Error('upgrade refused');
  const pids = await waitUntil('pids', 20_000, () => /pids=(\d+),(\d+)/.exec(lost.output())?.slice(1).map(Number));
  t.ok(pids.every(processAlive), 'the remote shell and its background job run');
  lost.ws.terminate();
  for (const pid of pids) await waitUntil(`pid ${pid} ended`, 15_000, () => !processAlive(pid));
  t.pass('a lost client connection ends the remote program and its children');

  // the agent goes away: the client is told, the remote program is ended
  const orphan = await openSession(
    f,
    `node=s4&arg=sh&arg=-c&arg=${encodeURIComponent('echo "pid=$$"; exec sleep 300')}`,
  );
  if (!isSession(orphan)) throw new Error('upgrade refused');
  const pid = await waitUntil('pid', 20_000, () => Number(/pid=(\d+)/.exec(orphan.output())?.[1]) || undefined);
  await f.agents.get('s4')!.stop();
  const close = await orphan.closed;
  t.equal(close.code, 1011);
  t.match(orphan.events.at(-1), { type: 'error', code: 'RANKD_AGENT_UNREACHABLE' });
  await waitUntil(`pid ${pid} ended`, 15_000, () => !processAlive(pid));
  t.pass('a lost agent connection ends the remote program');
});
