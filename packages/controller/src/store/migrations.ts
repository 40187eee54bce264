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
  `
  -- Enrollment (docs/security.md). Join tokens are kept as SHA-256 of their secret only.
  CREATE TABLE join_tokens (
    id           TEXT PRIMARY KEY,
    secret_hash  TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    max_uses     INTEGER NOT NULL,
    uses         INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER
  );
  -- Every node certificate issued; a revoked serial stays refused.
  CREATE TABLE node_certs (
    serial       TEXT PRIMARY KEY,
    node         TEXT NOT NULL,
    spki_sha256  TEXT NOT NULL UNIQUE,
    issued_at    INTEGER NOT NULL,
    not_after    INTEGER NOT NULL,
    via          TEXT NOT NULL,
    revoked_at   INTEGER
  );
  CREATE INDEX node_certs_node ON node_certs(node);
  `,
  `
  -- Users and their API tokens. A token is stored as the SHA-256 of its secret, beside a
  -- public accessor that names it in lists and in the audit log.
  CREATE TABLE users (
    name        TEXT PRIMARY KEY,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'user', 'reader')),
    unix_user   TEXT,
    created_at  INTEGER NOT NULL
  );
  CREATE TABLE api_tokens (
    accessor      TEXT PRIMARY KEY,
    user_name     TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
    secret_sha256 BLOB NOT NULL UNIQUE,
    description   TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER
  );
  CREATE INDEX api_tokens_user ON api_tokens(user_name);
  -- who submitted each job (null for the jobs from before users existed)
  ALTER TABLE jobs ADD COLUMN owner TEXT;
  CREATE INDEX jobs_owner ON jobs(owner, created_at);
  `,
  `
  -- The audit log: every mutating request, shell session and exec, and every refusal.
  -- Principals are named by user and token accessor, never by the secret.
  CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    at           INTEGER NOT NULL,
    user_name    TEXT,
    role         TEXT,
    accessor     TEXT,
    source       TEXT NOT NULL,
    method       TEXT NOT NULL,
    route        TEXT NOT NULL,
    resource     TEXT NOT NULL DEFAULT '{}',
    argv         TEXT,
    argv_hash    TEXT,
    decision     TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    status       INTEGER,
    duration_ms  REAL
  );
  CREATE INDEX audit_at ON audit(at);
  `,
  `
  -- A drained node takes no new ranks until resumed (rankd node drain / resume).
  ALTER TABLE nodes ADD COLUMN drain_reason TEXT;
  ALTER TABLE nodes ADD COLUMN drain_by TEXT;
  ALTER TABLE nodes ADD COLUMN drain_at INTEGER;
  `,
  `
  -- The queue and allocations (issue 14). A queued job has no rank map yet ('null'); its
  -- demand is what its plan on the idle cluster asks for. A started job's allocation is
  -- the cores and GPUs it holds until its last rank's exit is recorded.
  ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE jobs ADD COLUMN demand TEXT;
  ALTER TABLE jobs ADD COLUMN allocation TEXT;
  CREATE INDEX jobs_state ON jobs(state);
  `,
  `
  -- A job's rank map and allocation are written once, when it starts, and grow with it
  -- (2,000 nodes × 8 ranks: some 12 MB). SQLite rewrites a whole row at every UPDATE, so
  -- they leave the jobs row, which changes at each state transition.
  CREATE TABLE job_plans (
    job_id      TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    rank_map    TEXT NOT NULL,
    allocation  TEXT
  );
  INSERT INTO job_plans (job_id, rank_map, allocation) SELECT id, rank_map, allocation FROM jobs WHERE rank_map != 'null';
  ALTER TABLE jobs DROP COLUMN rank_map;
  ALTER TABLE jobs DROP COLUMN allocation;
  `,
  `
  -- Dashboard sessions outlive a controller restart. Only the SHA-256 of a session id is
  -- kept (the cookie holds the id); its CSRF token is derived from the id, never stored.
  CREATE TABLE dashboard_sessions (
    key         TEXT PRIMARY KEY,
    accessor    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
  );
  CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
  `,
  `
  -- The names (never the values) of the environment a job, exec or shell sets, as JSON:
  -- a LD_PRELOAD or GCONV_PATH in a request shows in its audit entry.
  ALTER TABLE audit ADD COLUMN env_names TEXT;
  `,
  `
  -- Refusals anyone can cause at will (401, 429, 413, too deep, too many connections) are
  -- one row per source, minute and reason, with how many there were.
  ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
  `,
  `
  -- rankd jobs --state: the newest jobs of a state come straight from this index (in order,
  -- LIMIT rows read); on state alone, SQLite read every job of that state and sorted them.
  -- It serves the restart's active-job query (state IN …) as well as jobs_state did.
  DROP INDEX jobs_state;
  CREATE INDEX jobs_state_created ON jobs(state, created_at);
  `,
  `
  -- Gang restarts (rankd run --max-restarts): a job runs as attempts 0, 1, …, each with ranks
  -- of its own, so a rank row is keyed by its attempt too. The jobs row keeps the current
  -- attempt, the nodes the failed attempts left out, and when a delayed restart is due: all
  -- written in the transaction that ends an attempt, so a controller killed at any moment
  -- comes back knowing exactly how many attempts ran and what comes next.
  ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE jobs ADD COLUMN excluded TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE jobs ADD COLUMN restart_at INTEGER;
  CREATE TABLE ranks_by_attempt (
    job_id        TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL DEFAULT 0,
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
    stdout_bytes  INTEGER NOT NULL DEFAULT 0,
    stderr_bytes  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt, rank)
  );
  INSERT INTO ranks_by_attempt (job_id, rank, node, state, pid, started_at, ended_at, exit_code, signal, binding,
      error, warnings, stdout_bytes, stderr_bytes)
    SELECT job_id, rank, node, state, pid, started_at, ended_at, exit_code, signal, binding,
      error, warnings, stdout_bytes, stderr_bytes FROM ranks;
  DROP TABLE ranks;
  ALTER TABLE ranks_by_attempt RENAME TO ranks;
  CREATE INDEX ranks_node ON ranks(node, state);
  -- One row per attempt that started: its nodes, how it ended, its first failure (JSON) and
  -- the nodes that failure left out of the next attempts (JSON).
  CREATE TABLE attempts (
    job_id         TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt        INTEGER NOT NULL,
    state          TEXT NOT NULL,
    reason         TEXT NOT NULL DEFAULT '',
    nodes          TEXT NOT NULL,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    exit_code      INTEGER,
    first_failure  TEXT,
    excluded       TEXT NOT NULL DEFAULT '[]',
    restart_delay  INTEGER,
    PRIMARY KEY (job_id, attempt)
  );
  -- A node that failed an attempt (lost, or a rank killed by SIGBUS/SIGSEGV), for the
  -- controller's --exclude-after: K such failures within an hour drain the node.
  CREATE TABLE node_failures (
    node     TEXT NOT NULL,
    at       INTEGER NOT NULL,
    job_id   TEXT NOT NULL,
    attempt  INTEGER NOT NULL,
    reason   TEXT NOT NULL
  );
  CREATE INDEX node_failures_node ON node_failures(node, at);
  `,
  `
  -- Heartbeats: SQLite rewrites a whole row at every UPDATE, and a node's row holds its facts
  -- (about 11 KB for a 2-socket node), so writing last_seen there cost 3-5x a narrow row at
  -- every flush of 2,000 heartbeats. The time a node was last heard of lives here; nodes.last_seen
  -- keeps the time of its last (re)connect.
  CREATE TABLE node_seen (
    name       TEXT PRIMARY KEY,
    last_seen  INTEGER NOT NULL
  ) WITHOUT ROWID;
  INSERT INTO node_seen (name, last_seen) SELECT name, last_seen FROM nodes;
  `,
  `
  -- Fabric checks (rankd check net, rankd check allreduce): one row per check, its whole
  -- result as JSON, read back whole; the columns are what a listing shows.
  CREATE TABLE checks (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER NOT NULL,
    by_user     TEXT,
    pattern     TEXT NOT NULL,
    nodes       INTEGER NOT NULL,
    flagged     TEXT NOT NULL,
    result      TEXT NOT NULL
  );
  CREATE INDEX checks_kind ON checks(kind, started_at);
  `,
];
