// Schema migrations, applied in order; entry i brings user_version from i to i+1.
// Never edit a published entry: append a new one.
export const migrations: readonly string[] = [
  `
  CREATE TABLE nodes (
    name          TEXT PRIMARY KEY,
    labels        TEXT NOT NULL DEFAULT '{}',
    address       TEXT,
    version       TEXT,
    capabilities  TEXT NOT NULL DEFAULT '[]',
    first_seen    INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    state         TEXT NOT NULL,
    state_reason  TEXT NOT NULL DEFAULT '',
    facts         TEXT,
    facts_hash    TEXT
  );
  -- The history of everything that happened, for humans and for the invariant checker.
  CREATE TABLE events (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    subject  TEXT NOT NULL,
    data     TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX events_subject ON events(subject, id);
  `,
];
