// The CLI's reader of the frames log stream, fed the bytes in every possible split:
// a socket may cut a record anywhere, in its header or its payload.
import t from 'tap';
import { readLogFrames, type LogFrame } from '#cli/client/log-frames';
import { LineLabeler } from '#cli/client/line-labeler';
import { CliError, ExitCode } from '#cli/exit-codes';

function record(rank: number, stream: string, offset: number, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`{"rank":${rank},"stream":"${stream}","offset":${offset},"bytes":${data.length}}\n`),
    data,
  ]);
}

const first = Buffer.from('line one\nline two\n');
const second = Buffer.from([0xff, 0x0a, 0x7b, 0x0a]); // not UTF-8, and a "{" line that is payload, not a header
const stream = Buffer.concat([
  record(0, 'stdout', 0, first),
  record(1, 'stderr', 40, second),
  record(1, 'stdout', 0, Buffer.alloc(0)),
  Buffer.from('{"end":{"state":"failed","reason":"rank 1 exited with code 3","exitCode":3}}\n'),
]);

async function* pieces(buf: Buffer, cuts: number[]): AsyncGenerator<Buffer> {
  let at = 0;
  for (const cut of [...cuts, buf.length]) {
    yield buf.subarray(at, cut);
    at = cut;
  }
}

async function collect(source: AsyncIterable<Buffer>): Promise<LogFrame[]> {
  const out: LogFrame[] = [];
  for await (const f of readLogFrames(source)) out.push(f);
  return out;
}

const want: LogFrame[] = [
  { kind: 'output', rank: 0, stream: 'stdout', offset: 0, data: first },
  { kind: 'output', rank: 1, stream: 'stderr', offset: 40, data: second },
  { kind: 'output', rank: 1, stream: 'stdout', offset: 0, data: Buffer.alloc(0) },
  { kind: 'end', state: 'failed', reason: 'rank 1 exited with code 3', exitCode: 3 },
];

t.test('every two-piece split of the stream gives the same records', async (t) => {
  let same = 0;
  for (let cut = 0; cut <= stream.length; cut++)
    if (JSON.stringify(await collect(pieces(stream, [cut]))) === JSON.stringify(want)) same++;
  t.equal(same, stream.length + 1);
});

t.test('one byte at a time', async (t) => {
  t.same(
    await collect(
      pieces(
        stream,
        Array.from({ length: stream.length - 1 }, (_, i) => i + 1),
      ),
    ),
    want,
  );
});

async function failure(source: AsyncIterable<Buffer>): Promise<CliError | null> {
  try {
    await collect(source);
    return null;
  } catch (err) {
    return err instanceof CliError ? err : null;
  }
}

t.test('a stream cut mid-record, or a bad header, is an error that says so', async (t) => {
  const cut = await failure(pieces(stream.subarray(0, 30), []));
  t.equal(cut?.exitCode, ExitCode.Unreachable, 'cut short: the controller went away (the CLI reconnects)');
  t.match(cut?.message, /mid-record/);
  for (const bad of [
    'not json\n',
    '{"rank":-1,"stream":"stdout","offset":0,"bytes":1}\nx',
    '{"rank":0,"stream":"stdin","offset":0,"bytes":0}\n',
    `${'x'.repeat(5000)}\n`,
  ]) {
    const err = await failure(pieces(Buffer.from(bad), []));
    t.equal(err?.exitCode, ExitCode.RemoteFailure, bad.slice(0, 40));
    t.match(err?.message, /malformed log stream/);
  }
});

t.test('the labeller puts the label after every newline byte and nowhere else, across chunks', async (t) => {
  const written: Buffer[] = [];
  const l = new LineLabeler('3@n1: ', (b) => (written.push(b), true));
  l.push(Buffer.from('par'));
  l.push(Buffer.from([0x74, 0x0a, 0xc3])); // "t\n" then the first byte of "é"
  l.push(Buffer.from([0xa9, 0x0a, 0x0a]));
  l.push(Buffer.from('end'));
  l.flush();
  t.equal(Buffer.concat(written).toString('utf8'), '3@n1: part\n3@n1: é\n3@n1: \n3@n1: end\n');
  const raw: Buffer[] = [];
  const r = new LineLabeler('', (b) => (raw.push(b), true));
  r.push(Buffer.from([0xff, 0x0a, 0x61]));
  r.flush();
  t.same(
    Buffer.concat(raw),
    Buffer.from([0xff, 0x0a, 0x61, 0x0a]),
    'no label: the bytes as they came, the last line ended',
  );
});

t.test('with times: each line is stamped with the time of its first byte, before its label', async (t) => {
  const written: Buffer[] = [];
  const l = new LineLabeler('0: ', (b) => (written.push(b), true));
  l.push(Buffer.from('a'), 'T1');
  l.push(Buffer.from('b\nc\nd'), 'T2'); // "ab" began at T1; "c" and "d" at T2
  l.push(Buffer.from('\n'), 'T3');
  l.push(Buffer.from('e'), 'T4');
  l.flush();
  t.equal(Buffer.concat(written).toString('utf8'), 'T1 0: ab\nT2 0: c\nT2 0: d\nT4 0: e\n');
  const bare: Buffer[] = [];
  const r = new LineLabeler('', (b) => (bare.push(b), true));
  r.push(Buffer.from('x\ny\n'), 'T5');
  t.equal(Buffer.concat(bare).toString('utf8'), 'T5 x\nT5 y\n', 'stamped without a label');
});

t.test('status lines and times in headers: warnings, and the time of a chunk asked in time order', async (t) => {
  const data = Buffer.from('hi\n');
  const frames = await collect(
    pieces(
      Buffer.concat([
        Buffer.from('{"warning":{"node":"vm","ranks":[0,1],"message":"RLIMIT_MEMLOCK stays 8388608"}}\n'),
        Buffer.from(`{"rank":0,"stream":"stdout","offset":0,"bytes":3,"time":"2026-11-25T20:03:13.613Z"}\n`),
        data,
      ]),
      [],
    ),
  );
  t.same(frames, [
    { kind: 'warning', node: 'vm', ranks: [0, 1], message: 'RLIMIT_MEMLOCK stays 8388608' },
    { kind: 'output', rank: 0, stream: 'stdout', offset: 0, time: '2026-11-25T20:03:13.613Z', data },
  ]);
  await t.rejects(
    collect(pieces(Buffer.from('{"rank":0,"stream":"stdout","offset":0,"bytes":0,"time":5}\n'), [])),
    /malformed log stream: an unexpected header/,
  );
});
