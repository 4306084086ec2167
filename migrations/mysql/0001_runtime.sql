-- Upgrade: creates the actor runtime's tables (actors, messages with ready/claimed/dead membership, effects, reminders, outbox, broadcasts, lanes, processes, signals)
-- Heavy: none (new tables only)

-- MySQL 8.0+ and MariaDB 10.6+, InnoDB only. MySQL runs DDL outside
-- transactions, so every statement is written to be re-run safely (IF NOT
-- EXISTS): a file interrupted half-way is applied again whole.
--
-- Times are DATETIME(6) in UTC: the adapter pins every session's time_zone
-- to '+00:00' and computes leases and due times with NOW(6) (+ INTERVAL n
-- MICROSECOND) inside the statement that needs them.
--
-- Identifiers (types, IDs, names, owners, keys) are VARBINARY: byte order
-- equals Go's string order (the enqueue lock order), comparisons are exact
-- and case-sensitive, and no PAD SPACE collation makes "a" equal "a ".
--
-- JSON (state, arguments, results) is LONGTEXT utf8mb4_bin holding the
-- runtime's canonical encoding byte for byte. MySQL's JSON type would
-- rewrite it (key order, spaces), and a CHECK (JSON_VALID(...)) is evaluated
-- on every UPDATE of the row, re-parsing a 1 MiB state on each counter bump;
-- the runtime validates JSON before anything is written instead.
--
-- There are no foreign keys: InnoDB would take a shared lock on the parent
-- row for each child insert and cascade destroys row by row; the adapter
-- deletes an actor's rows explicitly in its destroy transaction.

