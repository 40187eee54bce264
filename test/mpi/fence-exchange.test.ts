// The controller's fence exchange on its own: sizes it counts as pairs travel, the one
// answer every node gets, the nodes it refuses, and a lazy answer's chunks holding every pair.
import t from 'tap';
import type { Logger } from 'pino';
import { ControllerMessages, decodeFrame, type PmiPairs } from '@rankd/protocol';
import { FenceExchange, INLINE_BYTES, pairBytes } from '#controller/pmi/fence-exchange';

const silent = { warn: () => {}, info: () => {}, error: () => {} } as unknown as Logger;

function exchange(nodes: string[]) {
  const sent: Array<{ node: string; frame: Buffer }> = [];
  const failed: string[] = [];
  const x = new FenceExchange(
    { nodes: (jobId) => (jobId === 'j1' ? nodes : null), fail: (_jobId, reason) => void failed.push(reason) },
    { sendEncoded: (node, frame) => (sent.push({ node, frame }), true) },
    silent,
  );
  return { x, sent, failed };
}

t.test('pairBytes counts what JSON makes of a pair, escapes and multi-byte text included', async (t) => {
  const strings = [
    '',
    'card-7',
    '0a1b'.repeat(100),
    'say "hi"',
    'back\\slash',
    'tab\tnew\nline',
    '\u0000\u001f\u007f',
    'héllo',
    '日本',
    '😀',
    '\ud800 lone',
    '~ !#[]{}',
  ];
  for (const k of strings) {
    for (const v of strings) {
      t.equal(
        pairBytes([k, v]),
        Buffer.byteLength(JSON.stringify([k, v])) + 1,
        `${JSON.stringify(k)}, ${JSON.stringify(v)}`,
      );
    }
  }
});

t.test('small fences: every node gets the same bytes, the pairs inline in node order', async (t) => {
  const { x, sent } = exchange(['a', 'b', 'c']);
  x.fence('b', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [['kb', 'vb']] });
  x.fence('a', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [['ka', 'va']], more: true });
  x.fence('c', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [['kc', 'vc']] });
  t.equal(sent.length, 0, 'no answer before every node has fenced');
  x.fence('a', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 1, pairs: [['ka2', 'va2']] });
  t.same(
    sent.map((s) => s.node),
    ['a', 'b', 'c'],
  );
  t.ok(
    sent.every((s) => s.frame === sent[0]!.frame),
    'one encoded answer',
  );
  const answer = JSON.parse(sent[0]!.frame.toString()) as { chunks: number; pairs: PmiPairs };
  t.equal(answer.chunks, 0);
  t.same(answer.pairs, [
    ['ka', 'va'],
    ['ka2', 'va2'],
    ['kb', 'vb'],
    ['kc', 'vc'],
  ]);
});

t.test('a node without a rank of the job is not counted', async (t) => {
  const { x, sent } = exchange(['a', 'b']);
  x.fence('a', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [] });
  x.fence('z', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [] });
  t.equal(sent.length, 0);
  x.fence('b', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [] });
  t.same(
    sent.map((s) => s.node),
    ['a', 'b'],
  );
});

t.test('large fences: the answer gives a chunk count, and the chunks hold every pair in order', async (t) => {
  const nodes = Array.from({ length: 100 }, (_, i) => `n${i}`);
  const { x, sent } = exchange(nodes);
  const card = (r: number) => r.toString(16).padStart(8, '0').repeat(50);
  nodes.forEach((node, i) => {
    const pairs: PmiPairs = Array.from({ length: 8 }, (_, k) => [`card-${i * 8 + k}`, card(i * 8 + k)]);
    x.fence(node, { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs });
  });
  const answer = JSON.parse(sent[0]!.frame.toString()) as { chunks: number; pairs?: PmiPairs };
  const cardBytes = nodes.length * 8 * card(0).length;
  t.ok(cardBytes > 256 * 1024 && 256 * 1024 > INLINE_BYTES, 'more than one 256-KiB chunk of cards');
  t.ok(answer.chunks > 1, `${answer.chunks} chunks`);
  t.notOk(answer.pairs);
  sent.length = 0;
  for (let c = 0; c < answer.chunks; c++)
    x.fetch('n3', { type: 'pmi.fetch', id: `f${c}`, jobId: 'j1', epoch: 0, chunk: c });
  const pulled = sent.flatMap((s) => (JSON.parse(s.frame.toString()) as { pairs: PmiPairs }).pairs);
  t.equal(pulled.length, 800);
  t.ok(pulled.every(([k, v], i) => k === `card-${i}` && v === card(i)));
});

t.test('every frame the exchange sends is a valid pmi.fenced or pmi.chunk, escapes and all', async (t) => {
  const frames: Buffer[] = [];
  const check = (sent: Array<{ frame: Buffer }>) => {
    for (const { frame } of sent.splice(0)) frames.push(frame);
  };
  // an inline answer, with values JSON escapes
  const small = exchange(['a', 'b']);
  small.x.fence('a', {
    type: 'pmi.fence',
    jobId: 'j1',
    epoch: 0,
    part: 0,
    pairs: [
      ['q', 'say "hi" \\ \t'],
      ['u', 'héllo 😀'],
    ],
  });
  small.x.fence('b', { type: 'pmi.fence', jobId: 'j1', epoch: 0, part: 0, pairs: [] });
  check(small.sent);
  // a lazy answer, its chunks pulled with and without an id, and a chunk that is not there
  const nodes = Array.from({ length: 40 }, (_, i) => `n${i}`);
  const large = exchange(nodes);
  for (const node of nodes)
    large.x.fence(node, {
      type: 'pmi.fence',
      jobId: 'j1',
      epoch: 3,
      part: 0,
      pairs: [
        [`card-${node}`, 'f'.repeat(1000)],
        ['ctl', '\u0001'],
      ],
    });
  check(large.sent);
  large.x.fetch('n1', { type: 'pmi.fetch', id: 'pmi-1', jobId: 'j1', epoch: 3, chunk: 0 });
  large.x.fetch('n1', { type: 'pmi.fetch', jobId: 'j1', epoch: 3, chunk: 0 });
  large.x.fetch('n1', { type: 'pmi.fetch', id: 'pmi-2', jobId: 'j1', epoch: 3, chunk: 999 });
  large.x.fetch('n1', { type: 'pmi.fetch', id: 'pmi-3', jobId: 'j1', epoch: 4, chunk: 0 });
  check(large.sent);
  t.equal(frames.length, 2 + 40 + 4, 'two inline answers, forty lazy ones, four chunk answers');
  const types = new Set<string>();
  for (const frame of frames) {
    const decoded = decodeFrame(frame, ControllerMessages);
    t.ok(decoded.ok, decoded.ok ? `valid ${decoded.type}` : `${decoded.error}: ${frame.toString().slice(0, 120)}`);
    if (decoded.ok) types.add(decoded.type);
  }
  t.same([...types].sort(), ['pmi.chunk', 'pmi.fenced']);
  const missing = JSON.parse(frames[frames.length - 2]!.toString()) as { error?: string; pairs: PmiPairs; id?: string };
  t.match(
    missing,
    { id: 'pmi-2', pairs: [], error: 'no chunk 999 of fence 3 of job j1' },
    'a chunk that is not there is answered with why',
  );
});
