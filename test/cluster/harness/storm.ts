// A bounded storm of bad input against the controller's port: its REST API, its
// WebSocket upgrade, and the agent gateway behind it. Every message is wrong in one
// known way, and every one must get a clear answer: an HTTP error with a stable RANKD_*
// code and a message, an error frame with such a code, or a refused upgrade or close
// code that says why. Nothing here is valid enough to touch the running job.
import { RANKD_VERSION, SUBPROTOCOL, encodeBinaryFrame } from '@rankd/protocol';
import type WebSocket from 'ws';
import type { ControllerApi } from './controller-api.js';

export interface Answer {
  /** What came back: "400 RANKD_INVALID_REQUEST", "frame RANKD_BAD_FRAME", "close 1009", … */
  got: string;
  /** A clear error: the expected status or code, with a code and a message to read. */
  clear: boolean;
}

export interface CategoryTally {
  sent: number;
  clear: number;
  /** A few of the answers that were not clear, for the failure message. */
  unclear: string[];
}

export interface StormResult {
  sent: number;
  clear: number;
  byCategory: Record<string, CategoryTally>;
  /** True when the time budget ran out before the count did. */
  cutShort: boolean;
}

interface ErrorBody {
  code?: unknown;
  message?: unknown;
}

const CODE = /^RANKD_[A-Z_]+$/;

function clearBody(body: unknown): boolean {
  const b = body as ErrorBody | null;
  return (
    b !== null &&
    typeof b === 'object' &&
    typeof b.code === 'string' &&
    CODE.test(b.code) &&
    typeof b.message === 'string' &&
    b.message.length > 0
  );
}

class Tally {
  readonly byCategory: Record<string, CategoryTally> = {};
  sent = 0;
  clear = 0;

  add(category: string, answer: Answer): void {
    const c = (this.byCategory[category] ??= { sent: 0, clear: 0, unclear: [] });
    c.sent++;
    this.sent++;
    if (answer.clear) {
      c.clear++;
      this.clear++;
    } else if (c.unclear.length < 3) c.unclear.push(answer.got);
  }
}

/** A storm of bad tokens from one address is rate-limited: 401 until the limit, then 429 with Retry-After. */
const WRONG_TOKEN = [401, 429] as const;

/** One REST request that must fail with `status` (or one of them) and a RANKD_* code. */
async function restProbe(
  api: ControllerApi,
  status: number | readonly number[],
  path: string,
  init: Parameters<ControllerApi['request']>[1],
): Promise<Answer> {
  const statuses: readonly number[] = typeof status === 'number' ? [status] : status;
  try {
    const res = await api.request<ErrorBody>(path, init);
    const code = typeof res.body === 'object' && res.body ? String(res.body.code) : res.text.slice(0, 80);
    return { got: `${res.status} ${code}`, clear: statuses.includes(res.status) && clearBody(res.body) };
  } catch (err) {
    return { got: `no answer: ${(err as Error).message}`, clear: false };
  }
}

interface RestCase {
  category: string;
  status: number | readonly number[];
  path: string;
  init: Parameters<ControllerApi['request']>[1];
}

