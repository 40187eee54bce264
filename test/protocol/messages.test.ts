// Golden frames, valid and invalid, for every message of the agent gateway.
import t from 'tap';
import { AgentMessages, ControllerMessages, decodeFrame, type MessageMap } from '@rankd/protocol';

interface Golden {
  map: MessageMap;
  frame: unknown;
  /** undefined: valid; otherwise the expected error code */
  error?: string;
}

const hello = { type: 'hello', name: 'gpu-node-01', version: '0.1.0', capabilities: ['facts'], labels: { rack: 'r1' } };
const golden: Record<string, Golden[]> = {
  hello: [
    { map: AgentMessages, frame: hello },
    { map: AgentMessages, frame: { ...hello, id: 'h1', address: '10.0.0.5', bootId: 'abc' } },
    { map: AgentMessages, frame: { ...hello, name: '' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, name: 'has space' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, capabilities: 'facts' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, labels: { rack: 1 } }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, surprise: true }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, facts: { cpu: {} } }, error: 'RANKD_INVALID_MESSAGE' },
    { map: ControllerMessages, frame: hello, error: 'RANKD_UNKNOWN_TYPE' },
  ],
  welcome: [
    { map: ControllerMessages, frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5000, ttlMs: 15000 } },
    { map: ControllerMessages, frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5 }, error: 'RANKD_INVALID_MESSAGE' },
    { map: ControllerMessages, frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 1.5, ttlMs: 3 }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5000, ttlMs: 15000 }, error: 'RANKD_UNKNOWN_TYPE' },
  ],
  heartbeat: [
    { map: AgentMessages, frame: { type: 'heartbeat', seq: 0 } },
    { map: AgentMessages, frame: { type: 'heartbeat', seq: -1 }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { type: 'heartbeat' }, error: 'RANKD_INVALID_MESSAGE' },
  ],
  facts: [
    { map: AgentMessages, frame: { type: 'facts', hash: 'abc', facts: null }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { type: 'facts', facts: {} }, error: 'RANKD_INVALID_MESSAGE' },
  ],
  error: [
    { map: AgentMessages, frame: { type: 'error', code: 'RANKD_UNKNOWN_TYPE', message: 'x', inReplyTo: 'y' } },
    { map: ControllerMessages, frame: { type: 'error', id: 'r1', code: 'RANKD_BAD_FRAME', message: 'x' } },
    { map: ControllerMessages, frame: { type: 'error', code: 42, message: 'x' }, error: 'RANKD_INVALID_MESSAGE' },
  ],
  envelope: [
    { map: AgentMessages, frame: 'not json', error: 'RANKD_BAD_FRAME' },
    { map: AgentMessages, frame: [1, 2], error: 'RANKD_BAD_FRAME' },
    { map: AgentMessages, frame: { type: 7 }, error: 'RANKD_BAD_FRAME' },
    { map: AgentMessages, frame: { type: 'heartbeat', seq: 1, id: '' }, error: 'RANKD_INVALID_MESSAGE' },
  ],
};

for (const [name, cases] of Object.entries(golden)) {
  t.test(name, async (t) => {
    for (const c of cases) {
      const raw = typeof c.frame === 'string' ? c.frame : JSON.stringify(c.frame);
      const decoded = decodeFrame(raw, c.map);
      if (c.error === undefined) {
        t.ok(decoded.ok, `valid: ${raw.slice(0, 80)}${decoded.ok ? '' : ` (${decoded.error})`}`);
      } else {
        t.notOk(decoded.ok, `invalid: ${raw.slice(0, 80)}`);
        if (!decoded.ok) {
          t.equal(decoded.code, c.error, raw.slice(0, 80));
          t.ok(decoded.error.length > 0, 'says why');
        }
      }
    }
  });
}

t.test('the facts message accepts a real snapshot of this machine', async (t) => {
  const { readFacts } = await import('@rankd/agent/facts/index');
  const facts = readFacts({ root: '/' });
  const decoded = decodeFrame(JSON.stringify({ type: 'facts', hash: 'h', facts }), AgentMessages);
  t.ok(decoded.ok, decoded.ok ? 'valid' : decoded.error);
  const withFacts = decodeFrame(JSON.stringify({ ...hello, facts }), AgentMessages);
  t.ok(withFacts.ok, withFacts.ok ? 'hello with facts' : withFacts.error);
});

t.test('every message type has golden frames', async (t) => {
  const covered = new Set(Object.keys(golden));
  for (const type of [...AgentMessages.keys(), ...ControllerMessages.keys()]) t.ok(covered.has(type), `golden frames for ${type}`);
});
