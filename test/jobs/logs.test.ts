// Every line of every rank is stored once and in order, followable live, resumable
// from an offset or a Last-Event-ID — and a controller killed mid-job loses nothing.
import t from 'tap';
import { runCli, runCliRaw, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { readLogFrames } from '#cli/client/log-frames';
import { localCluster } from '../helpers/cluster.js';
import { httpsFetch } from '../helpers/tls.js';

interface JobLike {
  id: string;
  state: string;
  exitCode: number | null;
  endedAt: string | null;
  ranks: Array<{ rank: number; outputBytes: { stdout: number; stderr: number } }>;
}

function expectedLines(n: number): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${i}\n`;
  return s;
}

t.test('2 ranks × 200,000 lines: every line once, in order, per rank', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '-q', '--', 'seq', '1', '200000'], env, 120_000);
  t.equal(r.code, 0, r.stderr);
  // what the user saw, per rank
  for (const rank of [0, 1]) {
    const mine = r.stdout
      .split('\n')
      .filter((l) => l.startsWith(`${rank}: `))
      .map((l) => l.slice(3));
    t.equal(mine.length, 200_000, `rank ${rank}: 200,000 lines on the terminal`);
    t.ok(
      mine.every((l, i) => l === String(i + 1)),
      `rank ${rank}: in order, none twice`,
    );
  }
  // what was stored
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const id = list.jobs[0]!.id;
  const want = expectedLines(200_000);
  for (const rank of [0, 1]) {
    const stored = await controller.api<string>(`/v1/jobs/${id}/logs?rank=${rank}&stream=stdout&format=text`);
    t.equal(stored.status, 200);
    t.ok(stored.body === want, `rank ${rank}: the stored log is exactly the output (${stored.body.length} bytes)`);
  }
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${id}`);
  t.same(
    job.ranks.map((x) => x.outputBytes.stdout),
    [want.length, want.length],
    'the log index agrees',
  );
});

t.test('logs: offset, rank and stream filters, NDJSON', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const r = await runCli(
    ['run', '-n', '2', '-q', '--', 'sh', '-c', 'echo "out of $RANK"; echo "err of $RANK" >&2'],
    env,
  );
  t.equal(r.code, 0);
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const id = list.jobs[0]!.id;
  const fromOffset = await controller.api<string>(`/v1/jobs/${id}/logs?rank=1&stream=stdout&offset=4&format=text`);
  t.equal(fromOffset.body, 'of 1\n');
  const nd = await controller.api<string>(`/v1/jobs/${id}/logs?format=ndjson&rank=0`);
  const records = nd.body
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { rank: number; stream: string; offset: number; data: string; end?: unknown });
  t.same(
    records.filter((x) => !x.end).map((x) => [x.rank, x.stream, x.offset, x.data]),
    [
      [0, 'stdout', 0, 'out of 0\n'],
      [0, 'stderr', 0, 'err of 0\n'],
    ],
  );
  t.ok(records.at(-1)!.end, 'an ended job closes the NDJSON stream with its end record');
  const badRank = await controller.api<{ code: string; message: string }>(`/v1/jobs/${id}/logs?rank=9`);
  t.equal(badRank.status, 400);
  t.match(badRank.body.message, /no rank 9/);

  const cli = await runCli(['logs', id, '--rank', '1', '--stream', 'err'], env);
  t.equal(cli.stdout + cli.stderr, '1: err of 1\n');
});

t.test('a live follower resumes from its Last-Event-ID without gaps or repeats', async (t) => {
  const { controller } = await localCluster(t, ['solo']);
  const { body: job } = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sh', '-c', 'for i in $(seq 1 60); do echo "line $i"; sleep 0.02; done'],
      placement: { ntasks: 1 },
    },
  });
  const url = `${controller.url}/v1/jobs/${job.id}/logs?follow=true&format=sse&stream=stdout`;
  const headers = { authorization: `Bearer ${controller.apiToken}` };
  let text = '';
  let lastId = '';
  // first connection: read a few events, then drop it
  {
    const ac = new AbortController();
    const res = await httpsFetch(url, { ca: controller.ca, headers, signal: ac.signal });
    const reader = res.body.getReader();
    let buf = '';
    while (text.split('\n').length < 10) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += Buffer.from(value).toString();
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const id = /^id: (.*)$/m.exec(ev)?.[1];
        const data = /^data: (.*)$/m.exec(ev)?.[1];
        if (id && data && /^event: output$/m.test(ev)) {
          lastId = id;
          text += (JSON.parse(data) as { data: string }).data;
        }
      }
    }
    ac.abort();
  }
  t.ok(lastId, 'events carry ids');
  // second connection resumes
  const res = await httpsFetch(url, { ca: controller.ca, headers: { ...headers, 'last-event-id': lastId } });
  const body = await res.text();
  let ended = false;
  for (const ev of body.split('\n\n')) {
    if (/^event: end$/m.test(ev)) ended = true;
    const data = /^data: (.*)$/m.exec(ev)?.[1];
    if (data && /^event: output$/m.test(ev)) text += (JSON.parse(data) as { data: string }).data;
  }
  t.ok(ended, 'the stream ends with the job');
  t.equal(text, Array.from({ length: 60 }, (_, i) => `line ${i + 1}\n`).join(''));
});