function restCases(jobId: string): RestCase[] {
  const post = (body: unknown, extra: Record<string, unknown> = {}) => ({ method: 'POST', body, ...extra });
  const wrongTypes: unknown[] = [
    { command: 5 },
    { command: [] },
    { command: [1, 2] },
    { command: ['true'], placement: { nodes: 'three' } },
    { command: ['true'], grace: -1 },
    { command: ['true'], timeout: 'soon' },
    { command: ['true'], launchMissiles: true },
    [],
    'null',
  ];
  return [
    { category: 'rest: malformed JSON', status: 400, path: '/v1/jobs', init: post('{"command": ["sleep", ') },
    ...wrongTypes.map((body) => ({
      category: 'rest: wrong types',
      status: 400,
      path: '/v1/jobs',
      init: post(typeof body === 'string' ? body : JSON.stringify(body)),
    })),
    {
      category: 'rest: wrong content type',
      status: 415,
      path: '/v1/jobs',
      init: post('command=true', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    },
    { category: 'rest: wrong token', status: WRONG_TOKEN, path: '/v1/nodes', init: { token: 'not-the-token' } },
    {
      category: 'rest: wrong token',
      status: WRONG_TOKEN,
      path: `/v1/jobs/${jobId}/cancel`,
      init: { method: 'POST', token: 'Bearer' },
    },
    {
      category: 'rest: wrong token',
      status: WRONG_TOKEN,
      path: '/v1/jobs',
      init: { ...post({ command: ['true'] }), token: null },
    },
    { category: 'rest: unknown route', status: 404, path: '/v1/launch', init: {} },
    { category: 'rest: unknown route', status: 404, path: '/v1/jobs', init: { method: 'DELETE' } },
    { category: 'rest: unknown route', status: 404, path: '/v1/jobs/no-such-job', init: {} },
    { category: 'rest: bad query or params', status: 400, path: '/v1/jobs?limit=lots', init: {} },
    { category: 'rest: bad query or params', status: 400, path: `/v1/jobs/${jobId}/logs?rank=first`, init: {} },
    { category: 'rest: bad query or params', status: 400, path: `/v1/jobs/${jobId}/logs?offset=-5`, init: {} },
    { category: 'rest: bad query or params', status: 400, path: `/v1/jobs/${jobId}/logs?format=xml`, init: {} },
    { category: 'rest: bad query or params', status: 400, path: `/v1/jobs/${jobId}/logs?rank=99`, init: {} },
    {
      category: 'rest: bad query or params',
      status: 400,
      path: `/v1/jobs/${jobId}/signal`,
      init: post({ signal: 'sigkill' }),
    },
    {
      category: 'rest: bad query or params',
      status: 400,
      path: `/v1/jobs/${jobId}/signal`,
      init: post({ signal: 'SIGTERM', rank: -1 }),
    },
  ];
}

/** A gateway session: upgraded with the join token, registered with a hello, frames answered one by one. */
class Session {
  private readonly inbox: Array<string | { closed: number }> = [];
  private waiter: (() => void) | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.push((data as Buffer).toString('utf8')));
    ws.on('close', (code) => this.push({ closed: code }));
    ws.on('error', () => {
      // the close that follows says what happened
    });
  }

  static async open(
    api: ControllerApi,
    identity: Identities,
    name: string,
    hello: Record<string, unknown> | null,
  ): Promise<Session> {
    const ws = api.websocket('/v1/agent', { protocols: [SUBPROTOCOL], tls: await identity(name) });
    const session = new Session(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
    if (hello) {
      ws.send(JSON.stringify(hello));
      const welcome = await session.next(15_000);
      if (typeof welcome !== 'string' || JSON.parse(welcome).type !== 'welcome')
        throw new Error(`no welcome: ${JSON.stringify(welcome)}`);
    }
    return session;
  }

  private push(item: string | { closed: number }): void {
    this.inbox.push(item);
    this.waiter?.();
  }

  /** The next frame (text) or the close, within timeoutMs. */
  async next(timeoutMs: number): Promise<string | { closed: number } | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.inbox.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = null;
    }
    return this.inbox.shift()!;
  }

  /** Sends one bad frame and reads the error frame it must earn. */
  async probe(frame: string | Buffer, expectCode: string): Promise<Answer> {
    this.ws.send(frame, { binary: Buffer.isBuffer(frame) });
    const reply = await this.next(10_000);
    if (reply === null) return { got: 'no answer within 10 s', clear: false };
    if (typeof reply !== 'string') return { got: `close ${reply.closed}`, clear: false };
    const m = JSON.parse(reply) as { type?: string; code?: string; message?: string };
    return { got: `frame ${m.type} ${m.code}`, clear: m.type === 'error' && m.code === expectCode && clearBody(m) };
  }

  close(): void {
    this.ws.terminate();
  }
}

interface FrameCase {
  category: string;
  frame: string | Buffer;
  code: string;
}

/** Frames for an agent's session. `foreign` names a rank another node owns. */
function frameCases(foreign: { jobId: string; rank: number }): FrameCase[] {
  return [
    { category: 'gateway: malformed JSON', frame: '{"type": "heartbeat", "seq": ', code: 'RANKD_BAD_FRAME' },
    { category: 'gateway: malformed JSON', frame: '[1, 2, 3]', code: 'RANKD_BAD_FRAME' },
    { category: 'gateway: malformed JSON', frame: '{"seq": 1}', code: 'RANKD_BAD_FRAME' },
    { category: 'gateway: malformed JSON', frame: Buffer.from([0xde, 0xad, 0xbe, 0xef]), code: 'RANKD_BAD_FRAME' },
    {
      category: 'gateway: wrong types',
      frame: JSON.stringify({ type: 'heartbeat', seq: 'one' }),
      code: 'RANKD_INVALID_MESSAGE',
    },
    {
      category: 'gateway: wrong types',
      frame: JSON.stringify({ type: 'facts', hash: 5, facts: null }),
      code: 'RANKD_INVALID_MESSAGE',
    },
    {
      category: 'gateway: wrong types',
      frame: encodeBinaryFrame(
        { type: 'rank.output', jobId: foreign.jobId, rank: -1, stream: 'stdin', offset: 0 },
        Buffer.from('x\n'),
      ),
      code: 'RANKD_INVALID_MESSAGE',
    },
    {
      category: 'gateway: unknown message types',
      frame: JSON.stringify({
        type: 'rank.output',
        jobId: foreign.jobId,
        rank: 0,
        stream: 'stdout',
        offset: 0,
        data: 'eAo=',
      }),
      code: 'RANKD_UNKNOWN_TYPE',
    },
    {
      category: 'gateway: unknown message types',
      frame: JSON.stringify({ type: 'launch.missiles' }),
      code: 'RANKD_UNKNOWN_TYPE',
    },
    {
      category: 'gateway: unknown message types',
      frame: JSON.stringify({ type: 'job.start', jobId: foreign.jobId, leaseMs: 1000, ranks: [] }),
      code: 'RANKD_UNKNOWN_TYPE',
    },
    {
      category: 'gateway: out of order',
      frame: JSON.stringify({ type: 'hello', name: 'again', version: RANKD_VERSION, capabilities: [], labels: {} }),
      code: 'RANKD_OUT_OF_ORDER',
    },
  ];
}

