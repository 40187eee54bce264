// srun parity: which ranks read the client's stdin, and what they read. Each row runs the
// same case under a local Slurm and under `rankd run`, as real clients given the row's
// stdin, and the two must agree unless the row says why they differ.
//
// Each rank prints "RANK:BYTES" (the bytes it read from its stdin, `wc -c`), so a row
// compares, rank by rank, who read what.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { CLI, runCli, waitUntil } from '../helpers/daemons.js';
import { parityMissing, parityRig, type Outcome, type ParityCall } from '../helpers/srun-parity.js';

const skip = parityMissing();

/** Prints the rank (Slurm's SLURM_PROCID, rankd's RANK) and how many bytes its stdin held. */
const COUNT = ['sh', '-c', 'echo "${SLURM_PROCID:-$RANK}:$(wc -c)"'];
const HELLO = 'hello\n';

interface Row {
  name: string;
  /** Options before the program, per tool (rankd's are srun's unless given). */
  srun: string[];
  rankd?: string[];
  argv: string[];
  call: ParityCall;
  /** What each tool prints (sorted lines); `rankd` only where it deliberately differs. */
  expect: string;
  rankdExpect?: { output: string; why: string };
}

const big = randomBytes(6 * 1024 * 1024 + 123);
const bigSha = createHash('sha256').update(big).digest('hex');

const rows: Row[] = [
  { name: 'echo hi | run -n 1 -- cat', srun: ['-n', '1'], argv: ['cat'], call: { stdin: 'hi\n' }, expect: 'hi' },
  {
    name: '-n 2 by default',
    srun: ['-n', '2'],
    argv: COUNT,
    call: { stdin: HELLO },
    expect: '0:6\n1:6',
    rankdExpect: {
      output: '0:6\n1:0',
      why: "rankd follows mpirun (and torchrun users' habit): stdin goes to rank 0 by default; srun broadcasts it to every task unless told --input",
    },
  },
  {
    name: 'stdin to rank 0, -n 2: rank 1 reads nothing',
    srun: ['-n', '2', '--input', '0'],
    rankd: ['-n', '2'],
    argv: COUNT,
    call: { stdin: HELLO },
    expect: '0:6\n1:0',
  },
  { name: '--input all', srun: ['-n', '2', '--input', 'all'], argv: COUNT, call: { stdin: HELLO }, expect: '0:6\n1:6' },
  { name: '--input 1', srun: ['-n', '2', '--input', '1'], argv: COUNT, call: { stdin: HELLO }, expect: '0:0\n1:6' },
  {
    name: '--input none',
    srun: ['-n', '2', '--input', 'none'],
    argv: COUNT,
    call: { stdin: HELLO },
    expect: '0:0\n1:0',
  },
  {
    name: 'a /dev/null stdin: EOF at once',
    srun: ['-n', '2', '--input', 'all'],
    argv: COUNT,
    call: {},
    expect: '0:0\n1:0',
  },
  {
    name: 'several MiB, byte for byte',
    srun: ['-n', '1'],
    argv: ['sha256sum'],
    call: { stdin: big, timeoutMs: 60_000 },
    expect: `${bigSha}  -`,
  },
  {
    name: '--input all, several MiB to each rank',
    srun: ['-n', '2', '--input', 'all'],
    argv: ['sh', '-c', 'echo "${SLURM_PROCID:-$RANK}:$(sha256sum)"'],
    call: { stdin: big, timeoutMs: 60_000 },
    expect: `0:${bigSha}  -\n1:${bigSha}  -`,
  },
  {
    name: 'the rank ends before its stdin does: no error',
    srun: ['-n', '1'],
    argv: ['head', '-c', '5'],
    call: { stdin: Buffer.concat([Buffer.from('hello world\n'), big]), timeoutMs: 60_000 },
    expect: 'hello',
  },
];

