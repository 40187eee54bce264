// What people see of a job that restarts (rankd run --max-restarts), end to end with the built
// CLI, a real controller and a real agent: `rankd run` following across attempts (the restart
// line, the new rank map, the last attempt's exit code), `rankd logs --attempt`, `rankd job`'s
// attempts, `rankd jobs`' RESTARTS, Ctrl-C during a restart delay, and bad --max-restarts.
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import t from 'tap';
import { CLI, runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

interface Attempt {
  attempt: number;
  state: string;
  endedAt: string | null;
  nodes: string[];
  firstFailure: { rank: number; exitCode: number | null } | null;
}
interface JobLike {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  attempt: number;
  attempts: Attempt[];
}

/** Rank 1 fails its first attempt with a last stderr line; every rank of later attempts succeeds. */
const FLAKY =
  'echo "hello $RANK attempt $RANKD_ATTEMPT"; ' +
  'if [ "$RANKD_ATTEMPT" = 0 ] && [ "$RANK" = 1 ]; then echo "warming up" >&2; echo "CUDA error boom" >&2; exit 3; fi';

/** The rows of a table the CLI printed, by header. */
function table(text: string): Array<Record<string, string>> {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0]!;
  const starts = [...header.matchAll(/\S+( \S+)*/g)].map((m) => ({ name: m[0], at: m.index }));
  return lines
    .slice(1)
    .map((line) =>
      Object.fromEntries(
        starts.map((s, i) => [s.name, line.slice(s.at, i + 1 < starts.length ? starts[i + 1]!.at : undefined).trim()]),
      ),
    );
}

function historyOf(dataDir: string, id: string): Array<{ kind: string; data: Record<string, unknown> }> {
  const db = new Database(`${dataDir}/rankd.db`, { readonly: true });
  try {
    const rows = db.prepare('SELECT kind, data FROM events WHERE subject = ? ORDER BY id').all(id) as Array<{
      kind: string;
      data: string;
    }>;
    return rows.map((r) => ({ kind: r.kind, data: JSON.parse(r.data) as Record<string, unknown> }));
  } finally {
    db.close();
  }
}

