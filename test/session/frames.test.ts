// Bad frames get clear answers and never cost a node its link; oversize frames close
// the link with 1009; the first frame must be a hello.
import t from 'tap';
import WebSocket from 'ws';
import { encodeBinaryFrame } from '@rankd/protocol';
import { startController, type ControllerHandle } from '../helpers/daemons.js';
import { gatewayUrl, identityFor } from '../helpers/tls.js';

interface Frame {
  type: string;
  code?: string;
  message?: string;
  inReplyTo?: string;
  heartbeatMs?: number;
}

class RawAgent {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: Array<() => void> = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d: Buffer) => {
      this.frames.push(JSON.parse(d.toString()) as Frame);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    ws.on('error', () => undefined);
  }
  static async connect(controller: ControllerHandle, name = 'raw-1'): Promise<RawAgent> {
    // the link is authenticated by a node certificate (enrolled once per controller and name)
    const id = await identityFor(controller, name);
    const ws = new WebSocket(gatewayUrl(controller.url), ['rankd.v1'], { ca: id.ca, cert: id.cert, key: id.key });
    const agent = new RawAgent(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return agent;
  }
  async next(timeoutMs = 5000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (this.closed) throw new Error(`closed ${this.closed.code} ${this.closed.reason}`);
      if (Date.now() > deadline) throw new Error('no frame in time');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return this.frames.shift()!;
  }
  async untilClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('not closed in time');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return this.closed;
  }
  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }
  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

const hello = { type: 'hello', name: 'raw-1', version: 'test', capabilities: [], labels: {} };

t.test('after hello: bad frames get error frames and the link stays up', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agent = await RawAgent.connect(controller);
  t.teardown(() => agent.ws.terminate());
  agent.send(hello);
  const welcome = await agent.next();
  t.equal(welcome.type, 'welcome');
  t.ok(welcome.heartbeatMs! > 0);

  agent.send({ type: 'launch-the-missiles', id: 'x1' });
  const unknown = await agent.next();
  t.same([unknown.type, unknown.code, unknown.inReplyTo], ['error', 'RANKD_UNKNOWN_TYPE', 'launch-the-missiles']);

  agent.send('{not json');
  const bad = await agent.next();
  t.same([bad.type, bad.code], ['error', 'RANKD_BAD_FRAME']);

  agent.send({ type: 'heartbeat', seq: 'one' });
  const invalid = await agent.next();
  t.equal(invalid.code, 'RANKD_INVALID_MESSAGE');
  t.match(invalid.message, /seq/, 'the error names the field');

  agent.send({ noType: true });
  t.equal((await agent.next()).code, 'RANKD_BAD_FRAME');

  agent.send(hello);
  t.equal((await agent.next()).code, 'RANKD_OUT_OF_ORDER', 'a second hello is refused');

  // binary frames: a header and raw bytes, refused with the same codes when wrong
  agent.ws.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), { binary: true });
  t.equal((await agent.next()).code, 'RANKD_BAD_FRAME', 'a binary frame without a sane header length');
  agent.ws.send(encodeBinaryFrame({ type: 'heartbeat', seq: 1 }, Buffer.alloc(0)), { binary: true });
  t.equal((await agent.next()).code, 'RANKD_UNKNOWN_TYPE', 'only output travels as binary');
  // output of a job the controller does not know is dropped quietly (a late resend after
  // the job ended looks the same); the link stays up, as the next exchange shows
  agent.ws.send(
    encodeBinaryFrame(
      { type: 'rank.output', jobId: 'jnosuch', rank: 0, stream: 'stdout', offset: 0 },
      Buffer.from('late\n'),
    ),
    { binary: true },
  );

  // still registered and served
  agent.send({ type: 'heartbeat', seq: 1 });
  agent.send({ type: 'nope' });
  t.equal((await agent.next()).code, 'RANKD_UNKNOWN_TYPE');
  t.equal(agent.closed, null);
  const nodes = await controller.api<{ nodes: Array<{ name: string; state: string }> }>('/v1/nodes');
  t.same(
    nodes.body.nodes.map((n) => [n.name, n.state]),
    [['raw-1', 'ready']],
  );
});

t.test('a frame over 1 MiB closes the link with 1009', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agent = await RawAgent.connect(controller);
  agent.send(hello);
  await agent.next();
  agent.send({ type: 'heartbeat', seq: 1, pad: 'x'.repeat(1024 * 1024 + 1) });
  const closed = await agent.untilClosed();
  t.equal(closed.code, 1009);
  // and the controller is fine
  const health = await controller.api('/healthz', { token: null });
  t.equal(health.status, 200);
});

t.test('the first frame must be a valid hello', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const a = await RawAgent.connect(controller);
  a.send({ type: 'heartbeat', seq: 0 });
  const closedA = await a.untilClosed();
  t.equal(closedA.code, 4400);
  t.match(closedA.reason, /expected hello/);

  const b = await RawAgent.connect(controller);
  b.send({ ...hello, name: 'bad name with spaces' });
  const closedB = await b.untilClosed();
  t.equal(closedB.code, 4400);
  t.match(closedB.reason, /name/);

  const c = await RawAgent.connect(controller);
  c.ws.send(
    encodeBinaryFrame({ type: 'rank.output', jobId: 'j1', rank: 0, stream: 'stdout', offset: 0 }, Buffer.from('x\n')),
    { binary: true },
  );
  const closedC = await c.untilClosed();
  t.equal(closedC.code, 4400, 'output before the hello');
  t.match(closedC.reason, /before the hello/);
});

t.test('a second connection with the same node name supersedes the first', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const first = await RawAgent.connect(controller);
  first.send(hello);
  await first.next();
  const second = await RawAgent.connect(controller);
  second.send(hello);
  t.equal((await second.next()).type, 'welcome');
  t.equal((await first.untilClosed()).code, 4409);
  second.ws.terminate();
});
