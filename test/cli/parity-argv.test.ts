// srun parity: the first word that is not an option is the program, and it and every word
// after it are the program's argv, options included. Each row runs the same words under a
// local Slurm and under `rankd run`, and the ranks' output must be the same bytes.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parityMissing, parityRig } from '../helpers/srun-parity.js';
import { scratchDir } from '../helpers/scratch.js';

const skip = parityMissing();

/** Prints each argument of the program in brackets, one a line: what the rank was given, exactly. */
const PRINT_ARGV = ['sh', '-c', 'for a; do printf "[%s]\\n" "$a"; done', 'argv0'];

interface Row {
  name: string;
  /** Both tools' own options; srun's -l labels lines "0: " as rankd run does by default. */
  before: { srun: string[]; rankd: string[] };
  /** The program and its arguments, the same words for both. */
  program: string[];
  /** What the rank printed, under both. */
  stdout: string;
  /** Several ranks print: their lines may come in any order. */
  ranksInterleave?: true;
}

const dir = scratchDir('rankd-parity-argv-');
writeFileSync(join(dir, 'a file'), 'x');

const both = (...words: string[]) => ({ srun: ['-l', ...words], rankd: words });

const rows: Row[] = [
  {
    name: "an option of the launcher after the program is the program's",
    before: both('-n', '1'),
    program: ['echo', 'hi', '-n', '1'],
    stdout: '0: hi -n 1\n',
  },
  { name: "the program's own -c", before: both('-n', '1'), program: ['python3', '-c', 'print(42)'], stdout: '0: 42\n' },
  {
    name: "an option that is not the launcher's",
    before: both('-n', '1'),
    program: ['ls', '-a', dir],
    stdout: '0: .\n0: ..\n0: a file\n',
  },
  {
    name: 'every word after the program, options, values and -- included',
    before: both('-n', '1'),
    program: [...PRINT_ARGV, '-n', '2', '--label', '{rank}: ', '-q', '--', '-x', ''],
    stdout: '0: [-n]\n0: [2]\n0: [--label]\n0: [{rank}: ]\n0: [-q]\n0: [--]\n0: [-x]\n0: []\n',
  },
  {
    name: "-- before the program still ends the launcher's options",
    before: both('-n', '1', '--'),
    program: ['echo', '-n', 'x'],
    stdout: '0: x\n',
  },
  {
    name: "a value given as a separate word is the option's, not the program",
    before: { srun: ['-l', '--ntasks', '2', '--job-name', 'echo'], rankd: ['--ntasks', '2', '--name', 'echo'] },
    program: ['echo', 'ranks'],
    stdout: '0: ranks\n1: ranks\n',
    ranksInterleave: true,
  },
];

t.test('argv under srun and rankd run', { skip: skip ?? false }, async (t) => {
  const rig = await parityRig(t);
  for (const row of rows) {
    const srun = await rig.srun([...row.before.srun, ...row.program]);
    const rankd = await rig.rankd([...row.before.rankd, ...row.program]);
    // one rank's output is compared byte for byte; two ranks' lines may interleave in any order
    const seen = (out: string) => (row.ranksInterleave ? out.split('\n').sort().join('\n') : out);
    t.equal(seen(srun.stdout), seen(row.stdout), `srun: ${row.name} (stderr: ${srun.stderr})`);
    t.equal(seen(rankd.stdout), seen(row.stdout), `rankd: ${row.name} (stderr: ${rankd.stderr})`);
    t.equal(rankd.code, 0, `rankd: ${row.name} exits 0`);
  }
});