-- One row per actor incarnation. pk is AUTO_INCREMENT, so a destroyed
-- actor's key is never reused (InnoDB keeps the counter across restarts on
-- MySQL 8 and MariaDB 10.6+). head_due is the due time of the actor's
-- earliest unfinished work (NULL when none), kept by every transaction that
-- changes it; the index leads with it so the candidate scan is a range scan
-- ordered by longest waiting, covering the lease and pause checks.
CREATE TABLE IF NOT EXISTS ductus_actors (
    pk            BIGINT         NOT NULL AUTO_INCREMENT,
    type          VARBINARY(255) NOT NULL,
    id            VARBINARY(2048) NOT NULL,
    state         LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    state_version INT            NOT NULL DEFAULT 0,
    next_seq      BIGINT         NOT NULL DEFAULT 1,
    unfinished    BIGINT         NOT NULL DEFAULT 0,
    head_due      DATETIME(6)    NULL,
    lease_owner   VARBINARY(255) NULL,
    lease_expires DATETIME(6)    NULL,
    generation    BIGINT         NOT NULL DEFAULT 0,
    paused        TINYINT(1)     NOT NULL DEFAULT 0,
    created_at    DATETIME(6)    NOT NULL,
    updated_at    DATETIME(6)    NOT NULL,
    PRIMARY KEY (pk),
    UNIQUE KEY ductus_actors_ref (type, id),
    KEY ductus_actors_head_due (head_due, lease_expires, paused, type),
    KEY ductus_actors_lease_owner (lease_owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Durable message history. Execution state is membership of the narrow
-- ready / claimed tables, so delivered history never enters the queue index.
-- NULL idempotency keys do not collide in a UNIQUE index on either server.
CREATE TABLE IF NOT EXISTS ductus_messages (
    id           BIGINT         NOT NULL AUTO_INCREMENT,
    actor_pk     BIGINT         NOT NULL,
    seq          BIGINT         NOT NULL,
    name         VARBINARY(255) NOT NULL,
    args         LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    idem_key     VARBINARY(512) NULL,
    ask          TINYINT(1)     NOT NULL DEFAULT 0,
    enqueued_at  DATETIME(6)    NOT NULL,
    available_at DATETIME(6)    NOT NULL,
    attempts     INT            NOT NULL DEFAULT 0,
    completed_at DATETIME(6)    NULL,
    dead_at      DATETIME(6)    NULL,
    result       LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    error        MEDIUMBLOB     NULL,
    PRIMARY KEY (id),
    UNIQUE KEY ductus_messages_seq (actor_pk, seq),
    UNIQUE KEY ductus_messages_idem (actor_pk, idem_key),
    KEY ductus_messages_completed (completed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ductus_ready (
    message_id BIGINT      NOT NULL,
    actor_pk   BIGINT      NOT NULL,
    seq        BIGINT      NOT NULL,
    due_at     DATETIME(6) NOT NULL,
    PRIMARY KEY (message_id),
    UNIQUE KEY ductus_ready_actor_seq (actor_pk, seq)
) ENGINE=InnoDB;

-- generation leads the seq in the index: a take reads "this generation's
-- rows in order" and re-adopts "older generations' rows" as index ranges.
CREATE TABLE IF NOT EXISTS ductus_claimed (
    message_id BIGINT      NOT NULL,
    actor_pk   BIGINT      NOT NULL,
    seq        BIGINT      NOT NULL,
    generation BIGINT      NOT NULL,
    attempt    INT         NOT NULL,
    claimed_at DATETIME(6) NOT NULL,
    PRIMARY KEY (message_id),
    KEY ductus_claimed_actor (actor_pk, generation, seq)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS ductus_dead_letters (
    message_id BIGINT         NOT NULL,
    actor_pk   BIGINT         NOT NULL,
    type       VARBINARY(255) NOT NULL,
    dead_at    DATETIME(6)    NOT NULL,
    PRIMARY KEY (message_id),
    KEY ductus_dead_letters_type (type, message_id),
    KEY ductus_dead_letters_actor (actor_pk)
) ENGINE=InnoDB;

-- Effects staged by turns. due_at doubles as the claim's lease expiry while
-- lease_owner is set. Without partial indexes, state and ordered lead the
-- indexes, so done and dead rows sit outside the ranges the claims scan.
-- Ordered effects are reached through their actor's lane row (kind
-- 'effect'), so only the head of each actor's ordered effects is a candidate.
CREATE TABLE IF NOT EXISTS ductus_effects (
    id           BIGINT         NOT NULL AUTO_INCREMENT,
    uuid         VARBINARY(128) NOT NULL,
    actor_pk     BIGINT         NOT NULL,
    name         VARBINARY(255) NOT NULL,
    args         LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    ordered      TINYINT(1)     NOT NULL,
    generation   BIGINT         NOT NULL,
    message_id   BIGINT         NOT NULL,
    on_success   VARBINARY(255) NULL,
    on_failure   VARBINARY(255) NULL,
    max_attempts INT            NOT NULL DEFAULT 0,
    state        VARBINARY(16)  NOT NULL DEFAULT 'pending',
    attempts     INT            NOT NULL DEFAULT 0,
    due_at       DATETIME(6)    NOT NULL,
    lease_owner  VARBINARY(255) NULL,
    result       LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    error        MEDIUMBLOB     NULL,
    created_at   DATETIME(6)    NOT NULL,
    finished_at  DATETIME(6)    NULL,
    PRIMARY KEY (id),
    UNIQUE KEY ductus_effects_uuid (uuid),
    KEY ductus_effects_unordered_due (state, ordered, due_at),
    KEY ductus_effects_ordered (actor_pk, state, ordered, id),
    KEY ductus_effects_state (state, id),
    KEY ductus_effects_finished (finished_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Actor-to-actor sends, delivered per source in staging order through the
-- source's lane row (kind 'send'). A pending row has delivered_at NULL (and
-- a due_at); the index puts a source's pending rows in one ordered range.
CREATE TABLE IF NOT EXISTS ductus_outbox (
    id           BIGINT          NOT NULL AUTO_INCREMENT,
    source_pk    BIGINT          NOT NULL,
    to_type      VARBINARY(255)  NOT NULL,
    to_id        VARBINARY(2048) NOT NULL,
    message      VARBINARY(255)  NOT NULL,
    args         LONGTEXT        CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    delay_us     BIGINT          NOT NULL DEFAULT 0,
    attempts     INT             NOT NULL DEFAULT 0,
    due_at       DATETIME(6)     NULL,
    lease_owner  VARBINARY(255)  NULL,
    created_at   DATETIME(6)     NOT NULL,
    delivered_at DATETIME(6)     NULL,
    message_id   BIGINT          NULL,
    PRIMARY KEY (id),
    KEY ductus_outbox_pending (source_pk, delivered_at, id),
    KEY ductus_outbox_delivered (delivered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per actor and kind ('effect' for ordered effects, 'send' for the
-- outbox) with pending work: due_at is when its head is due, or the claim's
-- lease expiry while a worker holds it.
CREATE TABLE IF NOT EXISTS ductus_lanes (
    actor_pk BIGINT        NOT NULL,
    kind     VARBINARY(16) NOT NULL,
    due_at   DATETIME(6)   NOT NULL,
    PRIMARY KEY (actor_pk, kind),
    KEY ductus_lanes_due (kind, due_at)
) ENGINE=InnoDB;

-- Named reminders. due_at is next_at, or the claim's lease expiry while a
-- scheduler holds it; occurrence counts fired occurrences and keys the
-- mailbox row of each ("reminder:<id>:<n>", unique per actor), so two
-- schedulers cannot enqueue one occurrence twice.
CREATE TABLE IF NOT EXISTS ductus_reminders (
    id          BIGINT         NOT NULL AUTO_INCREMENT,
    actor_pk    BIGINT         NOT NULL,
    name        VARBINARY(255) NOT NULL,
    message     VARBINARY(255) NOT NULL,
    args        LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    schedule    LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    next_at     DATETIME(6)    NOT NULL,
    due_at      DATETIME(6)    NOT NULL,
    lease_owner VARBINARY(255) NULL,
    occurrence  BIGINT         NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    UNIQUE KEY ductus_reminders_name (actor_pk, name),
    KEY ductus_reminders_due (due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Committed observable changes, tailed by every process by id.
CREATE TABLE IF NOT EXISTS ductus_broadcasts (
    id            BIGINT         NOT NULL AUTO_INCREMENT,
    actor_pk      BIGINT         NOT NULL,
    name          VARBINARY(255) NOT NULL,
    value         LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    state_version INT            NOT NULL,
    created_at    DATETIME(6)    NOT NULL,
    delivered_at  DATETIME(6)    NULL,
    PRIMARY KEY (id),
    KEY ductus_broadcasts_created (created_at),
    KEY ductus_broadcasts_actor (actor_pk)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ductus_processes (
    id           VARBINARY(255) NOT NULL,
    kind         VARBINARY(64)  NOT NULL,
    host         VARCHAR(255)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    pid          INT            NOT NULL,
    version      VARCHAR(255)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    metadata     LONGTEXT       CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    started_at   DATETIME(6)    NOT NULL,
    heartbeat_at DATETIME(6)    NOT NULL,
    stopped_at   DATETIME(6)    NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Cross-process wake-ups: MySQL has no LISTEN/NOTIFY, so transactions that
-- enqueue work or finish an awaited message add a row here, in the same
-- transaction, and every process polls the table by id (kind 1 = new work,
-- 2 = message_id finished). Listeners delete rows older than a minute.
CREATE TABLE IF NOT EXISTS ductus_signals (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    kind       TINYINT     NOT NULL,
    message_id BIGINT      NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    KEY ductus_signals_created (created_at)
) ENGINE=InnoDB;