t.test('a flaky job: rankd run follows it into its next attempt, and logs, job and jobs show both', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const run = await runCli(['run', '-n', '2', '--max-restarts', '2', '--', 'sh', '-c', FLAKY], env, 60_000);
  t.equal(run.code, 0, `the last attempt succeeded, so does rankd run: ${run.stderr}`);
  t.match(
    run.stderr,
    'rankd: attempt 1/3 failed: rank 1 on node solo exited 3 (last line: "CUDA error boom"); restarting in 0 s\n',
    'the restart line: attempt out of 3, the failure, its last line, the delay (no node excluded for an exit code)',
  );
  t.equal(run.stderr.match(/rankd: attempt \d/g)?.length, 1, 'one restart line');
  const id = /rankd: job (\S+)\n/.exec(run.stderr)![1]!;
  t.match(run.stderr, `rankd: job ${id} attempt 2/3 started\n`, 'the next attempt is announced');
  t.equal(
    run.stderr.match(new RegExp(`rankd: job ${id}\\n\\s+ID \\| +Node name`, 'g'))?.length,
    2,
    'the rank map is printed at the start and again for the new attempt',
  );
  t.ok(
    run.stderr.indexOf('restarting in 0 s') < run.stderr.lastIndexOf('Node name'),
    'the new map comes after the restart line',
  );
  for (const rank of [0, 1])
    t.match(run.stdout, `${rank}: hello ${rank} attempt 1\n`, `rank ${rank} of attempt 2 streamed`);
  t.match(run.stderr, '1: CUDA error boom\n', "attempt 1's stderr was streamed, labelled");

  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${id}`);
  t.same(
    job.attempts.map((a) => [a.attempt, a.state]),
    [
      [0, 'failed'],
      [1, 'succeeded'],
    ],
  );

  t.test('rankd logs: every attempt under a heading; --attempt K one of them; a bad K is refused', async (t) => {
    const all = await runCli(['logs', id, '--stream', 'out'], env);
    t.equal(all.code, 0, all.stderr);
    const first =
      '==> attempt 1/3 (nodes solo; failed: rank 1 on node solo exited 3 (last line: "CUDA error boom")) <==\n';
    t.ok(all.stdout.startsWith(first), `the first heading opens stdout: ${all.stdout}`);
    t.match(all.stdout, '\n\n==> attempt 2/3 (nodes solo; succeeded) <==\n', 'a blank line before the next, as tail');
    const second = all.stdout.slice(all.stdout.indexOf('==> attempt 2/3'));
    t.match(second, '0: hello 0 attempt 1\n');
    t.match(second, '1: hello 1 attempt 1\n');
    t.notMatch(second, 'attempt 0', "attempt 2's section holds only its own output");

    const quiet = await runCli(['logs', id, '-q', '--stream', 'out'], env);
    t.notMatch(quiet.stdout, '==>', '-q: no headings');

    const two = await runCli(['logs', id, '--attempt', '2'], env);
    t.equal(two.code, 0, two.stderr);
    t.notMatch(two.stdout, '==>', 'one attempt asked for: no heading');
    t.same(two.stdout.split('\n').filter(Boolean).sort(), ['0: hello 0 attempt 1', '1: hello 1 attempt 1']);
    t.equal(two.stderr, '', 'attempt 2 wrote nothing to stderr');

    const failed = await runCli(['logs', id, '--attempt', '1', '--rank', '1', '--stream', 'err'], env);
    t.equal(
      failed.stderr,
      '1: warming up\n1: CUDA error boom\n',
      "attempt 1's rank 1 stderr, from offset 0 of its files",
    );

    for (const bad of ['3', '0', 'x', '-1']) {
      const r = await runCli(['logs', id, '--attempt', bad], env);
      t.equal(r.code, 64, `--attempt ${bad}: exit 64`);
      t.match(r.stderr, bad === '3' ? 'job ' + id + ' has attempts 1 to 2 so far' : 'counted from 1', r.stderr);
      t.equal(r.stdout, '', 'and no output');
    }
  });

  t.test('the REST stream: attempt lines in ndjson, headings in text, attempt=K alone', async (t) => {
    const nd = await controller.api<string>(`/v1/jobs/${id}/logs?format=ndjson&stream=stdout&rank=0`);
    const lines = nd.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    t.same(
      lines.map((l) => Object.keys(l).find((k) => ['attempt', 'end'].includes(k)) ?? `rank ${String(l.rank)}`),
      ['attempt', 'rank 0', 'attempt', 'rank 0', 'end'],
    );
    t.same(
      lines.filter((l) => 'attempt' in l).map((l) => (l.attempt as { attempt: number }).attempt),
      [0, 1],
    );
    t.same(
      lines.filter((l) => 'rank' in l).map((l) => [l.offset, l.data]),
      [
        [0, 'hello 0 attempt 0\n'],
        [0, 'hello 0 attempt 1\n'],
      ],
      "each attempt's records start again at offset 0",
    );
    const text = await controller.api<string>(`/v1/jobs/${id}/logs?format=text&stream=stdout&rank=1`);
    t.match(
      text.body,
      /^==> attempt 0 \(nodes solo; started \S+\) <==\nhello 1 attempt 0\n==> attempt 1 \(nodes solo;/,
    );
    const one = await controller.api<string>(`/v1/jobs/${id}/logs?format=text&stream=stdout&rank=1&attempt=1`);
    t.equal(one.body, 'hello 1 attempt 1\n', 'attempt=1: its bytes alone');
    const none = await controller.api<{ code: string; message: string }>(`/v1/jobs/${id}/logs?attempt=2`);
    t.equal(none.status, 400);
    t.match(none.body, { code: 'RANKD_INVALID_REQUEST', message: /has no attempt 2: its attempts are 0 to 1/ });
  });

  t.test('rankd job lists the attempts; rankd jobs counts the restarts', async (t) => {
    const r = await runCli(['job', id], env);
    t.equal(r.code, 0, r.stderr);
    // the header line (the command line above it names RANKD_ATTEMPT)
    const rows = table(r.stdout.slice(r.stdout.indexOf('\nATTEMPT ') + 1, r.stdout.indexOf('ranks of attempt')));
    t.same(
      rows.map((x) => [x['ATTEMPT'], x['STATE'], x['NODES'], x['EXIT'], x['FIRST FAILURE'], x['EXCLUDED']]),
      [
        ['1/3', 'failed', 'solo', '3', 'rank 1 on node solo exited 3 (last line: "CUDA error boom")', '-'],
        ['2/3', 'succeeded', 'solo', '0', '-', '-'],
      ],
    );
    t.match(r.stdout, 'ranks of attempt 2/3:\n', 'the rank table is the last attempt’s');
    const jobs = table((await runCli(['jobs'], env)).stdout);
    t.equal(jobs.find((j) => j['ID'] === id)!['RESTARTS'], '1/2', 'sacct-like Restarts, out of the budget');
  });
});

t.test('a job that always fails: its last attempt’s exit code and reason, a restart line per restart', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const script = 'echo "fatal on attempt $RANKD_ATTEMPT" >&2; exit 7';
  const run = await runCli(['run', '-n', '1', '-q', '--max-restarts', '1', '--', 'sh', '-c', script], env, 60_000);
  t.equal(run.code, 7, 'the exit code of the last attempt');
  t.match(
    run.stderr,
    'rankd: attempt 1/2 failed: rank 0 on node solo exited 7 (last line: "fatal on attempt 0"); restarting in 0 s\n',
  );
  t.equal(run.stderr.match(/restarting/g)?.length, 1, 'the budget is spent: no second restart line');
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
  t.equal(job.state, 'failed');
  t.equal(job.attempts.length, 2);
  t.match(run.stderr, `rankd: job ${job.id} failed: ${job.reason}\n`, "the job's reason is said last");
  t.match(job.reason, /rank 0 on solo exited with code 7/, 'the reason is the last attempt’s first failure');
  t.match(run.stderr, '0: fatal on attempt 1\n', 'the last attempt was streamed');
});

t.test('Ctrl-C during --restart-delay cancels the job, and no further attempt starts', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const child = spawn(
    process.execPath,
    [CLI, 'run', '-n', '1', '--max-restarts', '2', '--restart-delay', '30', '--', 'sh', '-c', 'exit 5'],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  await waitUntil('the restart line', 30_000, () => err.includes('restarting in 30 s'));
  const id = /rankd: job (\S+)\n/.exec(err)![1]!;
  await waitUntil('the job queued for its next attempt', 10_000, async () => {
    const { body } = await controller.api<JobLike>(`/v1/jobs/${id}`);
    return body.state === 'queued' && body.attempt === 1;
  });
  const queue = table((await runCli(['queue'], env)).stdout);
  const row = queue.find((r) => r['ID'] === id)!;
  t.match(
    [row['STATE'], row['RESTARTS'], row['REASON']],
    ['queued', '1/2', /^restart 1\/2: next attempt at \S+ \(--restart-delay\)$/],
    'rankd queue shows the restarting job, its restarts and what it waits for',
  );
  child.kill('SIGINT');
  t.equal(await exited, 130, 'rankd run ends as cancelled');
  t.match(err, `rankd: job ${id} cancelled: `);
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${id}`);
  t.equal(job.state, 'cancelled');
  t.match(job.reason, /while waiting for restart 1\/2/);
  t.same(
    job.attempts.map((a) => a.attempt),
    [0],
    'only the first attempt ever started',
  );
  const history = historyOf(controller.dataDir, id);
  t.equal(history.filter((e) => e.kind === 'job.allocated').length, 1, 'the history allocated it once');
  t.equal(history.at(-1)?.kind, 'job.state', 'it ended in the queue…');
  t.match(history.at(-1)?.data, { from: 'queued', to: 'cancelled' }, '…from queued to cancelled');
});