/** The TLS identity of a node name (enrolled once, reused). */
export type Identities = (name: string) => Promise<{ cert: string; key: string }>;

export interface StormOptions {
  api: ControllerApi;
  identity: Identities;
  /** A live job: the bad requests name it, none may touch it. */
  jobId: string;
  /** About this many messages in all. */
  messages: number;
  /** Stop sending after this long, whatever the count. */
  budgetMs: number;
  /** Called once, when about half of the messages are sent (to sample memory). */
  onHalf?: () => void;
}

export async function storm(o: StormOptions): Promise<StormResult> {
  const tally = new Tally();
  const deadline = Date.now() + o.budgetMs;
  let cutShort = false;
  const more = (): boolean => {
    if (Date.now() > deadline) cutShort = true;
    return !cutShort;
  };
  let halfCalled = false;
  const half = () => {
    if (!halfCalled && tally.sent >= o.messages / 2) {
      halfCalled = true;
      o.onHalf?.();
    }
  };

  // shares of the total: REST 60 %, gateway frames 37 %, upgrades and closes 3 %
  const restCount = Math.round(o.messages * 0.6);
  const connectionCount = Math.round(o.messages * 0.03);
  const frameCount = o.messages - restCount - connectionCount;
  const rest = restCases(o.jobId);
  const sessions = await Promise.all(
    [1, 2, 3, 4, 5, 6, 7, 8].map((i) => Session.open(o.api, o.identity, `storm-${i}`, hello(`storm-${i}`))),
  );
  const frames = frameCases({ jobId: o.jobId, rank: 0 });

  const big = Buffer.alloc(1024 * 1024 + 1024, 0x20);
  let envProbes = 0;
  // one connection each (refused upgrades, sessions the controller must close), and the
  // few costly or dangerous probes, interleaved so that a storm cut short still has them all
  // Probes that open a session of their own use their worker's name (k): two workers probing
  // under one name at once would have the newer session supersede the older (close 4409).
  const connectionKinds: Array<[string, (impostor: Session, k: number) => Promise<Answer>]> = [
    ['gateway: oversize frames', (_, k) => oversizeFrame(o, k)],
    ['rest: oversize body', () => restProbe(o.api, 413, '/v1/jobs', { method: 'POST', body: big })],
    [
      'gateway: a rank another node owns',
      (impostor) => impostor.probe(foreignOutput(o.jobId, tally.sent), 'RANKD_FOREIGN_RANK'),
    ],
    ['upgrade: a token instead of a certificate', () => upgrade(o.api, '/v1/agent', 'nope', [SUBPROTOCOL], 401)],
    ['upgrade: no certificate', () => upgrade(o.api, '/v1/agent', null, [SUBPROTOCOL], 401)],
    ['upgrade: no subprotocol', async () => upgrade(o.api, '/v1/agent', null, [], 400, await o.identity('storm-1'))],
    ['upgrade: unknown path', () => upgrade(o.api, '/v1/launch-missiles', null, [SUBPROTOCOL], 404)],
    ['gateway: first frame not a hello', (_, k) => notHello(o, k)],
  ];

  let restNext = 0;
  const restWorker = async () => {
    while (more()) {
      const i = restNext++;
      if (i >= restCount) return;
      const c = rest[i % rest.length]!;
      tally.add(c.category, await restProbe(o.api, c.status, c.path, c.init));
      half();
    }
  };
  let frameNext = 0;
  const frameWorker = async (s: Session) => {
    while (more()) {
      const i = frameNext++;
      if (i >= frameCount) return;
      const c = frames[i % frames.length]!;
      tally.add(c.category, await s.probe(c.frame, c.code));
      half();
    }
  };
  let connectionNext = 0;
  const connectionWorker = async (k: number) => {
    const impostor = await Session.open(o.api, o.identity, `storm-impostor-${k}`, hello(`storm-impostor-${k}`));
    while (more()) {
      const i = connectionNext++;
      if (i >= connectionCount) break;
      // were it accepted, this would start a job: sent a few times only, naming a program that does not exist
      if (i % 50 === 0 && envProbes < 3) {
        envProbes++;
        tally.add(
          'rest: env name breaking its pattern',
          await restProbe(o.api, 400, '/v1/jobs', {
            method: 'POST',
            body: { command: ['/nonexistent/storm-probe'], env: { 'BAD NAME': 'x' } },
          }),
        );
        continue;
      }
      const [category, probe] = connectionKinds[i % connectionKinds.length]!;
      tally.add(category, await probe(impostor, k));
      half();
    }
    impostor.close();
  };
  await Promise.all([
    ...Array.from({ length: 24 }, restWorker),
    ...sessions.map(frameWorker),
    ...[1, 2, 3, 4].map(connectionWorker),
  ]);
  for (const s of sessions) s.close();
  return { sent: tally.sent, clear: tally.clear, byCategory: tally.byCategory, cutShort };
}

