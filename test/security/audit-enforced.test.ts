// The audit sink is enforced: when the entry of a mutating request cannot be written, the
// request fails with 503 RANKD_AUDIT_UNAVAILABLE and changes nothing; reads still work.
import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { startController } from '../helpers/daemons.js';

t.test('a mutating request whose audit entry cannot be written is not carried out', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const before = await controller.api('/v1/users', { method: 'POST', body: { name: 'before', role: 'reader' } });
  t.equal(before.status, 201, 'audited and done while the log can be written');

  // another connection makes every audit insert fail, as a full disk or a broken table would
  const db = new Database(join(controller.dataDir, 'rankd.db'));
  db.pragma('busy_timeout = 5000');
  db.exec(
    `CREATE TRIGGER audit_broken BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit log unwritable (test)'); END;`,
  );
  t.teardown(() => db.close());

  const refused = await controller.api<{ code: string; message: string }>('/v1/users', {
    method: 'POST',
    body: { name: 'during', role: 'reader' },
  });
  t.equal(refused.status, 503);
  t.equal(refused.body.code, 'RANKD_AUDIT_UNAVAILABLE');
  t.match(refused.body.message, /the audit log cannot be written .*; the request was not carried out/);
  const job = await controller.api('/v1/jobs', { method: 'POST', body: { command: ['true'] } });
  t.equal(job.status, 503, 'no job is submitted either');
  const users = await controller.api<{ users: Array<{ name: string }> }>('/v1/users');
  t.equal(users.status, 200, 'reads are not audited and still work');
  t.same(users.body.users.map((u) => u.name).sort(), ['admin', 'before'], 'the refused request changed nothing');

  db.exec('DROP TRIGGER audit_broken');
  const after = await controller.api('/v1/users', { method: 'POST', body: { name: 'after', role: 'reader' } });
  t.equal(after.status, 201, 'once the log can be written again, requests go through');
});
