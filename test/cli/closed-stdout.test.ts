// `rankd … | head -1`: when stdout's reader goes away every command ends quietly (no EPIPE
// stack trace) with 141, what a shell reports for a pipeline member killed by SIGPIPE; `rankd
// run` first cancels its job, as Ctrl-C does, and waits for its ranks to end.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CLI, runCli } from '../helpers/daemons.js';
import { groupMembers, localCluster, processAlive } from '../helpers/cluster.js';

const SIGPIPE_STATUS = 141;

interface JobLike {
  id: string;
  name: string | null;
  state: string;
  endedAt: string | null;
  ranks: Array<{ rank: number; pid: number | null; state: string; signal: string | null }>;
}

interface Piped {
  /** rankd's own exit status. */
  code: number | null;
  /** What the reader got. */
  stdout: string;
  stderr: string;
}

/**
 * `rankd ARGS | head -1` in bash, with rankd's own status from PIPESTATUS; rankd's stderr
 * goes to $RANKD_TEST_ERR, or with `both` into the same pipe (`2>&1 | head -1`).
 */
function pipeToHead(args: string[], env: NodeJS.ProcessEnv, both = false, timeoutMs = 60_000): Promise<Piped> {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const stderr = both ? '2>&1' : '2>"$RANKD_TEST_ERR"';
  return capture(
    spawn('bash', ['-c', `${quoted} ${stderr} | head -1; echo "status=\${PIPESTATUS[0]}" >&2`], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    timeoutMs,
    true,
  );
}

/**
 * rankd with a stdout whose reader is closed before rankd writes anything. A short answer
 * (a jobs table, the facts summary) fits in a pipe's buffer, so `| head -1` may well read it
 * before rankd ends, and nothing would be tested; this makes its first write the one that fails.
 */
function closedStdout(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<Piped> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.destroy();
  return capture(child, timeoutMs, false);
}

function capture(child: ReturnType<typeof spawn>, timeoutMs: number, statusOnStderr: boolean): Promise<Piped> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (!statusOnStderr) return resolve({ code, stdout, stderr });
      const m = /status=(\d+)\n$/.exec(stderr);
      resolve({ code: m ? Number(m[1]) : null, stdout, stderr: stderr.replace(/status=\d+\n$/, '') });
    });
  });
}

t.test('a closed stdout ends every command quietly with 141', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const errFile = (name: string) => `${controller.dataDir}/${name}.stderr`;
  const readErr = (name: string) => readFileSync(errFile(name), 'utf8');

  // a job with far more output than a pipe holds, so that `| head -1` closes the pipe on a writer
  const many = await runCli(['run', '-q', '-n', '1', '--name', 'many-lines', '--', 'seq', '1', '200000'], env, 60_000);
  t.equal(many.code, 0, many.stderr);
  const { body: list } = await controller.api<{ jobs: JobLike[] }>('/v1/jobs');
  const manyId = list.jobs.find((j) => j.name === 'many-lines')!.id;

  await t.test('rankd logs ID | head -1', async (t) => {
    const r = await pipeToHead(['logs', manyId], { ...env, RANKD_TEST_ERR: errFile('logs') });
    t.equal(r.stdout, '0: 1\n', 'head got the first line');
    t.equal(r.code, SIGPIPE_STATUS);
    t.equal(readErr('logs'), '', 'nothing on stderr: no EPIPE, no stack trace');
  });

  for (const [what, args] of [
    ['rankd logs ID', ['logs', manyId]],
    ['rankd jobs', ['jobs']],
    ['rankd facts', ['facts']],
  ] as const) {
    await t.test(`${what} with its reader gone`, async (t) => {
      const r = await closedStdout([...args], env);
      t.equal(r.code, SIGPIPE_STATUS);
      t.equal(r.stderr, '', 'nothing on stderr: no EPIPE, no stack trace');
    });
  }

  await t.test('rankd run … | head -1 cancels the job and waits for its ranks', async (t) => {
    const r = await pipeToHead(
      [
        'run',
        '-q',
        '-n',
        '2',
        '--grace',
        '2',
        '--name',
        'endless',
        '--',
        'sh',
        '-c',
        'while :; do echo "tick $RANK"; sleep 0.02; done',
      ],
      { ...env, RANKD_TEST_ERR: errFile('run') },
    );
    t.match(r.stdout, /^[01]: tick [01]\n$/, 'head got one line');
    t.equal(r.code, SIGPIPE_STATUS);
    t.equal(readErr('run'), '', 'nothing on stderr: no EPIPE, no stack trace, no end message');
    const { body: jobs } = await controller.api<{ jobs: JobLike[] }>('/v1/jobs');
    const id = jobs.jobs.find((j) => j.name === 'endless')!.id;
    // rankd returned only after the end, so the job is over when it exits
    const { body: job } = await controller.api<JobLike>(`/v1/jobs/${id}`);
    t.equal(job.state, 'cancelled');
    t.ok(job.endedAt, 'the job ended before rankd exited');
    t.equal(job.ranks.length, 2);
    for (const rank of job.ranks) {
      t.ok(rank.pid, `rank ${rank.rank} had started`);
      t.notOk(processAlive(rank.pid!), `rank ${rank.rank} (pid ${rank.pid}) is gone`);
      t.same(groupMembers(rank.pid!), [], `rank ${rank.rank}'s process group is empty`);
    }
  });

  await t.test('rankd run … 2>&1 | head -1: a rank that writes only to stderr', async (t) => {
    const r = await pipeToHead(
      [
        'run',
        '-q',
        '-n',
        '1',
        '--grace',
        '2',
        '--name',
        'stderr-only',
        '--',
        'sh',
        '-c',
        'while :; do echo oops >&2; sleep 0.02; done',
      ],
      env,
      true,
    );
    t.equal(r.stdout, '0: oops\n', 'head got one line');
    t.equal(r.code, SIGPIPE_STATUS);
    t.equal(r.stderr, '', 'bash itself saw nothing else');
    const { body: jobs } = await controller.api<{ jobs: JobLike[] }>('/v1/jobs');
    const { body: job } = await controller.api<JobLike>(
      `/v1/jobs/${jobs.jobs.find((j) => j.name === 'stderr-only')!.id}`,
    );
    t.equal(job.state, 'cancelled');
    t.notOk(processAlive(job.ranks[0]!.pid!), 'the rank is gone');
  });

  await t.test('rankd run with its reader gone from the start', async (t) => {
    const r = await closedStdout(
      [
        'run',
        '-q',
        '-n',
        '1',
        '--grace',
        '2',
        '--name',
        'unread',
        '--',
        'sh',
        '-c',
        'while :; do echo tick; sleep 0.02; done',
      ],
      env,
    );
    t.equal(r.code, SIGPIPE_STATUS);
    t.equal(r.stderr, '');
    const { body: jobs } = await controller.api<{ jobs: JobLike[] }>('/v1/jobs');
    const { body: job } = await controller.api<JobLike>(`/v1/jobs/${jobs.jobs.find((j) => j.name === 'unread')!.id}`);
    t.equal(job.state, 'cancelled');
    t.notOk(processAlive(job.ranks[0]!.pid!), 'the rank is gone');
  });
});
