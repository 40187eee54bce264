// The jobs store on a real SQLite file: a started job keeps its plan, its ranks get rows only
// when they change, and reading its ranks back gives every rank either way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { RankMap } from '@rankd/protocol';
import { openDatabase } from '#controller/store/database';
import type { JobRecord } from '#controller/jobs/job-records';
import { JobsRepo } from '#controller/jobs/jobs-repo';

t.test('ranks that never changed read back pending on the plan; changed ones from their rows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-jobs-repo-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const repo = new JobsRepo(db);
  const rankMap = {
    worldSize: 3,
    masterAddr: '10.0.0.1',
    masterPort: 29500,
    nodes: [],
    ranks: [0, 1, 2].map((rank) => ({ rank, node: rank < 2 ? 'a' : 'b' })),
  } as unknown as RankMap;
  const job: JobRecord = {
    id: 'j1',
    name: null,
    idempotencyKey: null,
    owner: 'alice',
    state: 'queued',
    reason: 'submitted',
    submit: { command: ['true'] },
    rankMap: null,
    priority: 0,
    demand: null,
    allocation: null,
    exitCode: null,
    createdAt: 1,
    startedAt: null,
    endedAt: null,
    attempt: 0,
    excluded: [],
    restartAt: null,
  };
  repo.create(job);
  t.same(repo.ranks(job), [], 'a queued job has no ranks');

  Object.assign(job, { state: 'pending', reason: 'planned', rankMap, allocation: { mode: 'share', nodes: {} } });
  repo.start(job, {
    jobId: 'j1',
    attempt: 0,
    state: 'running',
    reason: 'started',
    nodes: ['a', 'b'],
    startedAt: 2,
    endedAt: null,
    exitCode: null,
    firstFailure: null,
    excluded: [],
    restartDelayMs: null,
  });
  t.equal((db.prepare('SELECT count(*) AS n FROM ranks').get() as { n: number }).n, 0, 'starting writes no rank rows');
  const pending = repo.ranks(repo.get('j1')!);
  t.same(
    pending.map((r) => [r.rank, r.node, r.state]),
    [
      [0, 'a', 'pending'],
      [1, 'a', 'pending'],
      [2, 'b', 'pending'],
    ],
  );

  const r1 = {
    ...pending[1]!,
    state: 'running' as const,
    pid: 4242,
    startedAt: 5,
    binding: { cpus: [1], memNodes: [0], verified: true },
  };
  repo.updateRank(r1);
  repo.updateRank({ ...r1, state: 'exited', exitCode: 0, endedAt: 9, stdoutBytes: 12 });
  const after = repo.ranks(repo.get('j1')!);
  t.same(
    after.map((r) => r.state),
    ['pending', 'exited', 'pending'],
    'the changed rank reads from its one row',
  );
  t.match(after[1], {
    pid: 4242,
    exitCode: 0,
    startedAt: 5,
    endedAt: 9,
    stdoutBytes: 12,
    binding: { cpus: [1], verified: true },
  });
  t.equal((db.prepare('SELECT count(*) AS n FROM ranks').get() as { n: number }).n, 1, 'one row, written twice');
});

t.test('listings: each filter and all of them, newest first across states, id prefixes taken literally', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-jobs-repo-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const repo = new JobsRepo(db);
  const add = (id: string, owner: string, state: JobRecord['state'], createdAt: number) =>
    repo.create({
      id,
      name: null,
      idempotencyKey: null,
      owner,
      state,
      reason: '',
      submit: { command: ['true'] },
      rankMap: null,
      priority: 0,
      demand: null,
      allocation: null,
      exitCode: null,
      createdAt,
      startedAt: null,
      endedAt: null,
      attempt: 0,
      excluded: [],
      restartAt: null,
    });
  // ids that LIKE would confuse: `_` is its one-character wildcard
  add('a_1', 'alice', 'succeeded', 10);
  add('ab1', 'alice', 'failed', 20);
  add('a_2', 'bob', 'running', 30);
  add('a_3', 'alice', 'queued', 40);
  add('bzz', 'bob', 'succeeded', 40);
  add('a_0', 'bob', 'failed', 40);
  const ids = (filter: Parameters<JobsRepo['list']>[0]) => repo.list(filter).map((j) => j.id);

  t.same(
    ids({ limit: 100 }),
    ['bzz', 'a_3', 'a_0', 'a_2', 'ab1', 'a_1'],
    'newest first; the same time: the larger id first',
  );
  t.same(ids({ limit: 2 }), ['bzz', 'a_3']);
  t.same(ids({ limit: 100, owner: 'alice' }), ['a_3', 'ab1', 'a_1']);
  t.same(ids({ limit: 100, states: ['failed'] }), ['a_0', 'ab1']);
  t.same(
    ids({ limit: 100, states: ['succeeded', 'failed', 'queued'] }),
    ['bzz', 'a_3', 'a_0', 'ab1', 'a_1'],
    'several states: merged newest first, as one listing would be',
  );
  t.same(ids({ limit: 3, states: ['succeeded', 'failed'] }), ['bzz', 'a_0', 'ab1'], 'the limit holds over the merge');
  t.same(ids({ limit: 100, since: 30 }), ['bzz', 'a_3', 'a_0', 'a_2'], 'since: at or after');
  t.same(
    ids({ limit: 100, idPrefix: 'a_' }),
    ['a_3', 'a_0', 'a_2', 'a_1'],
    '"a_" is no wildcard: ab1 is not among them',
  );
  t.same(ids({ limit: 100, idPrefix: 'b' }), ['bzz'], "a prefix's range ends after z, the largest id character");
  t.same(ids({ limit: 100, idPrefix: 'a_3' }), ['a_3'], 'a whole id matches itself');
  t.same(ids({ limit: 100, idPrefix: 'c' }), []);
  t.same(
    ids({ limit: 100, owner: 'bob', states: ['failed', 'running'], since: 35, idPrefix: 'a' }),
    ['a_0'],
    'all four filters',
  );
});
