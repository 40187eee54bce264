// The audit log has a retention and its file is rotated (issue 24, finding 4): a controller
// started with --audit-retention deletes older entries from the store, and audit.jsonl never
// grows past --audit-file-size (rotated to .1 … .N, --audit-file-keep). Real controller
// processes and a real SQLite file; the hourly deletion and the minute roll-over of counted
// refusals are checked on the store itself with a clock the test moves.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { openDatabase } from '#controller/store/database';
import { AuditLog, type AuditStart } from '#controller/store/audit-log';
import { startController } from '../helpers/daemons.js';

interface Line {
  id: string;
  route: string;
  count: number;
  status: number | null;
  source: string;
}

const lines = (path: string): Line[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

t.test('audit.jsonl is rotated by size and keeps N files; the store keeps every entry', async (t) => {
  const MAX = 4096;
  const c = await startController({ extra: ['--audit-file-size', '4k', '--audit-file-keep', '2'] });
  t.teardown(() => c.stop());
  const file = join(c.dataDir, 'audit.jsonl');
  for (let i = 0; i < 60; i++) {
    const r = await c.api('/v1/join-tokens', {
      method: 'POST',
      body: { ttlSeconds: 60, uses: 1, description: `rotation ${i}` },
    });
    if (r.status !== 200) throw new Error(`mint ${i}: ${r.status}`);
  }
  for (const path of [file, `${file}.1`, `${file}.2`]) {
    t.ok(existsSync(path), `${path} exists`);
    t.ok(statSync(path).size <= MAX, `${path} is ${statSync(path).size} bytes, at most ${MAX}`);
    t.equal(statSync(path).mode & 0o777, 0o600, `${path} is mode 0600`);
  }
  t.notOk(existsSync(`${file}.3`), 'no third rotated file: --audit-file-keep 2');
  const { body } = await c.api<{ entries: Line[] }>('/v1/audit?limit=10000');
  const mints = body.entries.filter((e) => e.route === '/v1/join-tokens');
  t.equal(mints.length, 61, 'the store holds every entry (60 and the helper’s own mint)');
  const kept = [...lines(`${file}.2`), ...lines(`${file}.1`), ...lines(file)];
  t.same(
    kept.map((l) => l.id),
    mints.slice(-kept.length).map((e) => e.id),
    `the files hold the newest ${kept.length} entries, oldest first, none twice, none lost between them`,
  );
  t.ok(kept.length < 61, 'the oldest lines were dropped with the oldest file');
});

t.test('--audit-retention deletes older entries from the store at start', async (t) => {
  const first = await startController();
  const old = await first.api<{ entries: Line[] }>('/v1/audit?limit=10000');
  t.ok(old.body.entries.length >= 1, 'entries exist (the helper minted a join token)');
  await first.stop();
  await new Promise((r) => setTimeout(r, 2500));
  const second = await startController({ dataDir: first.dataDir, extra: ['--audit-retention', '2s'] });
  t.teardown(() => second.stop());
  const now = await second.api<{ entries: Line[] }>('/v1/audit?limit=10000');
  const oldIds = new Set(old.body.entries.map((e) => e.id));
  t.same(
    now.body.entries.filter((e) => oldIds.has(e.id)),
    [],
    'every entry older than 2 s is gone from the store',
  );
  t.ok(
    now.body.entries.some((e) => e.route === '/v1/join-tokens'),
    'the new start’s own entries are there',
  );
});

t.test('the store: entries past the retention are deleted, refusal counts close with their minute', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-audit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = openDatabase(dir);
  let now = Date.parse('2026-11-25T12:00:10Z');
  const audit = new AuditLog(db, dir, pino({ level: 'silent' }), { retentionMs: 3_600_000 }, () => now);
  t.teardown(() => {
    audit.close();
    db.close();
  });
  const entry: AuditStart = {
    user: 'admin',
    role: 'admin',
    accessor: 'a',
    source: '10.0.0.1',
    method: 'POST',
    route: '/v1/jobs',
    resource: {},
    argv: null,
    decision: 'allow',
    reason: '',
  };
  audit.record(entry, { status: 201, durationMs: 1 });
  now += 30 * 60_000;
  audit.record(entry, { status: 202, durationMs: 1 });
  now += 45 * 60_000;
  t.equal(audit.expireOld(), 1, 'an hour and a quarter later the first entry has expired');
  t.same(
    audit.list(null, 100).map((e) => e.status),
    [202],
    'the newer one stays',
  );

  const refused: AuditStart = {
    ...entry,
    user: null,
    role: null,
    accessor: null,
    source: '10.0.0.9',
    method: 'GET',
    route: '/v1/nodes',
    decision: 'deny',
    reason: 'bad token',
  };
  for (let i = 0; i < 500; i++) audit.record(refused, { status: 401, durationMs: 1 });
  audit.record({ ...refused, route: '/v1/jobs' }, { status: 401, durationMs: 1 });
  const counted = audit.list(null, 100).filter((e) => e.source === '10.0.0.9');
  t.equal(counted.length, 1, '501 refusals from one source in one minute are one entry');
  t.match(counted[0], {
    count: 501,
    status: 401,
    route: '(several)',
    method: 'GET',
    user: null,
    reason: 'RANKD_UNAUTHORIZED: bad token',
    resource: { routes: '/v1/nodes /v1/jobs' },
  });
  const file = join(dir, 'audit.jsonl');
  t.notOk(
    lines(file).some((l) => l.source === '10.0.0.9'),
    'its line waits for the minute to end',
  );
  now += 60_000;
  audit.record(refused, { status: 401, durationMs: 1 });
  audit.flushRefusals();
  const written = lines(file).filter((l) => l.source === '10.0.0.9');
  t.same(
    written.map((l) => l.count),
    [501],
    'the minute over, its line is written once, with the final count',
  );
  t.equal(audit.list(null, 100).filter((e) => e.source === '10.0.0.9').length, 2, 'the next minute has its own entry');
});
