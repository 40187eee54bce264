// The resume demo (packages/cli/demo/ddp_resume.py) on its own, under torchrun on this
// host: a run whose rank 1 fails mid-training and is restarted resumes from rank 0's
// checkpoint and ends with the same parameters, to the bit, as a run that never failed.
// This proves the script; the namespace-cluster tests put it under `rankd run --max-restarts`.
//
// Debian's torchrun (torch 1.13 on Python 3.11) cannot parse its own default `--redirects 0`
// (Std.from_str finds no flag for 0 there and returns None), so every run here passes
// `--redirects 1 --tee 1`: stdout goes through torchrun's log files and comes back labelled
// "[default<LOCAL_RANK>]:".
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { DDP_RESUME, parseResume, splitTorchrun, type ResumeRun } from './harness/ddp-resume-output.js';
import { IN_CI, torchUnsupported } from './harness/requirements.js';

const TORCHRUN = '/usr/bin/torchrun';
const STEPS = 8;
const EVERY = 3;
const RUN_TIMEOUT_MS = 120_000;

interface TorchrunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      server.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * `torchrun --nproc_per_node N --max_restarts 1` of the demo on loopback, in its own process
 * group so that a timeout or the test's end can stop it and its workers by that one id.
 */
async function torchrun(t: Test, dir: string, nproc: number, scriptArgs: string[]): Promise<TorchrunResult> {
  const port = await freeLoopbackPort();
  const argv = [
    '--nnodes',
    '1',
    '--nproc_per_node',
    String(nproc),
    '--max_restarts',
    '1',
    // the default polls the workers every 5 s; the test need not wait that long for a failure
    '--monitor_interval',
    '0.2',
    '--master_addr',
    '127.0.0.1',
    '--master_port',
    String(port),
    '--redirects',
    '1',
    '--tee',
    '1',
    '--log_dir',
    path.join(dir, 'torchrun-logs'),
    DDP_RESUME,
    ...scriptArgs,
  ];
  const env = { ...process.env, OMP_NUM_THREADS: '1', GLOO_SOCKET_IFNAME: 'lo' };
  return new Promise((resolve, reject) => {
    const child = spawn(TORCHRUN, argv, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stop = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(stop, RUN_TIMEOUT_MS);
    t.teardown(stop);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function ranksOf(t: Test, r: TorchrunResult, world: number): ResumeRun[] {
  const split = splitTorchrun(r.stdout);
  t.same(split.unlabelled, [], 'every stdout line carries its worker label');
  const runs: ResumeRun[] = [];
  for (let rank = 0; rank < world; rank++) {
    const run = parseResume(split.byRank.get(rank) ?? []);
    t.same(run.other, [], `rank ${rank}: no torn or foreign line`);
    runs.push(run);
  }
  return runs;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

function requirementsMissing(): string | null {
  return torchUnsupported() ?? (existsSync(TORCHRUN) ? null : `${TORCHRUN} is missing (apt-get install python3-torch)`);
}

const why = requirementsMissing();
if (why !== null && IN_CI) {
  void t.test('the resume demo under torchrun', async (t) => {
    t.fail(`this test must run in CI, but ${why}`);
  });
} else if (why !== null) {
  void t.test('the resume demo under torchrun', { skip: `skipped: ${why}` }, async () => {});
} else {
  void t.test('the resume demo under torchrun, 1 host × 2 ranks', { timeout: 360_000 }, async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rankd-ddp-resume-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const common = ['--steps', String(STEPS), '--every', String(EVERY)];

    const whole = await torchrun(t, dir, 2, [...common, '--checkpoint-dir', path.join(dir, 'whole')]);
    t.equal(whole.code, 0, `the uninterrupted run exits 0 (stderr: ${whole.stderr.slice(-1500)})`);
    const wholeRanks = ranksOf(t, whole, 2);
    for (const [rank, run] of wholeRanks.entries()) {
      t.equal(run.attempts.length, 1, `uninterrupted rank ${rank}: one attempt`);
      const [a] = run.attempts;
      t.equal(a?.env['TORCHELASTIC_RESTART_COUNT'], '0');
      t.equal(a?.start, 'fresh', `uninterrupted rank ${rank} starts fresh`);
      t.same(
        a?.steps.map((s) => s.i),
        range(0, STEPS),
        `uninterrupted rank ${rank}: every step once`,
      );
      t.equal(a?.done, STEPS);
    }
    t.same(wholeRanks[0]!.attempts[0]?.checkpoints, [3, 6, 8], 'rank 0 checkpoints every 3 steps and at the end');
    t.same(wholeRanks[1]!.attempts[0]?.checkpoints, [], 'only rank 0 writes checkpoints');
    const digest = wholeRanks[0]!.attempts[0]?.params?.digest;
    t.ok(digest, 'the uninterrupted run printed its final parameters');
    t.equal(wholeRanks[1]!.attempts[0]?.params?.digest, digest, 'both ranks end with the same parameters');

    // rank 1 fails before step 5 in attempt 0: the newest checkpoint then is the one after step 3
    const failed = await torchrun(t, dir, 2, [
      ...common,
      '--checkpoint-dir',
      path.join(dir, 'restarted'),
      '--fail-at-step',
      '5',
      '--fail-rank',
      '1',
      '--fail-attempt',
      '0',
    ]);
    t.equal(failed.code, 0, `the restarted run exits 0 (stderr: ${failed.stderr.slice(-1500)})`);
    t.match(
      failed.stderr,
      /ddp_resume: injected failure: rank 1 exits 1 before step 5 in attempt 0/,
      'rank 1 said why it failed',
    );
    const restarted = ranksOf(t, failed, 2);
    for (const [rank, run] of restarted.entries()) {
      t.equal(run.attempts.length, 2, `rank ${rank} lived through two attempts`);
      const [first, second] = run.attempts;
      t.equal(first?.env['TORCHELASTIC_RESTART_COUNT'], '0');
      t.equal(first?.start, 'fresh');
      t.equal(first?.params, null, `rank ${rank}: attempt 0 did not finish`);
      t.equal(second?.env['TORCHELASTIC_RESTART_COUNT'], '1', `rank ${rank}: attempt 1 is torchrun's restart 1`);
      t.not(second?.env['pid'], first?.env['pid'], `rank ${rank}: attempt 1 is a new process`);
      t.equal(second?.start, 3, `rank ${rank}: attempt 1 resumes from the checkpoint after step 3`);
      t.same(
        second?.steps.map((s) => s.i),
        range(3, STEPS),
        `rank ${rank}: attempt 1 runs steps 3 to ${STEPS - 1}, no step before the checkpoint`,
      );
      // the same parameters, optimizer state, RNG and data at each step give the same loss, bit for bit
      const wholeLoss = new Map(wholeRanks[rank]!.attempts[0]!.steps.map((s) => [s.i, s.loss]));
      t.same(
        second?.steps.map((s) => s.loss),
        second?.steps.map((s) => wholeLoss.get(s.i)),
        `rank ${rank}: each resumed step's loss is the uninterrupted run's`,
      );
      t.equal(second?.done, STEPS);
      t.equal(second?.params?.digest, digest, `rank ${rank} ends with the uninterrupted run's parameters`);
    }
    t.same(restarted[0]!.attempts[1]?.checkpoints, [6, 8], 'attempt 1 checkpoints after steps 6 and 8');

    // the checkpoint holds 2 ranks' RNG states and gloo sums in rank order: 1 rank must not resume from it
    const checkpoints = readdirSync(path.join(dir, 'restarted')).sort();
    const wrongWorld = await torchrun(t, dir, 1, [...common, '--checkpoint-dir', path.join(dir, 'restarted')]);
    t.not(wrongWorld.code, 0, 'a run with another world size fails');
    t.match(
      wrongWorld.stderr,
      /ddp_resume: cannot resume: \S+ckpt-00000008\.pt was written by 2 ranks, this run has 1/,
      'and says why',
    );
    t.notMatch(wrongWorld.stdout, /\]:step /, 'it trained no step');
    t.same(readdirSync(path.join(dir, 'restarted')).sort(), checkpoints, 'and left the checkpoints as they were');
  });
}
