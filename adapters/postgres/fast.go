package postgres

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// The enqueue is one statement when it can be (every actor of the batch may
// be created, or none may): a chain of data-modifying CTEs that checks
// idempotency keys, upserts (or locks) the actors in the batch's (type, id)
// order while allocating their sequences under the cap, inserts the
// messages and their ready rows, and reports each message. A full mailbox
// fails the statement with DX002 unless SkipFull.
//
// A key checked against the statement's snapshot can miss a concurrent
// enqueue of the same key that committed while this statement waited for
// the actor's lock; the unique index then refuses the insert (23505) and
// MailboxEnqueue redoes the batch with the general path, which locks first
// and reads keys after.
//
// Two shapes. A batch for one actor (every Tell) joins nothing but
// one-row CTEs, so it plans fast and its generic plan is good at any size.
// A batch over many actors joins its messages to their actors; that join
// must be a hash join once the batch is large, which only a plan made for
// the actual arrays chooses, so above 32 messages the batch asks for a
// custom plan for its own implicit transaction (the connections default to
// generic plans, see Open).

const (
	// oneInput is the one-actor batch: $1, $2 name the actor; the
	// messages are arrays; $10 is the cap (<= 0: none), $11 the system
	// allowance, $12 SkipFull.
	oneInput = `WITH m AS (
    SELECT * FROM unnest($3::text[], $4::json[], $5::text[], $6::bool[], $7::timestamptz[], $8::bigint[], $9::bool[])
        WITH ORDINALITY AS m(name, args, key, ask, avail, delay, sys, ord)
),
dup AS (
    SELECT m.ord, x.id, x.actor_pk, x.seq FROM m
    JOIN ductus_actors a ON a.type = $1 AND a.id = $2
    JOIN ductus_messages x ON x.actor_pk = a.pk AND x.idem_key = m.key AND x.idem_key IS NOT NULL
    WHERE m.key <> ''
),
f AS (
    SELECT m.*, row_number() OVER (ORDER BY m.ord) - 1 AS pos FROM m WHERE NOT EXISTS (SELECT 1 FROM dup WHERE dup.ord = m.ord)
),
g AS (
    SELECT count(*)::int AS n,
        CASE WHEN $10::int > 0 THEN $10::int + CASE WHEN bool_and(f.sys) THEN $11::int ELSE 0 END END AS lim,
        (SELECT COALESCE(f1.avail, now() + f1.delay` + us + `) FROM f f1 WHERE f1.pos = 0) AS due
    FROM f
),
`
	oneUpsert = `up AS (
    INSERT INTO ductus_actors AS a (type, id, next_seq, unfinished, head_due)
    SELECT $1, $2, g.n + 1, g.n, g.due FROM g WHERE g.n > 0 AND (g.lim IS NULL OR g.n <= g.lim)
    ON CONFLICT (type, id) DO UPDATE SET next_seq = a.next_seq + excluded.unfinished,
        unfinished = a.unfinished + excluded.unfinished,
        head_due = COALESCE(a.head_due, excluded.head_due), updated_at = now()
    WHERE a.unfinished + excluded.unfinished <= COALESCE((SELECT g.lim FROM g), 2147483647)
    RETURNING a.pk, a.next_seq
),
`
	oneLock = `lk AS (
    SELECT pk FROM ductus_actors WHERE type = $1 AND id = $2 AND EXISTS (SELECT 1 FROM g WHERE g.n > 0) FOR NO KEY UPDATE
),
up AS (
    UPDATE ductus_actors a SET next_seq = a.next_seq + g.n, unfinished = a.unfinished + g.n,
        head_due = COALESCE(a.head_due, g.due), updated_at = now()
    FROM lk, g WHERE a.pk = lk.pk AND (g.lim IS NULL OR a.unfinished + g.n <= g.lim)
    RETURNING a.pk, a.next_seq
),
`
	oneInsert = `ins AS (
    INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
    SELECT up.pk, up.next_seq - g.n + f.pos, f.name, f.args, NULLIF(f.key, ''), f.ask, now(), COALESCE(f.avail, now() + f.delay` + us + `)
    FROM up, g, f ORDER BY f.ord
    RETURNING id, actor_pk, seq, available_at
),
rdy AS (
    INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT actor_pk, seq, id, available_at FROM ins
)
SELECT 0::bigint, id, actor_pk, seq, 0 FROM ins
UNION ALL SELECT ord, id, actor_pk, seq, 1 FROM dup
`
	oneFull = `UNION ALL SELECT 0, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', '1')::int END
    FROM g WHERE g.n > 0 AND NOT EXISTS (SELECT 1 FROM up)`

	sqlEnqueueOne       = oneInput + oneUpsert + oneInsert + oneFull
	sqlEnqueueOneExists = oneInput + oneLock + oneInsert + `UNION ALL SELECT 0, 0, 0, 0, 3 FROM g WHERE g.n > 0 AND NOT EXISTS (SELECT 1 FROM lk)
UNION ALL SELECT 0, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', '1')::int END
    FROM g WHERE g.n > 0 AND EXISTS (SELECT 1 FROM lk) AND NOT EXISTS (SELECT 1 FROM up)`

	// manyInput is the many-actor batch: per message its actor ($1, $2)
	// and its group's ordinal in lock order ($9); $10 is the cap, $11 the
	// allowance, $12 SkipFull.
	manyInput = `WITH m AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::json[], $5::text[], $6::bool[], $7::timestamptz[], $8::bigint[], $9::int[], $13::bool[])
        WITH ORDINALITY AS m(type, id, name, args, key, ask, avail, delay, grp, sys, ord)
),
dup AS (
    SELECT m.ord, x.id AS mid, x.actor_pk, x.seq
    FROM m CROSS JOIN LATERAL (SELECT pk FROM ductus_actors WHERE type = m.type AND id = m.id OFFSET 0) a
    CROSS JOIN LATERAL (SELECT id, actor_pk, seq FROM ductus_messages
        WHERE actor_pk = a.pk AND idem_key = m.key AND idem_key IS NOT NULL OFFSET 0) x
    WHERE m.key <> ''
),
f AS (
    SELECT m.*, row_number() OVER (PARTITION BY m.grp ORDER BY m.ord) - 1 AS pos
    FROM m WHERE NOT EXISTS (SELECT 1 FROM dup WHERE dup.ord = m.ord)
),
g AS (
    SELECT f.grp, f.type, f.id, count(*)::int AS n,
        CASE WHEN $10::int > 0 THEN $10::int + CASE WHEN bool_and(f.sys) THEN $11::int ELSE 0 END END AS lim
    FROM f GROUP BY f.grp, f.type, f.id
),
h AS (
    SELECT f.grp, COALESCE(f.avail, now() + f.delay` + us + `) AS due FROM f WHERE f.pos = 0
),
`
	// manyUpsert: ON CONFLICT locks the row even when its WHERE refuses
	// the update. Without system messages every group's limit is the cap;
	// with them the limit is looked up per group (a correlated scan of g,
	// quadratic in the groups, so only for those batches).
	manyUpsertHead = `up AS (
    INSERT INTO ductus_actors AS a (type, id, next_seq, unfinished, head_due)
    SELECT g.type, g.id, g.n + 1, g.n, h.due FROM g JOIN h ON h.grp = g.grp
    WHERE g.lim IS NULL OR g.n <= g.lim
    ORDER BY g.grp
    ON CONFLICT (type, id) DO UPDATE SET next_seq = a.next_seq + excluded.unfinished,
        unfinished = a.unfinished + excluded.unfinished,
        head_due = COALESCE(a.head_due, excluded.head_due), updated_at = now()
`
	manyUpsertCap = `    WHERE $10::int <= 0 OR a.unfinished + excluded.unfinished <= $10::int
    RETURNING a.pk, a.type, a.id, a.next_seq
),
`
	manyUpsertSys = `    WHERE a.unfinished + excluded.unfinished <= COALESCE((SELECT g.lim FROM g WHERE g.type = excluded.type AND g.id = excluded.id), 2147483647)
    RETURNING a.pk, a.type, a.id, a.next_seq
),
`
	manyLock = `lk AS (
    SELECT a.pk, g.grp FROM g JOIN ductus_actors a ON a.type = g.type AND a.id = g.id
    ORDER BY g.grp FOR NO KEY UPDATE OF a
),
up AS (
    UPDATE ductus_actors a SET next_seq = a.next_seq + g.n, unfinished = a.unfinished + g.n,
        head_due = COALESCE(a.head_due, h.due), updated_at = now()
    FROM lk JOIN g ON g.grp = lk.grp JOIN h ON h.grp = g.grp
    WHERE a.pk = lk.pk AND (g.lim IS NULL OR a.unfinished + g.n <= g.lim)
    RETURNING a.pk, a.type, a.id, a.next_seq
),
`
	manyInsert = `ins AS (
    INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
    SELECT up.pk, up.next_seq - g.n + f.pos, f.name, f.args, NULLIF(f.key, ''), f.ask, now(), COALESCE(f.avail, now() + f.delay` + us + `)
    FROM f JOIN g ON g.grp = f.grp JOIN up ON up.type = g.type AND up.id = g.id
    ORDER BY f.ord
    RETURNING id, actor_pk, seq, available_at
),
rdy AS (
    INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT actor_pk, seq, id, available_at FROM ins
)
SELECT 0::bigint, id, actor_pk, seq, 0 FROM ins
UNION ALL SELECT ord, mid, actor_pk, seq, 1 FROM dup
UNION ALL SELECT g.grp, 0, up.pk, 0, 4 FROM up JOIN g ON g.type = up.type AND g.id = up.id
`
	manyFull = `UNION ALL
SELECT g.grp, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', g.grp::text)::int END
FROM g WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.type = g.type AND up.id = g.id)`

	sqlEnqueueMany       = manyInput + manyUpsertHead + manyUpsertCap + manyInsert + manyFull
	sqlEnqueueManySystem = manyInput + manyUpsertHead + manyUpsertSys + manyInsert + manyFull
	sqlEnqueueManyExists = manyInput + manyLock + manyInsert + `UNION ALL
SELECT g.grp, 0, 0, 0, 3 FROM g WHERE NOT EXISTS (SELECT 1 FROM lk WHERE lk.grp = g.grp)
UNION ALL
SELECT g.grp, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', g.grp::text)::int END
FROM g WHERE EXISTS (SELECT 1 FROM lk WHERE lk.grp = g.grp) AND NOT EXISTS (SELECT 1 FROM up WHERE up.type = g.type AND up.id = g.id)`

	// The leanest shapes, for one actor and no idempotency keys (every
	// plain Tell): nothing to deduplicate, so the count, the limit and the
	// head's due time come from Go and the statement plans and runs like a
	// three-row insert. $1, $2 actor; $3 n; $4, $5 the first message's due
	// time; $6 the limit (<= 0: none); $7..$11 the message(s); $12
	// SkipFull.
	plainUpsert = `WITH up AS (
    INSERT INTO ductus_actors AS a (type, id, next_seq, unfinished, head_due)
    SELECT $1, $2, $3::int + 1, $3::int, COALESCE($4::timestamptz, now() + $5::bigint` + us + `)
    WHERE $6::int <= 0 OR $3::int <= $6::int
    ON CONFLICT (type, id) DO UPDATE SET next_seq = a.next_seq + excluded.unfinished,
        unfinished = a.unfinished + excluded.unfinished,
        head_due = COALESCE(a.head_due, excluded.head_due), updated_at = now()
    WHERE $6::int <= 0 OR a.unfinished + excluded.unfinished <= $6::int
    RETURNING a.pk, a.next_seq
),
`
	plainLock = `WITH lk AS (
    SELECT pk FROM ductus_actors WHERE type = $1 AND id = $2 FOR NO KEY UPDATE
),
up AS (
    UPDATE ductus_actors a SET next_seq = a.next_seq + $3::int, unfinished = a.unfinished + $3::int,
        head_due = COALESCE(a.head_due, COALESCE($4::timestamptz, now() + $5::bigint` + us + `)), updated_at = now()
    FROM lk WHERE a.pk = lk.pk AND ($6::int <= 0 OR a.unfinished + $3::int <= $6::int)
    RETURNING a.pk, a.next_seq
),
`
	plainOne  = `(SELECT $7::text AS name, $8::json AS args, $9::bool AS ask, $10::timestamptz AS avail, $11::bigint AS delay, 1::bigint AS ord) m`
	plainRun  = `unnest($7::text[], $8::json[], $9::bool[], $10::timestamptz[], $11::bigint[]) WITH ORDINALITY AS m(name, args, ask, avail, delay, ord)`
	plainTail = `
    ORDER BY m.ord
    RETURNING id, actor_pk, seq, available_at
),
rdy AS (
    INSERT INTO ductus_ready (actor_pk, seq, message_id, due_at) SELECT actor_pk, seq, id, available_at FROM ins
)
SELECT 0::bigint, id, actor_pk, seq, 0 FROM ins
`
	plainFull = `UNION ALL SELECT 0, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', '1')::int END
    WHERE NOT EXISTS (SELECT 1 FROM up)`
	plainFullExists = `UNION ALL SELECT 0, 0, 0, 0, 3 WHERE NOT EXISTS (SELECT 1 FROM lk)
UNION ALL SELECT 0, 0, 0, 0, CASE WHEN $12::bool THEN 2 ELSE ductus_raise('` + codeMailboxFull + `', 'mailbox full', '1')::int END
    WHERE EXISTS (SELECT 1 FROM lk) AND NOT EXISTS (SELECT 1 FROM up)`
	plainInsert = `ins AS (
    INSERT INTO ductus_messages (actor_pk, seq, name, args, ask, enqueued_at, available_at)
    SELECT up.pk, up.next_seq - $3::int + m.ord - 1, m.name, m.args, m.ask, now(), COALESCE(m.avail, now() + m.delay` + us + `)
    FROM up, `

	// plainHot advances an actor this backend enqueued to before (its key
	// is $12, from the PKCache) with a plain UPDATE by primary key: no ON
	// CONFLICT arbiter check and no tuple lock written before the update,
	// which the upsert and the locking forms pay on every Tell (17% more
	// Tells per second with 16 clients, CPU-bound, in pgbench). It reports
	// nothing when no row was advanced (the actor was destroyed, or its
	// mailbox is full); MailboxEnqueue then runs the full form, which says
	// which. A key is never reused, so type and id need no check.
	plainHot = `WITH up AS (
    UPDATE ductus_actors a SET next_seq = a.next_seq + $3::int, unfinished = a.unfinished + $3::int,
        head_due = COALESCE(a.head_due, COALESCE($4::timestamptz, now() + $5::bigint` + us + `)), updated_at = now()
    WHERE a.pk = $12::bigint AND ($6::int <= 0 OR a.unfinished + $3::int <= $6::int)
        AND $1::text IS NOT NULL AND $2::text IS NOT NULL
    RETURNING a.pk, a.next_seq
),
`

	sqlTellOneHot    = plainHot + plainInsert + plainOne + plainTail
	sqlTellRunHot    = plainHot + plainInsert + plainRun + plainTail
	sqlTellOne       = plainUpsert + plainInsert + plainOne + plainTail + plainFull
	sqlTellRun       = plainUpsert + plainInsert + plainRun + plainTail + plainFull
	sqlTellOneExists = plainLock + plainInsert + plainOne + plainTail + plainFullExists
	sqlTellRunExists = plainLock + plainInsert + plainRun + plainTail + plainFullExists

	sqlPlanMode = `SELECT set_config('plan_cache_mode', $1, true)`
)