t.test('--max-restarts negative or not a number: exit 64, nothing submitted', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  for (const bad of ['-1', 'abc', '1.5', '']) {
    const r = await runCli(['run', '-n', '1', '--max-restarts', bad, '--', 'true'], env);
    t.equal(r.code, 64, `--max-restarts "${bad}": ${r.stderr}`);
    t.match(r.stderr, /--max-restarts/, 'the error names the flag');
  }
  const { body } = await controller.api<{ jobs: unknown[] }>('/v1/jobs');
  t.same(body.jobs, [], 'no job was submitted');
});

t.test('a rank killed by SIGSEGV: its node is left out, and the restart line says so', async (t) => {
  const { env, controller } = await localCluster(t, ['a', 'b']);
  const script = 'if [ "$RANKD_ATTEMPT" = 0 ]; then kill -SEGV $$; fi; echo "survived on attempt $RANKD_ATTEMPT"';
  const run = await runCli(['run', '-n', '1', '-q', '--max-restarts', '1', '--', 'sh', '-c', script], env, 60_000);
  t.equal(run.code, 0, run.stderr);
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
  const [first, second] = job.attempts.map((a) => a.nodes[0]!);
  t.not(second, first, 'the next attempt ran on the other node');
  t.match(
    run.stderr,
    `rankd: attempt 1/2 failed: rank 0 on node ${first} was killed by SIGSEGV; restarting without node ${first} in 0 s\n`,
  );
  t.match(run.stdout, '0: survived on attempt 1\n');
  const shown = await runCli(['job', job.id], env);
  t.match(shown.stdout, `excluded from its next attempts: ${first}\n`);
});

