// The frames built by encoders rather than by JSON.stringify of a whole message: the
// controller's PMI answers (their merged pairs are encoded once and joined to each frame's
// head) and the agent's rank output (a JSON header and raw bytes). Each must be a valid
// message of its table, checked by the schema itself (TypeBox Value.Check) and by the
// decoder the receiving end runs.
import t from 'tap';
import { Value } from 'typebox/value';
import {
  AgentBinaryMessages,
  ControllerMessages,
  EncodedPmiPairs,
  MAX_BINARY_PAYLOAD_BYTES,
  PmiChunk,
  PmiFenced,
  RankOutput,
  decodeBinaryFrame,
  decodeFrame,
  encodeBinaryFrame,
  encodePmiChunk,
  encodePmiFenced,
  type PmiPairs,
} from '@rankd/protocol';

// what ranks really put (hex business cards), and the values JSON must escape
const pairs: PmiPairs = [
  ['PMI_process_mapping', '(vector,(0,2,4))'],
  ['-allgather-shm-1-0', 'a0b1'.repeat(100)],
  ['quote', 'say "hi"'],
  ['slash', 'back\\slash/'],
  ['control', 'tab\tnew\nline\u0001'],
  ['utf8', 'héllo 日本 😀'],
  ['empty', ''],
];

function parsed(frame: Buffer): unknown {
  return JSON.parse(frame.toString('utf8'));
}

t.test('pmi.fenced: inline and lazy answers are valid messages that say what was meant', async (t) => {
  const cases = [
    {
      what: 'inline',
      frame: encodePmiFenced({ type: 'pmi.fenced', jobId: 'j-1_a', epoch: 0, chunks: 0 }, new EncodedPmiPairs(pairs)),
      pairs,
    },
    {
      what: 'inline, no puts',
      frame: encodePmiFenced({ type: 'pmi.fenced', jobId: 'j1', epoch: 7, chunks: 0 }, new EncodedPmiPairs([])),
      pairs: [],
    },
    {
      what: 'lazy',
      frame: encodePmiFenced({ type: 'pmi.fenced', jobId: 'j1', epoch: 1_000_000, chunks: 25 }, null),
      pairs: undefined,
    },
  ];
  for (const c of cases) {
    const value = parsed(c.frame);
    t.ok(Value.Check(PmiFenced, value), `${c.what}: matches the PmiFenced schema`);
    const decoded = decodeFrame(c.frame, ControllerMessages);
    t.ok(decoded.ok, `${c.what}: the agent's decoder takes it${decoded.ok ? '' : ` (${decoded.error})`}`);
    if (!decoded.ok || decoded.message.type !== 'pmi.fenced') continue;
    t.same(decoded.message.pairs, c.pairs, `${c.what}: the pairs come back as they were`);
  }
});

t.test('pmi.chunk: a chunk, with or without an id, and the error answer are valid messages', async (t) => {
  const cases = [
    {
      what: 'with an id',
      frame: encodePmiChunk(
        { type: 'pmi.chunk', id: 'pmi-1', jobId: 'j1', epoch: 2, chunk: 0 },
        new EncodedPmiPairs(pairs),
      ),
      pairs,
    },
    {
      what: 'without an id',
      frame: encodePmiChunk({ type: 'pmi.chunk', jobId: 'j1', epoch: 2, chunk: 65535 }, new EncodedPmiPairs(pairs)),
      pairs,
    },
    {
      what: 'an error',
      frame: encodePmiChunk(
        { type: 'pmi.chunk', id: 'pmi-2', jobId: 'j1', epoch: 2, chunk: 9, error: 'no chunk 9 of fence 2 of job j1' },
        null,
      ),
      pairs: [],
    },
  ];
  for (const c of cases) {
    t.ok(Value.Check(PmiChunk, parsed(c.frame)), `${c.what}: matches the PmiChunk schema`);
    const decoded = decodeFrame(c.frame, ControllerMessages);
    t.ok(decoded.ok, `${c.what}: the agent's decoder takes it${decoded.ok ? '' : ` (${decoded.error})`}`);
    if (!decoded.ok || decoded.message.type !== 'pmi.chunk') continue;
    t.same(decoded.message.pairs, c.pairs, `${c.what}: the pairs`);
  }
  const error = parsed(cases[2]!.frame);
  t.match(
    error,
    { error: 'no chunk 9 of fence 2 of job j1', id: 'pmi-2' },
    'the error answer says which chunk, under the fetch id',
  );
});

t.test('an encoded answer whose head the schema refuses is refused by the receiving decoder', async (t) => {
  // the encoders are typed, but a head from outside the type system is still caught by the schema
  const frame = encodePmiChunk({ type: 'pmi.chunk', jobId: '../etc', epoch: -1, chunk: 0 }, new EncodedPmiPairs([]));
  t.notOk(Value.Check(PmiChunk, parsed(frame)), 'an invalid job id and epoch fail the schema');
  const decoded = decodeFrame(frame, ControllerMessages);
  t.notOk(decoded.ok);
  if (!decoded.ok) t.equal(decoded.code, 'RANKD_INVALID_MESSAGE');
});

t.test('rank.output: the binary frame of each stream carries a valid header and the bytes as they were', async (t) => {
  const payloads = [
    Buffer.alloc(0),
    Buffer.from('step 1 loss=0.25\n'),
    Buffer.from([0, 255, 10, 13, 0x22]),
    Buffer.alloc(MAX_BINARY_PAYLOAD_BYTES, 7),
  ];
  for (const stream of ['stdout', 'stderr'] as const) {
    for (const payload of payloads) {
      const header: RankOutput = { type: 'rank.output', jobId: 'j-7', rank: 4095, stream, offset: 2 ** 40 };
      const frame = encodeBinaryFrame(header, payload);
      const decoded = decodeBinaryFrame(frame, AgentBinaryMessages);
      t.ok(
        decoded.ok,
        `${stream}, ${payload.length} bytes: the controller's decoder takes it${decoded.ok ? '' : ` (${decoded.error})`}`,
      );
      if (!decoded.ok) continue;
      t.ok(Value.Check(RankOutput, decoded.message), 'the header matches the RankOutput schema');
      t.same(decoded.message, header, 'the header comes back as it was');
      t.ok(decoded.payload.equals(payload), 'the payload comes back byte for byte');
    }
  }
});
