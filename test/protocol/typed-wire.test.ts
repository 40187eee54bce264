// The agent↔controller contract in the types: a handler registered for a `type` gets that
// message, send() takes only a valid message of its direction's table, and the gateway's
// handlers get an authenticated connection whose name is a string.
//
// The type-level half is checked by `npx tsc -p test --noEmit` (and by tap's TAP_TYPECHECK=1):
// every `@ts-expect-error` line must fail to compile, or tsc reports the directive as unused.
// The runtime half shows the decoder refuses the same mistakes when a peer sends them.
import t from 'tap';
import {
  ControllerMessages,
  decodeFrame,
  type AgentMessage,
  type ControllerMessage,
  type Message,
} from '@rankd/protocol';
import type { ControllerLink } from '#agent/link/controller-link';
import type { AgentHandlers } from '#controller/gateway/agent-handlers';
import type { AgentSender } from '#controller/gateway/agent-sender';

const launch = { rank: 0, argv: ['hostname'], env: {}, cpus: [0], memNodes: [0] };

/** Never called: it exists for tsc to check. */
export function contract(link: ControllerLink, agents: AgentSender): AgentHandlers {
  link.handle('pmi.fenced', (m) => {
    const chunks: number = m.chunks;
    const pairs: Array<[string, string]> | undefined = m.pairs;
    // @ts-expect-error pmi.fenced has no `part` (that is pmi.fence's)
    void m.part;
    void [chunks, pairs];
  });
  link.handle('job.start', (m) => void m.ranks.map((r) => r.argv));
  // @ts-expect-error no controller message is called job.begin
  link.handle('job.begin', () => {});

  agents.send('n1', { type: 'job.start', jobId: 'j1', leaseMs: 60_000, ranks: [launch] });
  // @ts-expect-error a misspelled field of job.start (ranks)
  agents.send('n1', { type: 'job.start', jobId: 'j1', leaseMs: 60_000, rank: [launch] });
  // @ts-expect-error a field of the wrong type
  agents.send('n1', { type: 'job.abort', jobId: 'j1', graceMs: '10s', reason: 'x' });
  // @ts-expect-error an agent's message is not the controller's to send
  agents.send('n1', { type: 'heartbeat', seq: 1 });
  // @ts-expect-error the agent sends agent messages only
  link.send({ type: 'job.start', jobId: 'j1', leaseMs: 60_000, ranks: [launch] });
  // @ts-expect-error a misspelled field of pmi.fence (pairs)
  link.send({ type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pair: [] });
  // @ts-expect-error rank output travels as a binary frame with its bytes, not as text
  link.send({ type: 'rank.output', jobId: 'j1', rank: 0, stream: 'stdout', offset: 0 });

  const wrongMessage = (_conn: unknown, m: Message<AgentMessage, 'rank.started'>) => void m.pid;
  // @ts-expect-error a handler gets the message of its own key only
  const wrongKey: AgentHandlers = { 'rank.exit': wrongMessage };
  const noHello: AgentHandlers = {
    // @ts-expect-error the hello is the connection's own: no handler takes it
    hello: () => {},
  };
  void [wrongKey, noHello];
  return {
    'pmi.fence': (conn, m) => {
      const node: string = conn.name;
      const epoch: number = m.epoch;
      void [node, epoch];
    },
    'rank.output': (conn, m, payload) => void [conn.name.length, m.offset, payload.length],
  };
}

t.test('what the types refuse, the decoder refuses when a peer sends it', async (t) => {
  const valid: ControllerMessage = { type: 'job.start', jobId: 'j1', leaseMs: 60_000, ranks: [launch] };
  t.ok(decodeFrame(JSON.stringify(valid), ControllerMessages).ok, 'a valid job.start');
  const cases: Array<[string, unknown, string]> = [
    [
      'a misspelled field of job.start',
      { type: 'job.start', jobId: 'j1', leaseMs: 60_000, rank: [launch] },
      'RANKD_INVALID_MESSAGE',
    ],
    [
      'a field of the wrong type',
      { type: 'job.abort', jobId: 'j1', graceMs: '10s', reason: 'x' },
      'RANKD_INVALID_MESSAGE',
    ],
    ['a type not in the table', { type: 'job.begin', jobId: 'j1' }, 'RANKD_UNKNOWN_TYPE'],
    ["an agent's message", { type: 'heartbeat', seq: 1 }, 'RANKD_UNKNOWN_TYPE'],
  ];
  for (const [what, frame, code] of cases) {
    const decoded = decodeFrame(JSON.stringify(frame), ControllerMessages);
    t.notOk(decoded.ok, what);
    if (!decoded.ok) t.equal(decoded.code, code, what);
  }
});

t.test('a decoded message is the one of its type', async (t) => {
  const decoded = decodeFrame(
    JSON.stringify({ type: 'pmi.fenced', jobId: 'j1', epoch: 2, chunks: 3 }),
    ControllerMessages,
  );
  t.ok(decoded.ok);
  if (!decoded.ok || decoded.message.type !== 'pmi.fenced') return t.fail('not a pmi.fenced');
  // narrowed by its type: `chunks` is a number here without a cast
  t.equal(decoded.message.chunks + 1, 4);
  t.equal(decoded.message.pairs, undefined);
});
