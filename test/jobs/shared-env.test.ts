// job.start carries the environment a node's ranks share once; each rank's env keeps what is its own.
import t from 'tap';
import type { RankLaunch } from '@rankd/protocol';
import { hoistSharedEnv } from '#controller/jobs/shared-env';

const launch = (rank: number, env: Record<string, string>): RankLaunch => ({
  rank,
  argv: ['true'],
  env,
  cpus: [rank],
  memNodes: [0],
});

t.test('shared variables move to the message; what differs, or is missing in one rank, stays per rank', async (t) => {
  const ranks = [
    launch(0, { WORLD_SIZE: '3', MASTER_ADDR: 'n1', RANK: '0', ONLY_HERE: 'x' }),
    launch(1, { WORLD_SIZE: '3', MASTER_ADDR: 'n1', RANK: '1' }),
    launch(2, { WORLD_SIZE: '3', MASTER_ADDR: 'n1', RANK: '2', ONLY_HERE: 'x' }),
  ];
  const before = ranks.map((r) => ({ ...r.env }));
  const shared = hoistSharedEnv(ranks);
  t.same(shared, { WORLD_SIZE: '3', MASTER_ADDR: 'n1' });
  t.same(
    ranks.map((r) => r.env),
    [{ RANK: '0', ONLY_HERE: 'x' }, { RANK: '1' }, { RANK: '2', ONLY_HERE: 'x' }],
  );
  // what the agent rebuilds is what each rank had
  t.same(
    ranks.map((r) => ({ ...shared, ...r.env })),
    before,
  );
});

t.test('one rank, or none, keeps its env as it is', async (t) => {
  const one = [launch(0, { RANK: '0', WORLD_SIZE: '1' })];
  t.same(hoistSharedEnv(one), {});
  t.same(one[0]!.env, { RANK: '0', WORLD_SIZE: '1' });
  t.same(hoistSharedEnv([]), {});
});

t.test('an empty value is a value: shared only when every rank has it', async (t) => {
  const ranks = [launch(0, { A: '' }), launch(1, { A: '' }), launch(2, {})];
  t.same(hoistSharedEnv(ranks), {});
  t.same(
    ranks.map((r) => r.env),
    [{ A: '' }, { A: '' }, {}],
  );
});
