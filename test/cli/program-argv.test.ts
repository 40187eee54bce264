// The commands that run a program (exec, shell) read their own options up to the program
// and hand it every word after, as `rankd run` does (test/cli/parity-argv.test.ts compares
// that one with srun); `rankd logs` runs no program: its options may follow the job id.
import t from 'tap';
import { fleetUnderTest } from '../fleet/helpers.js';

/** Prints each argument in brackets, one a line: what the program was given, exactly. */
const PRINT_ARGV = ['sh', '-c', 'for a; do printf "[%s]\\n" "$a"; done', 'argv0'];
const ARGS = ['-n', '2', '--json', '--user', 'nobody', '--', '-x'];
const PRINTED = '[-n]\n[2]\n[--json]\n[--user]\n[nobody]\n[--]\n[-x]\n';

interface Report {
  hosts: Array<{ host: string; status: string; rc: number | null; stdout: string }>;
}

t.test('exec, shell and logs: the program takes every word after it', async (t) => {
  const f = await fleetUnderTest(t, ['p1']);

  await t.test('rankd exec PATTERN PROGRAM ARGS… with options after the program', async (t) => {
    const r = await f.cli(['exec', 'p1', ...PRINT_ARGV, ...ARGS]);
    t.equal(r.code, 0, r.stderr);
    t.equal(
      r.stdout.slice(r.stdout.indexOf('>>\n') + 3),
      PRINTED,
      'the program got them all, and exec kept its text output',
    );
  });

  await t.test('rankd exec: its options before and after the pattern are still its own', async (t) => {
    const r = await f.cli(['exec', '--timeout', '30', 'p1', '--json', ...PRINT_ARGV, ...ARGS]);
    t.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as Report;
    t.equal(report.hosts[0]!.stdout, PRINTED);
  });

  await t.test('rankd shell NODE PROGRAM ARGS… with options after the program', async (t) => {
    const r = await f.cli(['shell', '--cwd', '/', 'p1', ...PRINT_ARGV, ...ARGS]);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout.replace(/\r\n/g, '\n'), PRINTED, 'through the terminal, the same words');
  });

  await t.test('rankd logs ID with its options after the id, and no second operand', async (t) => {
    const run = await f.cli(['run', '-q', '-n', '1', '--name', 'for-logs', 'echo', 'logged', '-n']);
    t.equal(run.code, 0, run.stderr);
    t.equal(run.stdout, '0: logged -n\n');
    const { body } = await f.controller.api<{ jobs: Array<{ id: string; name: string | null }> }>('/v1/jobs');
    const id = body.jobs.find((j) => j.name === 'for-logs')!.id;
    const after = await f.cli(['logs', id, '--no-label']);
    t.equal(after.stdout, 'logged -n\n', 'an option after the id is still an option');
    const before = await f.cli(['logs', '--no-label', id]);
    t.equal(before.stdout, 'logged -n\n');
    const extra = await f.cli(['logs', id, 'echo']);
    t.equal(extra.code, 64, 'a second word is a usage error, not ignored');
    t.match(extra.stderr, /too many arguments/);
  });
});
