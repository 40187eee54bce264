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
  `
  CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    name             TEXT,
    idempotency_key  TEXT UNIQUE,
    state            TEXT NOT NULL,
    reason           TEXT NOT NULL DEFAULT '',
    submit           TEXT NOT NULL,
    rank_map         TEXT NOT NULL,
    exit_code        INTEGER,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    ended_at         INTEGER
  );
  CREATE INDEX jobs_created ON jobs(created_at);
  CREATE TABLE ranks (
    job_id        TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    rank          INTEGER NOT NULL,
    node          TEXT NOT NULL,
    state         TEXT NOT NULL,
    pid           INTEGER,
    started_at    INTEGER,
    ended_at      INTEGER,
    exit_code     INTEGER,
    signal        TEXT,
    binding       TEXT,
    error         TEXT,
    warnings      TEXT NOT NULL DEFAULT '[]',
    -- the log index: bytes stored per stream (the files under logs/ hold the bytes)
    stdout_bytes  INTEGER NOT NULL DEFAULT 0,
    stderr_bytes  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, rank)
  );
  CREATE INDEX ranks_node ON ranks(node, state);
  `,
  `
  -- The fleet inventory (groups, hosts, vars) as one document: imports replace or merge it whole.
  CREATE TABLE inventory (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    doc          TEXT NOT NULL,
    source       TEXT NOT NULL,
    format       TEXT NOT NULL,
    imported_at  INTEGER NOT NULL
  );
  `,
];
