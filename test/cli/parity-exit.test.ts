// srun parity: the exit code a user's shell sees. Each row runs under a local Slurm and
// under `rankd run`, and the two must agree unless the row says why they differ.
import t from 'tap';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parityMissing, parityRig, type Outcome } from '../helpers/srun-parity.js';
import { scratchDir } from '../helpers/scratch.js';

const skip = parityMissing();

interface Row {
  name: string;
  argv: string[];
  /** What srun exits with. */
  srun: number;
  /** What rankd run exits with. */
  rankd: number;
  /** Why rankd differs from srun, when it does. */
  differs?: string;
  /** What each one says on stderr about it. */
  words?: { srun: RegExp; rankd: RegExp };
}

// Files both tools are asked to run, in a directory both can read (the rig runs them as root).
const dir = scratchDir('rankd-parity-exit-');
chmodSync(dir, 0o755);
const notExecutable = join(dir, 'not-executable.sh');
writeFileSync(notExecutable, '#!/bin/sh\necho ran\n', { mode: 0o644 });
const aDirectory = join(dir, 'a-directory');
mkdirSync(aDirectory);
const badInterpreter = join(dir, 'bad-interpreter.sh');
writeFileSync(badInterpreter, '#!/nonexistent/interpreter\necho ran\n', { mode: 0o755 });

/**
 * Slurm 22.05's slurmstepd ends a task whose execve failed with that errno as its exit code
 * (ENOENT 2, EACCES 13). rankd gives what every shell gives instead (POSIX, "Command Search
 * and Execution"; bash's shell_execve): 127 when the program is not there, 126 when it is
 * there and cannot be executed, so that `rankd run foo; echo $?` reads as `foo; echo $?` does.
 */
const SHELL_CODES = "rankd follows the shell's 127/126 (POSIX, bash); Slurm 22.05 exits with execve's errno";

const rows: Row[] = [
  { name: 'a rank that succeeds', argv: ['sh', '-c', 'exit 0'], srun: 0, rankd: 0 },
  { name: 'a rank that exits 1', argv: ['sh', '-c', 'exit 1'], srun: 1, rankd: 1 },
  { name: 'a rank that exits 3', argv: ['sh', '-c', 'exit 3'], srun: 3, rankd: 3 },
  {
    name: 'a rank that kills itself with SIGTERM: 128 + 15',
    argv: ['sh', '-c', 'kill -TERM $$'],
    srun: 143,
    rankd: 143,
    words: { srun: /task 0: Terminated/, rankd: /rank 0 on parity was killed by SIGTERM/ },
  },
  {
    name: 'a rank that kills itself with SIGKILL: 128 + 9',
    argv: ['sh', '-c', 'kill -KILL $$'],
    srun: 137,
    rankd: 137,
    words: { srun: /task 0: Killed/, rankd: /rank 0 on parity was killed by SIGKILL/ },
  },
  {
    name: 'a command that is not on the PATH',
    argv: ['rankd-no-such-command', '-x'],
    srun: 2,
    rankd: 127,
    differs: SHELL_CODES,
    words: {
      srun: /execve\(\): rankd-no-such-command: No such file or directory/,
      rankd:
        /rank 0 on parity failed to start: rankd-no-such-command: command not found \(RANKD_RANK_PROGRAM_NOT_FOUND\)/,
    },
  },
  {
    name: 'a path that does not exist',
    argv: ['/nonexistent/program'],
    srun: 2,
    rankd: 127,
    differs: SHELL_CODES,
    words: {
      srun: /execve\(\): \/nonexistent\/program: No such file or directory/,
      rankd: /failed to start: \/nonexistent\/program: No such file or directory \(RANKD_RANK_PROGRAM_NOT_FOUND\)/,
    },
  },
  {
    name: 'a file without execute permission',
    argv: [notExecutable],
    srun: 13,
    rankd: 126,
    differs: SHELL_CODES,
    words: {
      srun: /execve\(\): .*not-executable\.sh: Permission denied/,
      rankd: /failed to start: .*not-executable\.sh: Permission denied \(RANKD_RANK_PROGRAM_NOT_EXECUTABLE\)/,
    },
  },
  {
    name: 'a directory',
    argv: [aDirectory],
    srun: 13,
    rankd: 126,
    differs: SHELL_CODES,
    words: {
      srun: /execve\(\): .*a-directory: Permission denied/,
      rankd: /failed to start: .*a-directory: Is a directory \(RANKD_RANK_PROGRAM_NOT_EXECUTABLE\)/,
    },
  },
  {
    // execve fails with ENOENT although the file is there: bash 5.2 and dash give 127 too
    name: 'a script whose #! interpreter does not exist',
    argv: [badInterpreter],
    srun: 2,
    rankd: 127,
    differs: SHELL_CODES,
    words: {
      srun: /bad interpreter\(\/nonexistent\/interpreter\): No such file or directory/,
      rankd:
        /failed to start: .*bad-interpreter\.sh: \/nonexistent\/interpreter: bad interpreter: No such file or directory \(RANKD_RANK_PROGRAM_NOT_FOUND\)/,
    },
  },
];

t.test('exit codes under srun and rankd run', { skip: skip ?? false }, async (t) => {
  const rig = await parityRig(t);
  for (const row of rows) {
    const srun: Outcome = await rig.srun(['-n', '1', '--', ...row.argv]);
    const rankd: Outcome = await rig.rankd(['-n', '1', '--', ...row.argv]);
    const why = row.differs ? ` (differs on purpose: ${row.differs})` : '';
    t.equal(srun.code, row.srun, `srun: ${row.name}${why} (stderr: ${srun.stderr})`);
    t.equal(rankd.code, row.rankd, `rankd: ${row.name}${why} (stderr: ${rankd.stderr})`);
    if (row.words) {
      t.match(srun.stderr, row.words.srun, `srun's words: ${row.name}`);
      t.match(rankd.stderr, row.words.rankd, `rankd's words: ${row.name}`);
    }
    if (!row.differs) t.equal(rankd.code, srun.code, `the same code: ${row.name}`);
  }
});