t.test('a bad --input is a usage error (64) that names the flag, before any request', async (t) => {
  // port 1 answers nothing: a request would exit 69
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    RANKD_URL: 'https://127.0.0.1:1',
    RANKD_TOKEN: 'rankd_x',
  };
  const cases: Array<[string[], RegExp]> = [
    [['-n', '2', '--input', '2'], /--input 2: the job has 2 ranks, 0 to 1/],
    [['-n', '2', '--input', 'some'], /--input is a rank, all or none, not "some"/],
    [['--pty', '--input', '0'], /--input 0: stdin is not forwarded with --pty/],
    [['--mpi', 'openmpi', '--input', 'all'], /--input all: stdin is not forwarded with --mpi openmpi/],
  ];
  for (const [flags, message] of cases) {
    const r = await runCli(['run', ...flags, '--', 'true'], env);
    t.equal(r.code, 64, `rankd run ${flags.join(' ')}: exit 64 (${r.stderr.trim()})`);
    t.match(r.stderr, message, 'and says why');
  }
});

const lines = (o: Outcome) => o.stdout.trim().split('\n').sort().join('\n');

t.test('stdin under srun and rankd run', { skip: skip ?? false }, async (t) => {
  const rig = await parityRig(t);
  for (const row of rows) {
    const srun = await rig.srun([...row.srun, '--', ...row.argv], row.call);
    const rankd = await rig.rankd([...(row.rankd ?? row.srun), '--no-label', '--', ...row.argv], row.call);
    t.equal(srun.code, 0, `srun: ${row.name} exits 0 (stderr: ${srun.stderr})`);
    t.equal(lines(srun), row.expect, `srun: ${row.name}`);
    t.equal(rankd.code, 0, `rankd: ${row.name} exits 0 (stderr: ${rankd.stderr})`);
    t.equal(rankd.stderr, '', `rankd: ${row.name} says nothing on stderr`);
    if (row.rankdExpect)
      t.equal(
        lines(rankd),
        row.rankdExpect.output,
        `rankd: ${row.name}, deliberately unlike srun: ${row.rankdExpect.why}`,
      );
    else t.equal(lines(rankd), row.expect, `rankd: ${row.name}`);
  }

  t.test('an endless producer and a rank that reads one line: the client stops reading quietly', async (t) => {
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('sh', ['-c', `yes | "${process.execPath}" "${CLI}" run -q --no-label -n 1 -- head -1`], {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...rig.rankdClientEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    t.equal(r.code, 0, `yes | rankd run -- head -1 exits 0 (stderr: ${r.stderr})`);
    t.equal(r.stdout, 'y\n', 'and prints y');
    t.equal(r.stderr, '', 'with nothing on stderr');
  });

  t.test('a terminal as stdin, without --pty, is forwarded the same way', async (t) => {
    // script(1) gives the client a pseudo-terminal for its stdin and copies ours into it
    const child = spawn(
      'script',
      ['-qfec', `"${process.execPath}" "${CLI}" run -q --no-label -n 1 -- head -1`, '/dev/null'],
      {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', TERM: 'dumb', ...rig.rankdClientEnv },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    // typed once the client runs: a terminal echoes it, and the rank prints it back
    await new Promise((r) => setTimeout(r, 1500));
    child.stdin.write('typed on a tty\r');
    const code = await closed;
    t.equal(code, 0, `exit 0 (output: ${JSON.stringify(out)})`);
    t.ok(out.split('typed on a tty').length - 1 >= 2, 'the line is echoed by the terminal, then printed by rank 0');
  });

  t.test('a queued job keeps its stdin until it starts', async (t) => {
    const blocker = spawn(process.execPath, [CLI, 'run', '-q', '--exclusive', '-n', '1', '--', 'sleep', '3'], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...rig.rankdClientEnv },
      stdio: 'ignore',
    });
    const blockerDone = new Promise((r) => blocker.once('close', r));
    await waitUntil('the blocker to run', 20_000, async () => {
      const q = (await runCli(['jobs', '--json'], rig.rankdClientEnv)).stdout;
      return /"state":\s*"running"/.test(q);
    });
    const r = await rig.rankd(['-n', '1', '--no-label', '--', 'cat'], { stdin: 'waited\n' });
    await blockerDone;
    t.equal(r.code, 0, `exit 0 (stderr: ${r.stderr})`);
    t.match(r.stderr, /queued/, 'the job was queued');
    t.equal(r.stdout, 'waited\n', 'and its rank read the stdin given while it waited');
  });

  // rankd only: srun has no detach, and a killed srun takes its step with it
  for (const how of ['gone', 'detached'] as const) {
    t.test(`a client that is ${how}: the rank reads what came, then EOF`, async (t) => {
      // the rank ignores SIGTERM, so that a first Ctrl-C (cancel) leaves it reading its stdin
      const child = spawn(
        process.execPath,
        [CLI, 'run', '--no-label', '--grace', '60', '-n', '1', '--', 'sh', '-c', 'trap "" TERM; wc -c'],
        {
          env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...rig.rankdClientEnv },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      t.teardown(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const closed = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      child.stdin.write('abcd');
      const id = await waitUntil('the job to start', 20_000, () => /rankd: job (\S+)/.exec(stderr)?.[1]);
      const job = async () =>
        JSON.parse((await runCli(['job', id, '--json'], rig.rankdClientEnv)).stdout) as {
          state: string;
          reason: string;
          ranks: Array<{ state: string }>;
        };
      await waitUntil('its rank to run', 20_000, async () => (await job()).ranks[0]?.state === 'running');
      // the 4 bytes reach the controller long before this; the client's stdin stays open
      await new Promise((r) => setTimeout(r, 1000));
      if (how === 'gone') child.kill('SIGKILL');
      else {
        child.kill('SIGINT');
        await waitUntil('the cancel to take', 10_000, async () => /^stopping/.test((await job()).reason));
        child.kill('SIGINT');
      }
      const code = await closed;
      if (how === 'detached') t.equal(code, 130, `a detached client exits 130 (stderr: ${stderr})`);
      const end = await waitUntil('the job to end', 30_000, async () => {
        const v = await job();
        return ['succeeded', 'failed', 'cancelled'].includes(v.state) ? v : undefined;
      });
      t.equal(
        end.state,
        how === 'gone' ? 'succeeded' : 'cancelled',
        `the job ends once its rank read EOF (${end.state})`,
      );
      t.match(
        (await runCli(['logs', id], rig.rankdClientEnv)).stdout.trim(),
        /^(0: )?4$/,
        'the rank read the 4 bytes, then EOF',
      );
      child.stdin.destroy();
    });
  }

  t.test('a rank that does not read yet holds the producer back, end to end', async (t) => {
    // 24 MiB offered to a rank that reads nothing for 3 s: without flow control the client
    // would take it all at once; with it, what is taken is bounded by the windows (client
    // 1 MiB, controller → agent 1 MiB, the agent's socket to the rank, the pipe buffers)
    const data = randomBytes(24 * 1024 * 1024);
    const child = spawn(
      process.execPath,
      [CLI, 'run', '-q', '--no-label', '-n', '1', '--', 'sh', '-c', 'sleep 3; sha256sum'],
      {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...rig.rankdClientEnv },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    let taken = 0;
    const SLICE = 64 * 1024;
    const writeAll = async () => {
      for (let at = 0; at < data.length; at += SLICE) {
        const slice = data.subarray(at, at + SLICE);
        await new Promise<void>((resolve, reject) => child.stdin.write(slice, (e) => (e ? reject(e) : resolve())));
        taken = at + slice.length;
      }
      child.stdin.end();
    };
    const writing = writeAll();
    await new Promise((r) => setTimeout(r, 2000));
    const takenWhileBlocked = taken;
    t.ok(
      takenWhileBlocked < 10 * 1024 * 1024,
      `while the rank reads nothing the client takes a bounded amount (${(takenWhileBlocked / 1048576).toFixed(1)} MiB of 24)`,
    );
    await writing;
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    t.equal(code, 0, `exit 0 (stderr: ${Buffer.concat(err).toString()})`);
    t.equal(
      Buffer.concat(out).toString().trim(),
      `${createHash('sha256').update(data).digest('hex')}  -`,
      'and every byte arrives, in order',
    );
  });
});
