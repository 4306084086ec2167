-- Upgrade: creates the actor runtime's tables (actors, messages with results and ready/claimed/dead membership, effects, reminders, outbox, broadcasts, lanes, processes) and the ductus_raise helper
-- Heavy: none (new tables only)

-- Every name is unqualified: the adapter runs each connection with
-- search_path set to the configured schema, so several applications can
-- share one database in schemas of their own.
--
-- Times are timestamptz from the server's clock. Statements that pick
-- candidates or set expiries use now() (the transaction's start: stable, so
-- it can bound an index range scan, and an expiry measured from it is never
-- later than intended); the fenced commit checks its lease against
-- clock_timestamp() (the moment the actor row is locked), so a commit that
-- waited past its expiry is refused.
--
-- JSON columns are json, not jsonb: json keeps the caller's bytes exactly
-- (results and state come back byte for byte) and costs a validation only;
-- jsonb re-encodes (reorders keys, adds spaces) and was 2.7x slower to write
-- in a measurement on this schema's kind of payloads. The state filters of
-- the actor directory use json's #> operators, which need no jsonb.
--
-- The hot tables (messages, results, ready, claimed) have no foreign keys: each key
-- check is a query and a row lock per row, a large share of a message's cost.
-- Every writer locks the actor row first (enqueue's upsert, the take's key
-- share, the commit's fence, destroy's delete), so a destroyed actor can
-- gain no rows; destroy deletes the hot rows itself. The cold tables keep
-- their cascades.

