// The gang-restart migration on a real file written by the schema before it: ranks are
// rebuilt keyed by attempt, and every job and rank reads back as it was, as attempt 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { openDatabase } from '#controller/store/database';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { migrations } from '#controller/store/migrations';

t.test('jobs and ranks written before attempts read back the same after it, as attempt 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-migrate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rankMap = { worldSize: 2, nodes: [{ name: 'n1' }], ranks: [{ rank: 0 }, { rank: 1 }], masterPort: 29500 };
  // the schema as it was just before the migration that made attempts
  const before = migrations.findIndex((m) => m.includes('CREATE TABLE attempts'));
  t.ok(before > 0, 'the attempts migration is there; openDatabase applies it and every later one');
  const old = new Database(join(dir, 'rankd.db'));
  for (let v = 0; v < before; v++) old.exec(migrations[v]!);
  old.pragma(`user_version = ${before}`);
  const insert =
    old.prepare(`INSERT INTO jobs (id, name, idempotency_key, owner, state, reason, submit, exit_code, created_at,
      started_at, ended_at, priority, demand)
    VALUES (?, NULL, NULL, 'alice', ?, 'r', '{"command":["true"]}', ?, ?, ?, NULL, 0, NULL)`);
  insert.run('running', 'running', null, 1, 10);
  insert.run('done', 'failed', 3, 2, 20);
  insert.run('waiting', 'queued', null, 3, null);
  old
    .prepare('INSERT INTO job_plans (job_id, rank_map, allocation) VALUES (?, ?, NULL)')
    .run('running', JSON.stringify(rankMap));
  const rank = old.prepare(`INSERT INTO ranks (job_id, rank, node, state, pid, started_at, ended_at, exit_code, signal,
      binding, error, warnings, stdout_bytes, stderr_bytes)
    VALUES (?, ?, 'n1', ?, ?, 10, ?, ?, ?, NULL, ?, '["w"]', ?, ?)`);
  rank.run('running', 0, 'running', 100, null, null, null, null, 5, 0);
  rank.run('done', 0, 'exited', 200, 30, 3, null, null, 7, 9);
  rank.run('done', 1, 'exited', 201, 30, null, 'SIGTERM', 'agent said so', 0, 0);
  old.close();

  const db = openDatabase(dir);
  t.teardown(() => db.close());
  t.equal(db.pragma('user_version', { simple: true }), migrations.length);
  const columns = (table: string) =>
    (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; pk: number }>).filter((c) => c.pk > 0);
  t.same(
    columns('ranks').map((c) => c.name),
    ['job_id', 'attempt', 'rank'],
    'a rank is keyed by its attempt',
  );

  const repo = new JobsRepo(db);
  for (const id of ['running', 'done', 'waiting']) {
    t.match(repo.get(id), { attempt: 0, excluded: [], restartAt: null }, `${id}: attempt 0, nothing left out`);
    t.same(repo.attempts.list(id), [], `${id}: no attempt row (they start with the next attempt)`);
  }
  t.same(repo.get('running')!.rankMap, rankMap, 'the plan is kept');
  t.same(
    repo.ranks(repo.get('running')!).map((r) => [r.attempt, r.rank, r.state, r.pid, r.stdoutBytes]),
    [
      [0, 0, 'running', 100, 5],
      [0, 1, 'pending', null, 0],
    ],
    "the live job's ranks: the stored one as it was, the other pending on its plan",
  );
  t.same(
    repo.ranks(repo.get('done')!),
    [
      {
        jobId: 'done',
        attempt: 0,
        rank: 0,
        node: 'n1',
        state: 'exited',
        pid: 200,
        startedAt: 10,
        endedAt: 30,
        exitCode: 3,
        signal: null,
        binding: null,
        error: null,
        warnings: ['w'],
        stdoutBytes: 7,
        stderrBytes: 9,
      },
      {
        jobId: 'done',
        attempt: 0,
        rank: 1,
        node: 'n1',
        state: 'exited',
        pid: 201,
        startedAt: 10,
        endedAt: 30,
        exitCode: null,
        signal: 'SIGTERM',
        binding: null,
        error: 'agent said so',
        warnings: ['w'],
        stdoutBytes: 0,
        stderrBytes: 0,
      },
    ],
    "an ended job's ranks, every column kept",
  );
  t.same(
    repo.listActive().map((j) => j.id),
    ['running', 'waiting'],
  );

  // the rebuilt table still belongs to its job, and a rank of attempt 1 sits beside attempt 0's
  repo.updateRank({ ...repo.ranks(repo.get('done')!)[0]!, attempt: 1, exitCode: 0 });
  t.same(
    [repo.ranks(repo.get('done')!, 0).length, repo.ranks(repo.get('done')!, 1).length],
    [2, 1],
    'attempts 0 and 1 of one rank are two rows',
  );
  db.prepare("DELETE FROM jobs WHERE id = 'done'").run();
  t.equal(
    (db.prepare("SELECT count(*) AS n FROM ranks WHERE job_id = 'done'").get() as { n: number }).n,
    0,
    "deleting a job deletes its ranks (the rebuilt table's foreign key)",
  );
  t.ok(
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'ranks_node'").get(),
    'the index on ranks by node is rebuilt',
  );
});
