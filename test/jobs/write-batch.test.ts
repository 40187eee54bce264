// The controller's per-turn write batch on a real SQLite file: the writes of one turn
// share one commit, a second connection sees none of them before it, and messages held
// for the commit leave only after it, in order.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { WriteBatch } from '#controller/store/write-batch';

function store(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-batch-'));
  const db = openDatabase(dir);
  const reader = new Database(join(dir, 'rankd.db'), { readonly: true });
  t.teardown(() => {
    reader.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const count = () => (reader.prepare("SELECT count(*) AS n FROM events WHERE kind = 'test'").get() as { n: number }).n;
  return { db, events: new EventsRepo(db), count, batch: new WriteBatch(db, pino({ level: 'silent' })) };
}

t.test('the writes of one turn are committed together, at the end of the turn', async (t) => {
  const { db, events, count, batch } = store(t);
  const sent: string[] = [];
  for (let i = 0; i < 100; i++) {
    batch.within(() => {
      events.append('test', `w${i}`);
      batch.afterCommit(() => sent.push(`m${i}`));
    });
  }
  t.ok(db.inTransaction, 'one transaction is open across the 100 frames');
  t.equal(count(), 0, 'another connection sees nothing before the commit');
  t.same(sent, [], 'no message leaves before the commit');
  await nextTurn();
  t.notOk(db.inTransaction, 'committed in the check phase of the turn');
  t.equal(count(), 100, 'all 100 writes are visible after it');
  t.same(
    sent,
    Array.from({ length: 100 }, (_, i) => `m${i}`),
    'then the held messages leave, in order',
  );
});

t.test('flush commits at once; afterCommit without an open batch sends at once', async (t) => {
  const { db, events, count, batch } = store(t);
  const sent: string[] = [];
  batch.afterCommit(() => sent.push('now'));
  t.same(sent, ['now'], 'nothing open: nothing to wait for');
  batch.within(() => events.append('test', 'a'));
  batch.afterCommit(() => sent.push('after a'));
  batch.flush();
  t.notOk(db.inTransaction);
  t.equal(count(), 1, 'a REST answer about to leave finds its write committed');
  t.same(sent, ['now', 'after a']);
  // the turn's scheduled commit finds nothing open, and the next write opens a new batch
  await nextTurn();
  batch.within(() => events.append('test', 'b'));
  t.ok(db.inTransaction);
  await nextTurn();
  t.equal(count(), 2);
});

t.test('a transaction function inside the batch is nested, and one opened by someone else is left alone', async (t) => {
  const { db, events, count, batch } = store(t);
  const two = db.transaction(() => {
    events.append('test', 'x');
    events.append('test', 'y');
  });
  batch.within(() => two());
  t.ok(db.inTransaction, 'the nested transaction ended as a savepoint; the batch is still open');
  t.equal(count(), 0);
  await nextTurn();
  t.equal(count(), 2);
  // inside someone else's transaction the batch opens nothing of its own
  db.transaction(() => batch.within(() => events.append('test', 'z')))();
  t.notOk(db.inTransaction, 'the outer transaction committed it');
  t.equal(count(), 3);
  await nextTurn();
});

t.test('a failed write in one frame does not undo the others of the turn', async (t) => {
  const { events, count, batch, db } = store(t);
  batch.within(() => events.append('test', 'before'));
  t.throws(() => batch.within(() => db.prepare('INSERT INTO no_such_table VALUES (1)').run()), /no such table/);
  batch.within(() => events.append('test', 'after'));
  await nextTurn();
  t.equal(count(), 2, 'both good writes are committed');
});