// Result kinds of the one-statement enqueue.
const (
	kindInserted = 0
	kindDup      = 1
	kindFull     = 2
	kindDropped  = 3
	kindActor    = 4 // a group's actor (many-actor form)
)

// fastFits reports whether the batch can take the one-statement path
// (every group may create its actor, or none may) and whether any message
// carries an idempotency key.
func fastFits(msgs []store.NewMessage, plan []store.EnqueueGroup) (fits, keys bool) {
	creates := 0
	for _, g := range plan {
		if g.Create {
			creates++
		}
	}
	for _, m := range msgs {
		if m.IdempotencyKey != "" {
			keys = true
			break
		}
	}
	return creates == 0 || creates == len(plan), keys
}

// fastArgs are the one-statement enqueue's array parameters, one entry per
// message sent (repeats of a key within the batch stay in Go).
type fastArgs struct {
	types, ids, names, keys []string
	args                    [][]byte
	ask, sys                []bool
	avail                   []pgtype.Timestamptz
	delay                   []int64
	grp                     []int32
	idx                     []int // the message's index in the batch
}

func (a *fastArgs) add(m store.NewMessage, grp, idx int) {
	a.types = append(a.types, m.Ref.Type)
	a.ids = append(a.ids, m.Ref.ID)
	a.names = append(a.names, m.Name)
	a.args = append(a.args, m.Args)
	a.keys = append(a.keys, m.IdempotencyKey)
	a.ask = append(a.ask, m.Ask)
	a.sys = append(a.sys, m.System)
	a.avail = append(a.avail, timestamptz(m.AvailableAt))
	a.delay = append(a.delay, store.Micros(m.Delay))
	a.grp = append(a.grp, int32(grp))
	a.idx = append(a.idx, idx)
}