/** Output and exits for rank 0 of the live job, which runs on a real host, not on the sender. */
function foreignOutput(jobId: string, i: number): string | Buffer {
  return i % 2 === 0
    ? encodeBinaryFrame(
        { type: 'rank.output', jobId, rank: 0, stream: 'stdout', offset: 0 },
        Buffer.from('forged line\n'),
      )
    : JSON.stringify({
        type: 'rank.exit',
        jobId,
        rank: 0,
        code: 0,
        signal: null,
        endedAt: new Date().toISOString(),
        outputBytes: { stdout: 0, stderr: 0 },
      });
}

function hello(name: string): Record<string, unknown> {
  return { type: 'hello', name, version: RANKD_VERSION, capabilities: [], labels: { role: 'storm' } };
}

/** An upgrade the gateway must refuse with `status` and a JSON body with a RANKD_* code. */
function upgrade(
  api: ControllerApi,
  path: string,
  token: string | null,
  protocols: string[],
  status: number,
  tls?: { cert: string; key: string },
): Promise<Answer> {
  const ws = api.websocket(path, {
    protocols,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    ...(tls ? { tls } : {}),
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      ws.terminate();
      resolve({ got: 'no answer within 15 s', clear: false });
    }, 15_000);
    ws.once('open', () => {
      clearTimeout(timer);
      ws.terminate();
      resolve({ got: 'upgraded', clear: false });
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        clearTimeout(timer);
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: not clear
        }
        ws.terminate();
        resolve({
          got: `${res.statusCode} ${(body as ErrorBody | null)?.code ?? text.slice(0, 60)}`,
          clear: res.statusCode === status && clearBody(body),
        });
      });
    });
    ws.on('error', () => {
      // unexpected-response or the timer settles it
    });
  });
}

/** A frame over the 1 MiB cap: the gateway closes the connection with 1009. */
async function oversizeFrame(o: StormOptions, k: number): Promise<Answer> {
  const s = await Session.open(o.api, o.identity, `storm-big-${k}`, hello(`storm-big-${k}`));
  s.ws.send(JSON.stringify({ type: 'heartbeat', seq: 1, pad: 'x'.repeat(1024 * 1024 + 16) }));
  const reply = await s.next(15_000);
  s.close();
  if (reply === null) return { got: 'no answer within 15 s', clear: false };
  return typeof reply === 'string'
    ? { got: `frame ${reply.slice(0, 60)}`, clear: false }
    : { got: `close ${reply.closed}`, clear: reply.closed === 1009 };
}

/** A session whose first frame is not a hello: closed with 4400 (bad hello). */
async function notHello(o: StormOptions, k: number): Promise<Answer> {
  const s = await Session.open(o.api, o.identity, `storm-nohello-${k}`, null);
  s.ws.send(JSON.stringify({ type: 'heartbeat', seq: 0 }));
  const reply = await s.next(15_000);
  s.close();
  if (reply === null) return { got: 'no answer within 15 s', clear: false };
  return typeof reply === 'string'
    ? { got: `frame ${reply.slice(0, 60)}`, clear: false }
    : { got: `close ${reply.closed}`, clear: reply.closed === 4400 };
}
