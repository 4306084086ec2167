-- Upgrade: creates the actor runtime's tables (actors, messages with ready/claimed/dead membership, effects, reminders, outbox, broadcasts, lanes, processes)
-- Heavy: none (new tables only)

-- Times are integer microseconds since the Unix epoch, taken from SQLite's
-- own clock in the statement that needs them.

-- One row per actor incarnation. pk is AUTOINCREMENT so a destroyed actor's
-- key is never reused: a stale worker's fenced commit cannot find the new
-- incarnation. head_due is the due time of the actor's earliest unfinished
-- work (NULL when none), kept in every transaction that changes it, so
-- candidate selection is an index range scan ordered by longest waiting.
CREATE TABLE ductus_actors (
    pk            INTEGER PRIMARY KEY AUTOINCREMENT,
    type          TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    state         TEXT,
    state_version INTEGER NOT NULL DEFAULT 0,
    next_seq      INTEGER NOT NULL DEFAULT 1,
    unfinished    INTEGER NOT NULL DEFAULT 0,
    head_due      INTEGER,
    lease_owner   TEXT,
    lease_expires INTEGER,
    generation    INTEGER NOT NULL DEFAULT 0,
    paused        INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (type, id)
);
CREATE INDEX ductus_actors_head_due ON ductus_actors (head_due) WHERE head_due IS NOT NULL;
CREATE INDEX ductus_actors_lease_owner ON ductus_actors (lease_owner) WHERE lease_owner IS NOT NULL;

-- Durable message history. Execution state is membership of the narrow
-- ready / claimed tables, so delivered history never enters the queue index.
CREATE TABLE ductus_messages (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_pk     INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    name         TEXT    NOT NULL,
    args         TEXT    NOT NULL,
    idem_key     TEXT,
    ask          INTEGER NOT NULL DEFAULT 0,
    enqueued_at  INTEGER NOT NULL,
    available_at INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    completed_at INTEGER,
    dead_at      INTEGER,
    result       TEXT,
    error        TEXT,
    UNIQUE (actor_pk, seq)
);
CREATE UNIQUE INDEX ductus_messages_idem ON ductus_messages (actor_pk, idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX ductus_messages_completed ON ductus_messages (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE ductus_ready (
    message_id INTEGER PRIMARY KEY REFERENCES ductus_messages (id) ON DELETE CASCADE,
    actor_pk   INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    due_at     INTEGER NOT NULL
);
CREATE UNIQUE INDEX ductus_ready_actor_seq ON ductus_ready (actor_pk, seq);

CREATE TABLE ductus_claimed (
    message_id INTEGER PRIMARY KEY REFERENCES ductus_messages (id) ON DELETE CASCADE,
    actor_pk   INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    claimed_at INTEGER NOT NULL
);
CREATE INDEX ductus_claimed_actor ON ductus_claimed (actor_pk, seq);

CREATE TABLE ductus_dead_letters (
    message_id INTEGER PRIMARY KEY REFERENCES ductus_messages (id) ON DELETE CASCADE,
    actor_pk   INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    type       TEXT    NOT NULL,
    dead_at    INTEGER NOT NULL
);
CREATE INDEX ductus_dead_letters_type ON ductus_dead_letters (type, message_id);

-- Effects staged by turns. due_at doubles as the claim's lease expiry while
-- lease_owner is set. Ordered effects are reached through their actor's
-- lane row (kind 'effect'), so only the head of each actor's ordered
-- effects is ever a candidate.
CREATE TABLE ductus_effects (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid         TEXT    NOT NULL UNIQUE,
    actor_pk     INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    args         TEXT    NOT NULL,
    ordered      INTEGER NOT NULL,
    generation   INTEGER NOT NULL,
    message_id   INTEGER NOT NULL,
    on_success   TEXT,
    on_failure   TEXT,
    max_attempts INTEGER NOT NULL DEFAULT 0,
    state        TEXT    NOT NULL DEFAULT 'pending',
    attempts     INTEGER NOT NULL DEFAULT 0,
    due_at       INTEGER NOT NULL,
    lease_owner  TEXT,
    result       TEXT,
    error        TEXT,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX ductus_effects_unordered_due ON ductus_effects (due_at) WHERE state = 'pending' AND ordered = 0;
CREATE INDEX ductus_effects_ordered ON ductus_effects (actor_pk, id) WHERE state = 'pending' AND ordered = 1;
CREATE INDEX ductus_effects_finished ON ductus_effects (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX ductus_effects_dead ON ductus_effects (id) WHERE state = 'dead';

-- Actor-to-actor sends, delivered per source in staging order through the
-- source's lane row (kind 'send'). due_at is NULL once delivered.
CREATE TABLE ductus_outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    source_pk    INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    to_type      TEXT    NOT NULL,
    to_id        TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    args         TEXT    NOT NULL,
    delay_us     INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    due_at       INTEGER,
    lease_owner  TEXT,
    created_at   INTEGER NOT NULL,
    delivered_at INTEGER,
    message_id   INTEGER
);
CREATE INDEX ductus_outbox_pending ON ductus_outbox (source_pk, id) WHERE due_at IS NOT NULL;
CREATE INDEX ductus_outbox_delivered ON ductus_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- One row per actor and kind ('effect' for ordered effects, 'send' for the
-- outbox) with pending work: due_at is when its head is due, or the claim's
-- lease expiry while a worker holds it.
CREATE TABLE ductus_lanes (
    actor_pk INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    kind     TEXT    NOT NULL,
    due_at   INTEGER NOT NULL,
    PRIMARY KEY (actor_pk, kind)
);
CREATE INDEX ductus_lanes_due ON ductus_lanes (kind, due_at);

-- Named reminders. due_at is next_at, or the claim's lease expiry while a
-- scheduler holds it; occurrence counts fired occurrences and keys the
-- mailbox row of each (unique per actor), so two schedulers cannot enqueue
-- one occurrence twice.
CREATE TABLE ductus_reminders (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_pk    INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    message     TEXT    NOT NULL,
    args        TEXT    NOT NULL,
    schedule    TEXT    NOT NULL,
    next_at     INTEGER NOT NULL,
    due_at      INTEGER NOT NULL,
    lease_owner TEXT,
    occurrence  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (actor_pk, name)
);
CREATE INDEX ductus_reminders_due ON ductus_reminders (due_at);

-- Committed observable changes, tailed by every process by id.
CREATE TABLE ductus_broadcasts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_pk      INTEGER NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    state_version INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    delivered_at  INTEGER
);
CREATE INDEX ductus_broadcasts_created ON ductus_broadcasts (created_at);

CREATE TABLE ductus_processes (
    id           TEXT    PRIMARY KEY,
    kind         TEXT    NOT NULL,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT    NOT NULL,
    metadata     TEXT    NOT NULL DEFAULT '{}',
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER
);