t.test(
  'output that is not UTF-8 arrives byte for byte: in rankd run, labelled or raw, and in the frames stream',
  async (t) => {
    const { env, controller } = await localCluster(t, ['solo']);
    // a byte that is never UTF-8, a character split across two writes, a last line without newline
    const script = 'printf "\\377\\376 bin\\n"; printf "h\\303"; sleep 0.2; printf "\\251llo\\n"; printf "tail"';
    const want = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(' bin\nh\u00e9llo\ntail', 'utf8')]);
    const raw = await runCliRaw(['run', '-n', '1', '-q', '--no-label', '--', 'sh', '-c', script], env, 60_000);
    t.equal(raw.code, 0, raw.stderr.toString());
    t.same(
      raw.stdout,
      Buffer.concat([want, Buffer.from('\n')]),
      'raw: the bytes as written (the unfinished last line ends at exit)',
    );
    const labelled = await runCliRaw(['run', '-n', '1', '-q', '--', 'sh', '-c', script], env, 60_000);
    t.equal(labelled.code, 0);
    const lines = Buffer.concat([want, Buffer.from('\n')])
      .toString('latin1')
      .split('\n')
      .slice(0, -1);
    t.equal(
      labelled.stdout.toString('latin1'),
      lines.map((l) => `0: ${l}\n`).join(''),
      'labelled: "0: " before every line, the bytes between untouched',
    );

    const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
    const id = list.jobs.find(() => true)!.id;
    const res = await httpsFetch(`${controller.url}/v1/jobs/${id}/logs?format=frames`, {
      ca: controller.ca,
      headers: { authorization: `Bearer ${controller.apiToken}` },
    });
    t.equal(res.headers.get('content-type'), 'application/vnd.rankd.log-frames');
    const out: Buffer[] = [];
    let end: { state: string } | null = null;
    for await (const frame of readLogFrames(res.body as unknown as AsyncIterable<Buffer>)) {
      if (frame.kind === 'end') end = frame;
      else if (frame.kind === 'output' && frame.stream === 'stdout') {
        t.equal(frame.offset, Buffer.concat(out).length, 'records are contiguous');
        out.push(frame.data);
      }
    }
    t.same(Buffer.concat(out), want, 'the stored bytes, exactly');
    t.equal(end?.state, 'succeeded', "the stream ends with the job's end record");
  },
);

t.test(
  'the controller is SIGKILLed mid-job and restarted: the job completes and every line is stored once',
  async (t) => {
    const first = await startController({ heartbeatMs: 500 });
    const port = Number(new URL(first.url).port);
    const agent = startAgent(first, { name: 'steady' });
    t.teardown(() => agent.stop());
    await waitForNode(first, 'steady', 'ready');
    const lines = 3000;
    const { body: job } = await first.api<JobLike>('/v1/jobs', {
      method: 'POST',
      body: {
        command: [
          'sh',
          '-c',
          `for i in $(seq 1 ${lines}); do echo $i; [ $((i % 100)) = 0 ] && sleep 0.1; done; exit 0`,
        ],
        placement: { ntasks: 2 },
      },
    });
    await waitUntil(
      'output flowing',
      20_000,
      async () => ((await first.api<JobLike>(`/v1/jobs/${job.id}`)).body.ranks[0]?.outputBytes.stdout ?? 0) > 100,
    );
    await first.stop('SIGKILL');
    const second = await startController({ dataDir: first.dataDir, port, heartbeatMs: 500 });
    t.teardown(() => second.stop());
    const ended = await waitUntil('job ended', 60_000, async () => {
      const { body } = await second.api<JobLike>(`/v1/jobs/${job.id}`);
      return body.endedAt ? body : undefined;
    });
    t.equal(ended.state, 'succeeded');
    t.equal(ended.exitCode, 0);
    const want = expectedLines(lines);
    for (const rank of [0, 1]) {
      const stored = await second.api<string>(`/v1/jobs/${job.id}/logs?rank=${rank}&stream=stdout&format=text`);
      t.ok(stored.body === want, `rank ${rank}: every line once and in order`);
    }
    const node = await second.api<{ state: string }>('/v1/nodes/steady');
    t.equal(node.body.state, 'ready', 'the node was never declared lost');
  },
);
