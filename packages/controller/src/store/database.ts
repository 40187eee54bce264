// The embedded store: one SQLite file in the data directory, opened in WAL mode so
// that REST readers never wait on the writers of heartbeats and log indexes.
import Database from 'better-sqlite3';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { migrations } from './migrations.js';

export type Db = Database.Database;

export function openDatabase(dataDir: string): Db {
  const path = join(dataDir, 'rankd.db');
  // created 0600 before SQLite opens it (SQLite would make it 0644 less the umask): its
  // -wal and -shm files take the main file's mode, so they are 0600 too
  closeSync(openSync(path, 'a', 0o600));
  const db = new Database(path);
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
