// The jobs store on a real SQLite file: a started job keeps its plan, its ranks get rows only
// when they change, and reading its ranks back gives every rank either way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { RankMap } from '@rankd/protocol';
import { openDatabase } from '@rankd/controller/store/database';
import { JobsRepo, type JobRecord } from '@rankd/controller/store/jobs-repo';

t.test('ranks that never changed read back pending on the plan; changed ones from their rows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-jobs-repo-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const repo = new JobsRepo(db);
  const rankMap = { worldSize: 3, masterAddr: '10.0.0.1', masterPort: 29500, nodes: [], ranks: [0, 1, 2].map((rank) => ({ rank, node: rank < 2 ? 'a' : 'b' })) } as unknown as RankMap;
  const job: JobRecord = { id: 'j1', name: null, idempotencyKey: null, owner: 'alice', state: 'queued', reason: 'submitted', submit: { command: ['true'] }, rankMap: null, priority: 0, demand: null, allocation: null, exitCode: null, createdAt: 1, startedAt: null, endedAt: null };
  repo.create(job);
  t.same(repo.ranks(job), [], 'a queued job has no ranks');

  Object.assign(job, { state: 'pending', reason: 'planned', rankMap, allocation: { mode: 'share', nodes: {} } });
  repo.start(job);
  t.equal((db.prepare('SELECT count(*) AS n FROM ranks').get() as { n: number }).n, 0, 'starting writes no rank rows');
  const pending = repo.ranks(repo.get('j1')!);
  t.same(pending.map((r) => [r.rank, r.node, r.state]), [[0, 'a', 'pending'], [1, 'a', 'pending'], [2, 'b', 'pending']]);

  const r1 = { ...pending[1]!, state: 'running' as const, pid: 4242, startedAt: 5, binding: { cpus: [1], memNodes: [0], verified: true } };
  repo.updateRank(r1);
  repo.updateRank({ ...r1, state: 'exited', exitCode: 0, endedAt: 9, stdoutBytes: 12 });
  const after = repo.ranks(repo.get('j1')!);
  t.same(after.map((r) => r.state), ['pending', 'exited', 'pending'], 'the changed rank reads from its one row');
  t.match(after[1], { pid: 4242, exitCode: 0, startedAt: 5, endedAt: 9, stdoutBytes: 12, binding: { cpus: [1], verified: true } });
  t.equal((db.prepare('SELECT count(*) AS n FROM ranks').get() as { n: number }).n, 1, 'one row, written twice');
});
