// srun parity: the exit code a user's shell sees. Each row runs under a local Slurm and
// under `rankd run`, and the two must agree unless the row says why they differ.
import t from 'tap';
import { parityMissing, parityRig, type Outcome } from '../helpers/srun-parity.js';

const skip = parityMissing();

interface Row {
  name: string;
  argv: string[];
  /** What both tools must exit with. */
  code: number;
}

const rows: Row[] = [
  { name: 'a rank that succeeds', argv: ['sh', '-c', 'exit 0'], code: 0 },
  { name: 'a rank that exits 3', argv: ['sh', '-c', 'exit 3'], code: 3 },
];

t.test('exit codes under srun and rankd run', { skip: skip ?? false }, async (t) => {
  const rig = await parityRig(t);
  for (const row of rows) {
    const srun: Outcome = await rig.srun(['-n', '1', '--', ...row.argv]);
    const rankd: Outcome = await rig.rankd(['-n', '1', '--', ...row.argv]);
    t.equal(srun.code, row.code, `srun: ${row.name} (stderr: ${srun.stderr})`);
    t.equal(rankd.code, row.code, `rankd: ${row.name} (stderr: ${rankd.stderr})`);
  }
});
