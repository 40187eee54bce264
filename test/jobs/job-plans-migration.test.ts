// The store's latest migration on a real file written by the previous schema: rank maps
// and allocations move to job_plans, and every job reads back as it was.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { openDatabase } from '#controller/store/database';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { migrations } from '#controller/store/migrations';

t.test('a started and a queued job written before job_plans read back the same after it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-migrate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rankMap = { worldSize: 2, nodes: [{ name: 'n1' }], ranks: [{ rank: 0 }, { rank: 1 }], masterPort: 29500 };
  const allocation = { mode: 'exclusive', nodes: { n1: { cores: [0, 1], gpus: [] } } };
  // the schema as it was just before the migration that made job_plans
  const before = migrations.findIndex((m) => m.includes('CREATE TABLE job_plans'));
  t.ok(before > 0, 'the job_plans migration is there');
  const old = new Database(join(dir, 'rankd.db'));
  for (let v = 0; v < before; v++) old.exec(migrations[v]!);
  old.pragma(`user_version = ${before}`);
  const insert =
    old.prepare(`INSERT INTO jobs (id, name, idempotency_key, owner, state, reason, submit, rank_map, exit_code, created_at, started_at, ended_at, priority, demand, allocation)
    VALUES (?, NULL, NULL, 'alice', ?, 'r', '{"command":["true"]}', ?, NULL, ?, NULL, NULL, 0, NULL, ?)`);
  insert.run('started', 'running', JSON.stringify(rankMap), 1, JSON.stringify(allocation));
  insert.run('queued', 'queued', 'null', 2, null);
  old
    .prepare(`INSERT INTO ranks (job_id, rank, node, state, warnings) VALUES ('started', 0, 'n1', 'running', '[]')`)
    .run();
  old.close();

  const db = openDatabase(dir);
  t.teardown(() => db.close());
  t.equal(db.pragma('user_version', { simple: true }), migrations.length);
  const columns = (db.prepare('PRAGMA table_info(jobs)').all() as Array<{ name: string }>).map((c) => c.name);
  t.notOk(columns.includes('rank_map') || columns.includes('allocation'), 'the jobs row no longer holds the plan');
  t.same(db.prepare('SELECT job_id FROM job_plans').all(), [{ job_id: 'started' }], 'only the started job has a plan');

  const repo = new JobsRepo(db);
  const started = repo.get('started')!;
  t.same(started.rankMap, rankMap);
  t.same(started.allocation, allocation);
  t.equal(started.owner, 'alice');
  t.same(
    repo.ranks({ id: 'started', rankMap: null, attempt: 0 }).map((r) => r.state),
    ['running'],
    'its ranks are untouched',
  );
  const queued = repo.get('queued')!;
  t.equal(queued.rankMap, null);
  t.equal(queued.allocation, null);
  t.same(
    repo.listActive().map((j) => j.id),
    ['started', 'queued'],
  );

  // a state change touches the jobs row only; the plan stays as written
  repo.updateJob({ ...started, state: 'succeeded', exitCode: 0, endedAt: 3 });
  t.same(repo.get('started')!.rankMap, rankMap);
  t.equal(repo.get('started')!.state, 'succeeded');
});
