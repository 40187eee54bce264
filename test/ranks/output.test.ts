// Output through the spool files and the offset reader: complete, in order, resumable,
// with the last partial line delivered at exit.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RankOutput, type OutputChunk } from '#agent/ranks/index';
import { launch, runner, until } from './helpers.js';

const LINES = 200_000;

t.test(`2 ranks × ${LINES} lines, followed live: every line once, in order`, async (t) => {
  const r = runner(t);
  const out = new RankOutput(r.spool);
  const program = (rank: number): string[] => [
    'awk',
    `BEGIN { for (i = 1; i <= ${LINES}; i++) print "rank ${rank} line " i }`,
  ];
  // followers start before the ranks: they must cope with files that do not exist yet
  const follow = async (rank: number): Promise<{ text: string; chunks: OutputChunk[] }> => {
    const chunks: OutputChunk[] = [];
    for await (const c of out.follow('lines', rank, 'stdout', 0, { wholeLines: true, maxBytes: 64 * 1024 }))
      chunks.push(c);
    return { text: Buffer.concat(chunks.map((c) => c.data)).toString('utf8'), chunks };
  };
  const following = [0, 1].map(follow);
  await Promise.all([0, 1].map((rank) => r.start(launch('lines', rank, program(rank)))));
  const results = await Promise.all(following);
  for (const [rank, { text, chunks }] of results.entries()) {
    const lines = text.split('\n');
    t.equal(lines.pop(), '', `rank ${rank} output ends with a newline`);
    t.equal(lines.length, LINES, `rank ${rank}: ${LINES} lines`);
    const firstBad = lines.findIndex((l, i) => l !== `rank ${rank} line ${i + 1}`);
    t.equal(firstBad, -1, `rank ${rank}: every line once and in order`);
    let offset = 0;
    const contiguous = chunks.every((c) => {
      const ok = c.offset === offset;
      offset = c.nextOffset;
      return ok;
    });
    t.ok(contiguous, `rank ${rank}: chunk offsets are contiguous`);
    t.ok(
      chunks.slice(0, -1).every((c) => c.data[c.data.length - 1] === 0x0a),
      'every chunk but the last ends a line',
    );
    t.equal(chunks.at(-1)?.final, true, 'the last chunk is final');
    t.equal(offset, fs.statSync(r.spool.streamPath('lines', rank, 'stdout')).size, 'up to the end of the file');
  }
});

t.test('a reader resumes from any offset', async (t) => {
  const r = runner(t);
  const out = new RankOutput(r.spool);
  await r.start(launch('resume', 0, ['seq', '1', '5000']));
  await r.exited('resume', 0);
  const whole = fs.readFileSync(r.spool.streamPath('resume', 0, 'stdout'));
  for (const from of [0, 1, 777, whole.length - 1, whole.length]) {
    const parts: Buffer[] = [];
    for await (const c of out.follow('resume', 0, 'stdout', from, { maxBytes: 1000 })) parts.push(c.data);
    t.same(Buffer.concat(parts), whole.subarray(from), `from ${from}`);
  }
  await t.rejects(out.read('resume', 0, 'stdout', whole.length + 1), { code: 'RANKD_RANK_BAD_OFFSET' }, 'past the end');
});

t.test('a partial last line is held back while the rank runs and delivered at exit', async (t) => {
  const r = runner(t);
  const out = new RankOutput(r.spool);
  const go = path.join(r.spool.root, 'go');
  await r.start(
    launch('partial', 0, [
      'sh',
      '-c',
      `printf 'head\\npart'; while [ ! -e ${go} ]; do sleep 0.01; done; printf 'ial\\nno newline'`,
    ]),
  );
  await until(() => out.size('partial', 0, 'stdout') === 9, 'the first bytes');
  const early = await out.read('partial', 0, 'stdout', 0, 1024, { wholeLines: true });
  t.equal(early.data.toString(), 'head\n', 'only whole lines while running');
  t.equal(early.final, false);
  t.equal(early.size, 9);
  const raw = await out.read('partial', 0, 'stdout', 0, 1024);
  t.equal(raw.data.toString(), 'head\npart', 'without wholeLines the bytes come as they are');
  fs.writeFileSync(go, '');
  const exit = await r.exited('partial', 0);
  t.equal(exit.code, 0);
  const rest = await out.read('partial', 0, 'stdout', early.nextOffset, 1024, { wholeLines: true });
  t.equal(rest.data.toString(), 'partial\nno newline', 'the last partial line comes out at exit');
  t.equal(rest.final, true);
});

t.test('stdout and stderr are separate streams; a long line is not held back forever', async (t) => {
  const r = runner(t);
  const out = new RankOutput(r.spool);
  await r.start(
    launch('streams', 0, ['sh', '-c', 'echo out; echo err >&2; head -c 5000 /dev/zero | tr "\\0" x; echo']),
  );
  await r.exited('streams', 0);
  t.equal((await out.read('streams', 0, 'stderr', 0)).data.toString(), 'err\n');
  const first = await out.read('streams', 0, 'stdout', 4, 1000, { wholeLines: true });
  t.equal(first.data.length, 1000, 'a line longer than maxBytes comes in maxBytes pieces');
  t.equal(first.final, false);
  await t.rejects(out.read('streams', 0, 'stdin' as 'stdout', 0), { code: 'RANKD_RANK_BAD_OFFSET' });
});

t.test('waitForData wakes on new output and on the end, and can be aborted', async (t) => {
  const r = runner(t);
  const out = new RankOutput(r.spool);
  const go = path.join(r.spool.root, 'go');
  await r.start(launch('wait', 0, ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.01; done; echo one`]));
  const ac = new AbortController();
  const aborted = out.waitForData('wait', 0, 'stderr', 0, ac.signal);
  ac.abort();
  t.equal(await aborted, 'aborted');
  const data = out.waitForData('wait', 0, 'stdout', 0);
  const end = out.waitForData('wait', 0, 'stderr', 0);
  fs.writeFileSync(go, '');
  t.equal(await data, 'data');
  t.equal(await end, 'ended', 'a stream that stays empty ends with the rank');
});