// fastEnqueue is a one-statement enqueue queued in a batch; done turns
// the batch's outcome into the results.
type fastEnqueue struct {
	p        *store.MailboxEnqueueParams
	plan     []store.EnqueueGroup
	a        fastArgs
	results  []store.EnqueueResult
	firsts   []map[string]int
	full     []bool
	dropped  []bool
	dup      map[int64]bool // sent ordinal (1-based) -> duplicate of a stored key
	inserted [][3]int64     // (id, actor pk, seq) of the messages written
	pkOf     []int64        // each group's actor
	byGroup  [][]int64      // sent ordinals of each group, in order
	hot      bool           // the plain-UPDATE form ran: nothing written means "run the full form"
}

// queueFast queues the one-statement enqueue (and its NOTIFY) into bt.
// With hot, a plain Tell (one actor, no keys) to an actor in the PKCache
// takes the plain-UPDATE form: the caller checks missed and runs the full
// form when it applies.
func (b *Backend) queueFast(bt *batch, p *store.MailboxEnqueueParams, plan []store.EnqueueGroup, hot bool) *fastEnqueue {
	msgs := p.Messages
	f := &fastEnqueue{p: p, plan: plan, results: make([]store.EnqueueResult, len(msgs)),
		firsts: make([]map[string]int, len(plan)), full: make([]bool, len(plan)), dropped: make([]bool, len(plan)),
		dup: map[int64]bool{}, pkOf: make([]int64, len(plan)), byGroup: make([][]int64, len(plan))}
	system, exists := false, !plan[0].Create
	for gi, g := range plan {
		fresh, first := store.SplitDuplicates(msgs, g, nil, f.results)
		f.firsts[gi] = first
		for _, i := range fresh {
			f.a.add(msgs[i], gi+1, i)
			f.byGroup[gi] = append(f.byGroup[gi], int64(len(f.a.idx)))
			system = system || msgs[i].System
		}
	}
	a := &f.a
	scan := func(rows pgx.Rows) error {
		var ord, id, pk, seq int64
		var kind int32
		if err := rows.Scan(&ord, &id, &pk, &seq, &kind); err != nil {
			return err
		}
		switch kind {
		case kindInserted:
			f.inserted = append(f.inserted, [3]int64{id, pk, seq})
			if len(plan) == 1 {
				f.pkOf[0] = pk
			}
		case kindActor:
			f.pkOf[ord-1] = pk
		case kindDup:
			f.dup[ord] = true
			f.results[a.idx[ord-1]] = store.EnqueueResult{MessageID: id, ActorPK: pk, Seq: seq, Duplicate: true}
		case kindFull:
			f.full[max(ord, 1)-1] = true
		case kindDropped:
			f.dropped[max(ord, 1)-1] = true
		}
		return nil
	}
	capArgs := []any{int32(p.MailboxCap), int32(p.SystemAllowance), p.SkipFull}
	if keys := slices.ContainsFunc(a.keys, func(k string) bool { return k != "" }); len(plan) == 1 && !keys {
		// In-batch key repeats cannot exist without keys, so every
		// message is fresh and the limit is known here.
		lim := int32(0)
		if p.MailboxCap > 0 {
			lim = int32(p.MailboxCap)
			if !slices.Contains(a.sys, false) {
				lim += int32(p.SystemAllowance)
			}
		}
		n := len(a.idx)
		head := []any{plan[0].Ref.Type, plan[0].Ref.ID, int32(n), a.avail[0], a.delay[0], lim}
		q, msg := sqlTellRun, []any{a.names, a.args, a.ask, a.avail, a.delay}
		if n == 1 {
			q, msg = sqlTellOne, []any{a.names[0], a.args[0], a.ask[0], a.avail[0], a.delay[0]}
		}
		pk, known := b.pks.Get(plan[0].Ref)
		switch {
		case hot && known:
			f.hot = true
			q = map[string]string{sqlTellOne: sqlTellOneHot, sqlTellRun: sqlTellRunHot}[q]
			bt.query("enqueue: insert messages", scan, q, append(append(head, msg...), pk)...)
		case exists:
			q = map[string]string{sqlTellOne: sqlTellOneExists, sqlTellRun: sqlTellRunExists}[q]
			fallthrough
		default:
			bt.query("enqueue: insert messages", scan, q, append(append(head, msg...), p.SkipFull)...)
		}
	} else if len(plan) == 1 {
		q := sqlEnqueueOne
		if exists {
			q = sqlEnqueueOneExists
		}
		bt.query("enqueue: insert messages", scan, q, append([]any{plan[0].Ref.Type, plan[0].Ref.ID,
			a.names, a.args, a.keys, a.ask, a.avail, a.delay, a.sys}, capArgs...)...)
	} else {
		if len(a.idx) > 32 {
			bt.exec("enqueue: choose the plan", sqlPlanMode, "force_custom_plan")
		}
		q := sqlEnqueueMany
		switch {
		case exists:
			q = sqlEnqueueManyExists
		case system:
			q = sqlEnqueueManySystem
		}
		bt.query("enqueue: insert messages", scan, q, append(append([]any{a.types, a.ids, a.names, a.args, a.keys, a.ask, a.avail, a.delay, a.grp},
			capArgs...), a.sys)...)
	}
	if p.Signal {
		// Naming the actor (when its key is known) lets the process that
		// holds it run it at once: an Ask's way to the worker is one query
		// shorter.
		payload := "w"
		if pk, ok := b.pks.Get(plan[0].Ref); ok && len(plan) == 1 {
			payload = "w:" + strconv.FormatInt(pk, 10)
		}
		bt.exec("enqueue: notify", sqlNotify, b.channel, payload)
	}
	return f
}

