// The job-wide fence through the controller, between two agents: every rank's cards are
// visible to every rank after the barrier, whether the merged cards travel with the answer
// (small) or are pulled in chunks when first read (large: over 64 KiB).
import t from 'tap';
import { localCluster } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';
import { PROGRAMS, PYTHON, type MpiJobView } from './helpers.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const CARDS = join(PROGRAMS, 'pmi_cards.py');
const skip = existsSync(PYTHON) ? false : `${PYTHON} is missing`;

for (const [what, count, size] of [
  ['small cards, answered inline', 4, 100],
  ['about 1 MB of cards (1,200 of 800 bytes), pulled in chunks', 300, 800],
] as const) {
  t.test(`2 nodes × 2 ranks, ${what}`, { skip }, async (t) => {
    const cluster = await localCluster(t, ['node-a', 'node-b']);
    const r = await runCli(
      ['run', '-N', '2', '--ranks-per-node', '2', '--', PYTHON, CARDS, String(count), String(size)],
      cluster.env,
      60_000,
    );
    t.equal(r.code, 0, r.stderr);
    t.same(
      r.stdout.trim().split('\n').sort(),
      [0, 1, 2, 3].map((rank) => `${rank}: cards ok ${4 * count}`),
      'every rank read every card of every rank',
    );
    const id = /^rankd: job (\S+)$/m.exec(r.stderr)?.[1];
    const job = (await cluster.controller.api<MpiJobView>(`/v1/jobs/${id}`)).body;
    t.same([...new Set(job.ranks.map((x) => x.node))], ['node-a', 'node-b'], 'the fence joined two agents');
  });
}