t.test('rankd logs -f follows a job into its next attempt', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const { body: job } = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sh', '-c', 'echo "attempt $RANKD_ATTEMPT"; [ "$RANKD_ATTEMPT" = 1 ] || exit 2'],
      placement: { ntasks: 1 },
      maxRestarts: 1,
      restartDelay: 1,
    },
  });
  const r = await runCli(['logs', job.id, '-f'], env, 60_000);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^rankd: attempt 1\/2 failed: rank 0 on node solo exited 2; restarting in 1 s\n/m);
  // attempt 1's heading only when its restart had already started when rankd logs asked
  t.match(
    r.stdout,
    /^(==> attempt 1\/2 [^\n]+\n)?0: attempt 0\n\n?==> attempt 2\/2 \(nodes solo; [^)]+\) <==\n0: attempt 1\n$/,
  );
});

t.test('rankd run resumes in the attempt it stood in when the controller restarts mid-attempt', async (t) => {
  const first = await startController({ heartbeatMs: 500 });
  const port = Number(new URL(first.url).port);
  let current = first;
  t.teardown(() => current.stop());
  const agent = startAgent(first, { name: 'steady' });
  t.teardown(() => agent.stop());
  await waitForNode(first, 'steady', 'ready');
  const env = { ...first.clientEnv, RANKD_HOME: first.dataDir };
  const script = '[ "$RANKD_ATTEMPT" = 0 ] && exit 3; for i in $(seq 1 40); do echo "line $i"; sleep 0.1; done';
  const child = spawn(process.execPath, [CLI, 'run', '-n', '1', '--max-restarts', '1', '--', 'sh', '-c', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  await waitUntil('attempt 2 streaming', 30_000, () => out.includes('0: line 5\n'));
  await first.stop('SIGKILL');
  current = await startController({ dataDir: first.dataDir, port, heartbeatMs: 500 });
  t.equal(await exited, 0, err);
  t.equal(
    out,
    Array.from({ length: 40 }, (_, i) => `0: line ${i + 1}\n`).join(''),
    'every line of attempt 2 once, in order, across the reconnect',
  );
  t.equal(err.match(/rankd: attempt 1\/2 failed/g)?.length, 1, 'the restart line is not said again');
  t.equal(err.match(/ Node name/g)?.length, 2, 'nor is the rank map: once per attempt');
});
