// The embedded store: one SQLite file in the data directory, opened in WAL mode so
// that REST readers never wait on the writers of heartbeats and log indexes.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { migrations } from './migrations.js';

export type Db = Database.Database;

export function openDatabase(dataDir: string): Db {
  const db = new Database(join(dataDir, 'rankd.db'));
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the last commits).
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/** Applies the migrations newer than the file's user_version, each in its own transaction. */
function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (let v = current; v < migrations.length; v++) {
    db.transaction(() => {
      db.exec(migrations[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
