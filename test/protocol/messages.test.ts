// Golden frames, valid and invalid, for every message of the agent gateway.
import t from 'tap';
import {
  AgentBinaryMessages,
  AgentMessages,
  ControllerMessages,
  MAX_BINARY_PAYLOAD_BYTES,
  decodeBinaryFrame,
  decodeFrame,
  encodeBinaryFrame,
  type MessageMap,
} from '@rankd/protocol';
import { fleetGolden } from '../fleet/golden-frames.js';
import { fabricGolden } from '../fleet/fabric-golden-frames.js';
import { pmiGolden } from '../mpi/golden-frames.js';
import { ompiGolden } from '../mpi/openmpi-golden-frames.js';

interface Golden {
  map: MessageMap;
  frame: unknown;
  /** undefined: valid; otherwise the expected error code */
  error?: string;
  /** Sent as a binary frame: the frame is the header, this the raw bytes after it. */
  payload?: Buffer;
}

const hello = { type: 'hello', name: 'gpu-node-01', version: '0.1.0', capabilities: ['facts'], labels: { rack: 'r1' } };
const launch = { rank: 0, argv: ['python3', '-u', 'train.py'], env: { RANK: '0' }, cpus: [0, 1, 2], memNodes: [0] };
const golden: Record<string, Golden[]> = {
  ...fleetGolden,
  ...fabricGolden,
  ...ompiGolden,
  ...pmiGolden,
  hello: [
    { map: AgentMessages, frame: hello },
    { map: AgentMessages, frame: { ...hello, id: 'h1', address: '10.0.0.5', bootId: 'abc' } },
    { map: AgentMessages, frame: { ...hello, name: '' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, name: 'has space' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, capabilities: 'facts' }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, labels: { rack: 1 } }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, labels: { 'bad key': 'x' } }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, surprise: true }, error: 'RANKD_INVALID_MESSAGE' },
    { map: AgentMessages, frame: { ...hello, facts: { cpu: {} } }, error: 'RANKD_INVALID_MESSAGE' },
    { map: ControllerMessages, frame: hello, error: 'RANKD_UNKNOWN_TYPE' },
  ],
  welcome: [
    {
      map: ControllerMessages,
      frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5000, ttlMs: 15000 },
    },
    {
      map: ControllerMessages,
      frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5 },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 1.5, ttlMs: 3 },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentMessages,
      frame: { type: 'welcome', controllerVersion: '0.1.0', heartbeatMs: 5000, ttlMs: 15000 },
      error: 'RANKD_UNKNOWN_TYPE',
    },
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
  'job.start': [
    { map: ControllerMessages, frame: { type: 'job.start', jobId: 'jabc', leaseMs: 60000, ranks: [launch] } },
    {
      map: ControllerMessages,
      frame: {
        type: 'job.start',
        jobId: 'jabc',
        leaseMs: 60000,
        ranks: [{ ...launch, cwd: '/tmp', user: 'alice', pty: true }],
      },
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.start', jobId: 'jabc', leaseMs: 60000, ranks: [] },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.start', jobId: '../etc', leaseMs: 60000, ranks: [launch] },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.start', jobId: 'j1', leaseMs: 60000, ranks: [{ ...launch, argv: 'sh -c x' }] },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.start', jobId: 'j1', leaseMs: 60000, ranks: [{ ...launch, cpus: ['0-3'] }] },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentMessages,
      frame: { type: 'job.start', jobId: 'jabc', leaseMs: 60000, ranks: [launch] },
      error: 'RANKD_UNKNOWN_TYPE',
    },
  ],
  'job.abort': [
    {
      map: ControllerMessages,
      frame: { type: 'job.abort', jobId: 'j1', graceMs: 10000, reason: 'rank 1 exited with code 1' },
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.abort', jobId: 'j1', graceMs: -1, reason: 'x' },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'job.signal': [
    { map: ControllerMessages, frame: { type: 'job.signal', jobId: 'j1', signal: 'SIGUSR1' } },
    { map: ControllerMessages, frame: { type: 'job.signal', jobId: 'j1', rank: 3, signal: 'SIGTERM' } },
    {
      map: ControllerMessages,
      frame: { type: 'job.signal', jobId: 'j1', signal: 'kill -9' },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'job.resume': [
    {
      map: ControllerMessages,
      frame: { type: 'job.resume', jobId: 'j1', rank: 0, offsets: { stdout: 120, stderr: 0 } },
    },
    {
      map: ControllerMessages,
      frame: { type: 'job.resume', jobId: 'j1', rank: 0, offsets: { stdout: 120 } },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'job.release': [
    { map: ControllerMessages, frame: { type: 'job.release', jobId: 'j1' } },
    { map: ControllerMessages, frame: { type: 'job.release' }, error: 'RANKD_INVALID_MESSAGE' },
  ],
  'rank.started': [
    {
      map: AgentMessages,
      frame: {
        type: 'rank.started',
        jobId: 'j1',
        rank: 0,
        pid: 4242,
        startedAt: '2026-11-22T01:00:00.000Z',
        binding: { cpus: [0, 1], memNodes: [0], verified: true },
        warnings: [],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'rank.started',
        jobId: 'j1',
        rank: 0,
        pid: 4242,
        startedAt: 'x',
        binding: { cpus: [], memNodes: [], verified: false, detail: 'not read: the rank exited first' },
        warnings: ['numactl is not installed'],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'rank.started',
        jobId: 'j1',
        rank: 0,
        pid: 0,
        startedAt: 'x',
        binding: { cpus: [], memNodes: [], verified: true },
        warnings: [],
      },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'rank.output': [
    {
      map: AgentBinaryMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stdout', offset: 0 },
      payload: Buffer.from('hello\n'),
    },
    {
      map: AgentBinaryMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stdout', offset: 0, data: 'aGVsbG8K' },
      payload: Buffer.alloc(0),
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentBinaryMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stderr', offset: 7 },
      payload: Buffer.from([0xff, 0x00, 0x0a]),
    },
    {
      map: AgentBinaryMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stdin', offset: 0 },
      payload: Buffer.alloc(0),
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentBinaryMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stdout', offset: -5 },
      payload: Buffer.alloc(0),
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentBinaryMessages,
      frame: { type: 'hello', name: 'n', version: '1', capabilities: [], labels: {} },
      payload: Buffer.alloc(0),
      error: 'RANKD_UNKNOWN_TYPE',
    },
    // bulk bytes never travel as text (base64 in JSON cost more CPU than the rest of the log path)
    {
      map: AgentMessages,
      frame: { type: 'rank.output', jobId: 'j1', rank: 1, stream: 'stdout', offset: 0, data: 'aGVsbG8K' },
      error: 'RANKD_UNKNOWN_TYPE',
    },
  ],
  'rank.exit': [
    {
      map: AgentMessages,
      frame: {
        type: 'rank.exit',
        jobId: 'j1',
        rank: 1,
        code: 0,
        signal: null,
        endedAt: 'x',
        outputBytes: { stdout: 6, stderr: 0 },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'rank.exit',
        jobId: 'j1',
        rank: 1,
        code: null,
        signal: 'SIGKILL',
        endedAt: 'x',
        outputBytes: { stdout: 6, stderr: 0 },
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'rank.exit',
        jobId: 'j1',
        rank: 1,
        code: null,
        signal: null,
        endedAt: 'x',
        outputBytes: { stdout: 0, stderr: 0 },
        error: { code: 'RANKD_RANK_BAD_USER', message: 'no user nosuch' },
      },
    },
    {
      map: AgentMessages,
      frame: { type: 'rank.exit', jobId: 'j1', rank: 1, code: 0, signal: null, endedAt: 'x' },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'rank.stdin': [
    { map: ControllerMessages, frame: { type: 'rank.stdin', jobId: 'j1', rank: 0, data: 'aGVsbG8K' } },
    {
      map: ControllerMessages,
      frame: { type: 'rank.stdin', jobId: 'j1', rank: 0, data: 'not base64!' },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'rank.stdin', jobId: 'j1', rank: 0, data: 'A'.repeat(262_148) },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: AgentMessages,
      frame: { type: 'rank.stdin', jobId: 'j1', rank: 0, data: 'aGVsbG8K' },
      error: 'RANKD_UNKNOWN_TYPE',
    },
  ],
  'rank.stdin.end': [
    { map: ControllerMessages, frame: { type: 'rank.stdin.end', jobId: 'j1', rank: 0 } },
    { map: ControllerMessages, frame: { type: 'rank.stdin.end', jobId: 'j1' }, error: 'RANKD_INVALID_MESSAGE' },
  ],
  'rank.stdin.ack': [
    { map: AgentMessages, frame: { type: 'rank.stdin.ack', jobId: 'j1', rank: 0, bytes: 65536 } },
    {
      map: AgentMessages,
      frame: { type: 'rank.stdin.ack', jobId: 'j1', rank: 0, bytes: 0 },
      error: 'RANKD_INVALID_MESSAGE',
    },
    {
      map: ControllerMessages,
      frame: { type: 'rank.stdin.ack', jobId: 'j1', rank: 0, bytes: 1 },
      error: 'RANKD_UNKNOWN_TYPE',
    },
  ],
  'rank.stdin.closed': [
    {
      map: AgentMessages,
      frame: { type: 'rank.stdin.closed', jobId: 'j1', rank: 0, reason: 'rank 0 closed its stdin or ended' },
    },
    {
      map: AgentMessages,
      frame: { type: 'rank.stdin.closed', jobId: 'j1', rank: -1, reason: 'x' },
      error: 'RANKD_INVALID_MESSAGE',
    },
  ],
  'ranks.report': [
    { map: AgentMessages, frame: { type: 'ranks.report', ranks: [] } },
    {
      map: AgentMessages,
      frame: {
        type: 'ranks.report',
        ranks: [{ jobId: 'j1', rank: 0, state: 'running', pid: 77, outputBytes: { stdout: 1, stderr: 2 } }],
      },
    },
    {
      map: AgentMessages,
      frame: {
        type: 'ranks.report',
        ranks: [{ jobId: 'j1', rank: 0, state: 'sleeping', pid: 77, outputBytes: { stdout: 1, stderr: 2 } }],
      },
      error: 'RANKD_INVALID_MESSAGE',
    },
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
      const decoded = c.payload
        ? decodeBinaryFrame(encodeBinaryFrame(c.frame as { type: string }, c.payload), c.map)
        : decodeFrame(raw, c.map);
      if (c.error === undefined) {
        t.ok(decoded.ok, `valid: ${raw.slice(0, 80)}${decoded.ok ? '' : ` (${decoded.error})`}`);
        if (c.payload && decoded.ok)
          t.same('payload' in decoded ? decoded.payload : null, c.payload, 'the payload comes back byte for byte');
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

t.test('binary frames that are not well formed are refused with a reason, never thrown', async (t) => {
  const header = { type: 'rank.output', jobId: 'j1', rank: 0, stream: 'stdout', offset: 0 };
  const good = encodeBinaryFrame(header, Buffer.from('x\n'));
  const cases: Array<[string, Buffer, string]> = [
    ['shorter than its length prefix', Buffer.from([0, 0]), 'RANKD_BAD_FRAME'],
    [
      'a header length past the frame',
      Buffer.concat([Buffer.from([0, 0, 1, 0]), Buffer.from('{}')]),
      'RANKD_BAD_FRAME',
    ],
    ['a header length over the cap', Buffer.from([0, 1, 0, 0, 1, 2, 3]), 'RANKD_BAD_FRAME'],
    ['a header that is not JSON', Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.from('{{{')]), 'RANKD_BAD_FRAME'],
    [
      'a payload over the cap',
      Buffer.concat([good.subarray(0, good.length - 2), Buffer.alloc(MAX_BINARY_PAYLOAD_BYTES + 1)]),
      'RANKD_TOO_LARGE',
    ],
  ];
  for (const [what, frame, code] of cases) {
    const decoded = decodeBinaryFrame(frame, AgentBinaryMessages);
    t.notOk(decoded.ok, what);
    if (!decoded.ok) t.equal(decoded.code, code, what);
  }
  t.throws(
    () => encodeBinaryFrame(header, Buffer.alloc(MAX_BINARY_PAYLOAD_BYTES + 1)),
    RangeError,
    'the sender refuses an oversize payload too',
  );
});

t.test('the facts message accepts a real snapshot of this machine', async (t) => {
  const { readFacts } = await import('@rankd/topology');
  const facts = readFacts({ root: '/' });
  const decoded = decodeFrame(JSON.stringify({ type: 'facts', hash: 'h', facts }), AgentMessages);
  t.ok(decoded.ok, decoded.ok ? 'valid' : decoded.error);
  const withFacts = decodeFrame(JSON.stringify({ ...hello, facts }), AgentMessages);
  t.ok(withFacts.ok, withFacts.ok ? 'hello with facts' : withFacts.error);
});

t.test('every message type has golden frames', async (t) => {
  const covered = new Set(Object.keys(golden));
  for (const type of [...AgentMessages.keys(), ...AgentBinaryMessages.keys(), ...ControllerMessages.keys()])
    t.ok(covered.has(type), `golden frames for ${type}`);
});