-- ductus_raise fails the statement with a SQLSTATE of the adapter's own
-- (DX001 lost activation, DX002 mailbox full), so a pipelined transaction
-- stops at a fenced check instead of writing past it.
CREATE FUNCTION ductus_raise(code text, msg text, detail text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = detail;
END
$$;

-- One row per actor incarnation; pk comes from a sequence, so a destroyed
-- actor's key is never reused and a stale worker's fenced commit cannot
-- find the new incarnation. head_due is the due time of the actor's
-- earliest unfinished work (NULL when none), kept by every transaction that
-- changes it. The claim index orders actors by the moment they became
-- claimable, GREATEST(head_due, lease_expires) (GREATEST ignores NULLs):
-- an unleased actor ranks by head_due, an actor whose lease expired by the
-- expiry, and a leased one is out of range, so the claim's range scan
-- visits only claimable actors however many are busy. A commit that leaves
-- the head due keeps head_due as it was (it still reads "due"), so a busy
-- actor's commits and enqueues change no indexed column and stay HOT
-- updates (fillfactor leaves the room): they add nothing to the indexes.
CREATE TABLE ductus_actors (
    pk            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type          text        NOT NULL,
    id            text        NOT NULL,
    state         json,
    state_version integer     NOT NULL DEFAULT 0,
    next_seq      bigint      NOT NULL DEFAULT 1,
    unfinished    integer     NOT NULL DEFAULT 0,
    head_due      timestamptz,
    lease_owner   text,
    lease_expires timestamptz,
    generation    bigint      NOT NULL DEFAULT 0,
    paused        boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (type, id)
) WITH (fillfactor = 80);
CREATE INDEX ductus_actors_claimable ON ductus_actors ((GREATEST(head_due, lease_expires))) WHERE head_due IS NOT NULL AND NOT paused;
CREATE INDEX ductus_actors_lease_owner ON ductus_actors (lease_owner) WHERE lease_owner IS NOT NULL;

-- Durable message history, append-only: a message row is written once at
-- enqueue; its success is a row of ductus_results, its failures update it
-- (rare). Execution state is membership of the narrow ready / claimed
-- tables, so delivered history never enters the queue index. Keeping
-- completion out of this table means no message row is ever rewritten on
-- the hot path (an update of every row of a page cannot stay on the page,
-- so each would rewrite the row and all its index entries), and history
-- pages stay full.
CREATE TABLE ductus_messages (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor_pk     bigint      NOT NULL,
    seq          bigint      NOT NULL,
    name         text        NOT NULL,
    args         json        NOT NULL,
    idem_key     text,
    ask          boolean     NOT NULL DEFAULT false,
    enqueued_at  timestamptz NOT NULL,
    available_at timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    dead_at      timestamptz,
    error        text,
    UNIQUE (actor_pk, seq)
);
CREATE UNIQUE INDEX ductus_messages_idem ON ductus_messages (actor_pk, idem_key) WHERE idem_key IS NOT NULL;

-- One row per message that ran successfully: the attempt that did, when,
-- and the handler's result. Pruning walks it by message id.
CREATE TABLE ductus_results (
    message_id   bigint      PRIMARY KEY,
    attempt      integer     NOT NULL,
    completed_at timestamptz NOT NULL,
    result       json
);

-- Membership tables, keyed by (actor, sequence): the take reads an actor's
-- first K ready rows straight off the primary key. attempts is the
-- message's attempts so far, so the take needs no message row to number
-- the next one.
CREATE TABLE ductus_ready (
    actor_pk   bigint      NOT NULL,
    seq        bigint      NOT NULL,
    message_id bigint      NOT NULL,
    due_at     timestamptz NOT NULL,
    attempts   integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (actor_pk, seq)
) WITH (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);

CREATE TABLE ductus_claimed (
    actor_pk   bigint      NOT NULL,
    seq        bigint      NOT NULL,
    message_id bigint      NOT NULL,
    generation bigint      NOT NULL,
    attempt    integer     NOT NULL,
    claimed_at timestamptz NOT NULL,
    PRIMARY KEY (actor_pk, seq)
) WITH (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);

CREATE TABLE ductus_dead_letters (
    message_id bigint      PRIMARY KEY,
    actor_pk   bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    type       text        NOT NULL,
    dead_at    timestamptz NOT NULL
);
CREATE INDEX ductus_dead_letters_type ON ductus_dead_letters (type, message_id);
CREATE INDEX ductus_dead_letters_actor ON ductus_dead_letters (actor_pk);

-- Effects staged by turns. due_at doubles as the claim's lease expiry while
-- lease_owner is set. Ordered effects are reached through their actor's
-- lane row (kind 'effect'), so only the head of each actor's ordered
-- effects is ever a candidate. Ids come from a sequence without a cache, so
-- one actor's effects are numbered in staging order.
CREATE TABLE ductus_effects (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid         text        NOT NULL UNIQUE,
    actor_pk     bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name         text        NOT NULL,
    args         json        NOT NULL,
    ordered      boolean     NOT NULL,
    generation   bigint      NOT NULL,
    message_id   bigint      NOT NULL,
    on_success   text,
    on_failure   text,
    max_attempts integer     NOT NULL DEFAULT 0,
    state        text        NOT NULL DEFAULT 'pending',
    attempts     integer     NOT NULL DEFAULT 0,
    due_at       timestamptz NOT NULL,
    lease_owner  text,
    result       json,
    error        text,
    created_at   timestamptz NOT NULL,
    finished_at  timestamptz
);
CREATE INDEX ductus_effects_unordered_due ON ductus_effects (due_at) WHERE state = 'pending' AND NOT ordered;
CREATE INDEX ductus_effects_ordered ON ductus_effects (actor_pk, id) WHERE state = 'pending' AND ordered;
CREATE INDEX ductus_effects_actor ON ductus_effects (actor_pk);
CREATE INDEX ductus_effects_finished ON ductus_effects (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX ductus_effects_dead ON ductus_effects (id) WHERE state = 'dead';

-- Actor-to-actor sends, delivered per source in staging order through the
-- source's lane row (kind 'send'). due_at is NULL once delivered.
CREATE TABLE ductus_outbox (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_pk    bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    to_type      text        NOT NULL,
    to_id        text        NOT NULL,
    message      text        NOT NULL,
    args         json        NOT NULL,
    delay_us     bigint      NOT NULL DEFAULT 0,
    attempts     integer     NOT NULL DEFAULT 0,
    due_at       timestamptz,
    lease_owner  text,
    created_at   timestamptz NOT NULL,
    delivered_at timestamptz,
    message_id   bigint
);
CREATE INDEX ductus_outbox_pending ON ductus_outbox (source_pk, id) WHERE due_at IS NOT NULL;
CREATE INDEX ductus_outbox_source ON ductus_outbox (source_pk);
CREATE INDEX ductus_outbox_delivered ON ductus_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- One row per actor and kind ('effect' for ordered effects, 'send' for the
-- outbox) with pending work: due_at is when its head is due, or the claim's
-- lease expiry while a worker holds it. Whoever stages work into a lane
-- locks its row, and whoever settles a lane locks it before reading the
-- head, so a lane is never deleted under work it cannot see yet.
CREATE TABLE ductus_lanes (
    actor_pk bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    kind     text        NOT NULL,
    due_at   timestamptz NOT NULL,
    PRIMARY KEY (actor_pk, kind)
);
CREATE INDEX ductus_lanes_due ON ductus_lanes (kind, due_at);

-- Named reminders. due_at is next_at, or the claim's lease expiry while a
-- scheduler holds it; occurrence counts fired occurrences and keys the
-- mailbox row of each (unique per actor), so two schedulers cannot enqueue
-- one occurrence twice.
CREATE TABLE ductus_reminders (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor_pk    bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name        text        NOT NULL,
    message     text        NOT NULL,
    args        json        NOT NULL,
    schedule    json        NOT NULL,
    next_at     timestamptz NOT NULL,
    due_at      timestamptz NOT NULL,
    lease_owner text,
    occurrence  bigint      NOT NULL DEFAULT 0,
    UNIQUE (actor_pk, name)
);
CREATE INDEX ductus_reminders_due ON ductus_reminders (due_at);

-- Committed observable changes, tailed by every process by id.
CREATE TABLE ductus_broadcasts (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor_pk      bigint      NOT NULL REFERENCES ductus_actors (pk) ON DELETE CASCADE,
    name          text        NOT NULL,
    value         json        NOT NULL,
    state_version integer     NOT NULL,
    created_at    timestamptz NOT NULL,
    delivered_at  timestamptz
);
CREATE INDEX ductus_broadcasts_created ON ductus_broadcasts (created_at);
CREATE INDEX ductus_broadcasts_actor ON ductus_broadcasts (actor_pk);

CREATE TABLE ductus_processes (
    id           text        PRIMARY KEY,
    kind         text        NOT NULL,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    version      text        NOT NULL,
    metadata     json        NOT NULL DEFAULT '{}',
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    stopped_at   timestamptz
);