// missed reports that the plain-UPDATE form advanced no actor.
func (f *fastEnqueue) missed(err error) bool { return err == nil && f.hot && len(f.inserted) == 0 }

func (f *fastEnqueue) done(err error) ([]store.EnqueueResult, error) {
	if err != nil {
		if sqlState(err) == codeMailboxFull {
			gi, _ := strconv.Atoi(pgDetail(err))
			if gi >= 1 && gi <= len(f.plan) {
				return nil, &actor.MailboxFullError{Ref: f.plan[gi-1].Ref, Limit: f.p.MailboxCap}
			}
		}
		return nil, err
	}
	// The written messages of each actor, in sequence order, are its
	// fresh (not duplicate) messages in batch order.
	slices.SortFunc(f.inserted, func(x, y [3]int64) int { return cmp.Or(cmp.Compare(x[1], y[1]), cmp.Compare(x[2], y[2])) })
	byPK := map[int64][][3]int64{}
	for _, r := range f.inserted {
		byPK[r[1]] = append(byPK[r[1]], r)
	}
	for gi := range f.plan {
		rows := byPK[f.pkOf[gi]]
		j := 0
		for _, ord := range f.byGroup[gi] {
			if f.dup[ord] || j >= len(rows) {
				continue
			}
			r := rows[j]
			j++
			f.results[f.a.idx[ord-1]] = store.EnqueueResult{MessageID: r[0], ActorPK: r[1], Seq: r[2]}
		}
	}
	for gi, g := range f.plan {
		switch {
		case f.full[gi]:
			for _, i := range g.Indexes {
				f.results[i] = store.EnqueueResult{Full: true}
			}
			continue
		case f.dropped[gi]:
			for _, i := range g.Indexes {
				f.results[i] = store.EnqueueResult{Dropped: true}
			}
			continue
		}
		store.FillBatchDuplicates(f.p.Messages, g, f.firsts[gi], f.results)
	}
	return f.results, nil
}
