package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// An enqueue is two round trips: the first locks each addressed actor row
// (SELECT ... FOR UPDATE by the unique (type, id) key, in PlanEnqueue's
// order, so two batches over the same actors queue up instead of
// deadlocking) and reads the idempotency keys already used; the second
// inserts the messages and their ready rows, advances the actors and
// commits. Missing actors cost one more round trip (a multi-row INSERT).

// actorRow is an actor row locked by the transaction; nextSeq and
// unfinished advance as the transaction adds messages.
type actorRow struct {
	ref        actor.Ref
	create     bool
	keys       []any // idempotency keys to look up
	found      bool
	pk         int64
	nextSeq    int64
	unfinished int64
	existing   map[string]int64
}

// sqlLockActors locks the actor rows named by a JSON array of [type, id]
// pairs, in the array's order: the derived table is read in document order
// and joined first (STRAIGHT_JOIN) to the unique (type, id) key, one lookup
// and one lock per pair, so the locks are taken in PlanEnqueue's order as
// they were when each row had a statement of its own. One statement for
// the whole list is parsed, optimized and answered once: a TellBatch of
// 5,000 messages over 1,000 actors sent a thousand SELECTs, each its own
// result set, while holding the locks it had already taken.
const sqlLockActors = `SELECT v.n, a.pk, a.next_seq, a.unfinished
	FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, t VARBINARY(255) PATH '$[0]', i VARBINARY(2048) PATH '$[1]')) v
	STRAIGHT_JOIN ductus_actors a FORCE INDEX (ductus_actors_ref) ON a.type = v.t AND a.id = v.i FOR UPDATE`

// lockActors locks rows in order, creating those marked create that do
// not exist.
func (b *Backend) lockActors(ctx context.Context, s *session, op string, rows []*actorRow) error {
	bt := newBatch(op + ": lock the actors")
	lockStmts(bt, rows)
	if err := s.run(ctx, bt); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		var missing []*actorRow
		for _, r := range rows {
			if !r.found && r.create {
				r.nextSeq, r.unfinished, r.existing = 1, 0, nil
				missing = append(missing, r)
			}
		}
		err := b.createActors(ctx, s, op, missing)
		if err == nil || !errors.Is(err, errActorRace) || attempt == 3 || s.tx == nil {
			// The adapter's own transaction is rolled back and run again:
			// the duplicate key left a shared lock on the row, and two
			// transactions upgrading theirs would deadlock.
			return err
		}
		// In a caller's transaction: another transaction created one of
		// them first (the INSERT is atomic: none of ours exist); lock the
		// rows it made.
		relock := newBatch(op + ": lock the actors")
		lockStmts(relock, missing)
		if err := s.run(ctx, relock); err != nil {
			return err
		}
	}
}

// errActorRace is a duplicate key on creating an actor: another
// transaction created it first. The adapter locks it and goes on, or runs
// the transaction again.
var errActorRace = errors.New("another transaction created the actor first")

// createActors inserts missing actor rows (one multi-row INSERT per 500)
// and reads their keys; the rows start with sequence 1 and no work (the
// caller set nextSeq and unfinished to match).
func (b *Backend) createActors(ctx context.Context, s *session, op string, missing []*actorRow) error {
	if len(missing) == 0 {
		return nil
	}
	ins := newBatch(op + ": create the actors")
	for _, c := range sqltx.Chunks(len(missing), 500) {
		args := make([]any, 0, 2*(c[1]-c[0]))
		for _, r := range missing[c[0]:c[1]] {
			args = append(args, r.ref.Type, r.ref.ID)
		}
		ins.exec(`INSERT INTO ductus_actors (type, id, created_at, updated_at) VALUES `+rows(c[1]-c[0], `(?, ?, NOW(6), NOW(6))`), args...)
	}
	for _, r := range missing {
		r := r
		ins.query(func(rs *sql.Rows) error {
			for rs.Next() {
				if err := rs.Scan(&r.pk); err != nil {
					return err
				}
				r.found = true
			}
			return nil
		}, `SELECT pk FROM ductus_actors WHERE type = ? AND id = ?`, r.ref.Type, r.ref.ID)
	}
	err := s.run(ctx, ins)
	if err != nil && isDuplicate(err) {
		return &store.Error{Backend: "mysql", Op: op + ": create the actors", Transient: true, RolledBack: true, Err: errors.Join(errActorRace, err)}
	}
	return err
}

// lockStmts locks rows in order (sqlLockActors, 500 a statement), then
// reads the idempotency keys already used by the rows that have any.
func lockStmts(bt *batch, rows []*actorRow) {
	for _, c := range sqltx.Chunks(len(rows), 500) {
		part := rows[c[0]:c[1]]
		pairs := make([][2]string, len(part))
		for i, r := range part {
			pairs[i] = [2]string{r.ref.Type, r.ref.ID}
		}
		list, err := json.Marshal(pairs)
		if err != nil {
			panic(err) // strings always encode
		}
		bt.query(func(rs *sql.Rows) error {
			for rs.Next() {
				var n int
				var pk, next, unfinished int64
				if err := rs.Scan(&n, &pk, &next, &unfinished); err != nil {
					return err
				}
				if n < 1 || n > len(part) {
					return fmt.Errorf("lock the actors: row %d of %d", n, len(part))
				}
				r := part[n-1]
				r.pk, r.nextSeq, r.unfinished, r.found = pk, next, unfinished, true
			}
			return nil
		}, sqlLockActors, string(list))
	}
	for _, r := range rows {
		keyStmts(bt, r)
	}
}

// keyStmts reads which of r's idempotency keys its actor has used.
func keyStmts(bt *batch, r *actorRow) {
	for _, c := range sqltx.Chunks(len(r.keys), 500) {
		bt.query(func(rs *sql.Rows) error {
			for rs.Next() {
				var k string
				var id int64
				if err := rs.Scan(&k, &id); err != nil {
					return err
				}
				if r.existing == nil {
					r.existing = map[string]int64{}
				}
				r.existing[k] = id
			}
			return nil
		}, `SELECT idem_key, id FROM ductus_messages WHERE actor_pk = (SELECT pk FROM ductus_actors WHERE type = ? AND id = ?)
			AND idem_key IN (`+sqltx.List(c[1]-c[0])+`)`, append([]any{r.ref.Type, r.ref.ID}, r.keys[c[0]:c[1]]...)...)
	}
}

// groupRow is the row to lock for a group of an enqueue batch.
func groupRow(msgs []store.NewMessage, g store.EnqueueGroup) *actorRow {
	r := &actorRow{ref: g.Ref, create: g.Create}
	seen := map[string]bool{}
	for _, i := range g.Indexes {
		if k := msgs[i].IdempotencyKey; k != "" && !seen[k] {
			seen[k] = true
			r.keys = append(r.keys, k)
		}
	}
	return r
}

// writes collects the messages a transaction adds, written by flush.
type writes struct {
	rows   []newRow
	after  []func()
	signal bool
}

type newRow struct {
	a   *actorRow
	seq int64
	m   store.NewMessage
	res *store.EnqueueResult
}

func (w *writes) add(a *actorRow, m store.NewMessage, res *store.EnqueueResult) {
	*res = store.EnqueueResult{Seq: a.nextSeq} // ActorPK at flush: a new actor gets its key late
	w.rows = append(w.rows, newRow{a: a, seq: a.nextSeq, m: m, res: res})
	a.nextSeq++
	a.unfinished++
}

// planGroup decides one group against its locked row: dropped (MustExist
// and missing), full, or its fresh messages added to w.
func planGroup(msgs []store.NewMessage, g store.EnqueueGroup, r *actorRow, p *store.MailboxEnqueueParams, results []store.EnqueueResult, w *writes) error {
	if !r.found {
		for _, i := range g.Indexes {
			results[i].Dropped = true
		}
		return nil
	}
	fresh, firstOfKey := store.SplitDuplicates(msgs, g, r.existing, results)
	system := 0
	for _, i := range fresh {
		if msgs[i].System {
			system++
		}
	}
	if err := store.CheckCap(g.Ref, r.unfinished, len(fresh), system, p); err != nil {
		if !p.SkipFull {
			return err
		}
		for _, i := range g.Indexes {
			results[i] = store.EnqueueResult{Full: true}
		}
		return nil
	}
	for _, i := range fresh {
		w.add(r, msgs[i], &results[i])
		if k := msgs[i].IdempotencyKey; k != "" {
			if r.existing == nil {
				r.existing = map[string]int64{}
			}
			r.existing[k] = 0 // taken within this transaction
		}
	}
	w.after = append(w.after, func() { store.FillBatchDuplicates(msgs, g, firstOfKey, results) })
	return nil
}

// flush appends the statements that write w's messages: per chunk a
// multi-row INSERT, the ready rows copied from it, and a read of the new
// IDs; then one UPDATE advancing every actor touched (sequence, unfinished
// count, and head_due when the actor had no ready work).
func (w *writes) flush(bt *batch) {
	if len(w.rows) > 0 {
		w.flushMessages(bt)
	}
	if w.signal && len(w.rows) > 0 {
		bt.exec(`INSERT INTO ductus_signals (kind, created_at) VALUES (1, NOW(6))`)
	}
	bt.after = append(bt.after, w.after...)
	w.rows, w.after, w.signal = nil, nil, false
}

const messageRow = `(?, ?, ?, ?, ?, ?, NOW(6), COALESCE(?, NOW(6) + INTERVAL ? MICROSECOND))`

func (w *writes) flushMessages(bt *batch) {
	start, size := 0, 0
	for i, r := range w.rows {
		n := len(r.m.Args) + len(r.m.Name) + len(r.m.IdempotencyKey) + 64
		if i > start && (i-start >= 500 || size+n > 1<<20) {
			insertChunk(bt, w.rows[start:i])
			start, size = i, 0
		}
		size += n
	}
	insertChunk(bt, w.rows[start:])
	// One UPDATE advances every actor touched.
	added := map[*actorRow]int64{}
	var order []*actorRow
	for _, r := range w.rows {
		if added[r.a] == 0 {
			order = append(order, r.a)
		}
		added[r.a]++
	}
	head := `head_due = COALESCE(head_due, (SELECT r.due_at FROM ductus_ready r WHERE r.actor_pk = ductus_actors.pk ORDER BY r.seq LIMIT 1)), updated_at = NOW(6)`
	// Actors that gained the same number of messages (a round-robin batch:
	// all of them) share one UPDATE by IN list (group.go).
	groups := grouped(len(order), func(i int) (int64, any) { return added[order[i]], order[i].pk })
	if len(groups) <= maxGroups {
		for _, g := range groups {
			for _, c := range sqltx.Chunks(len(g.ids), 1000) {
				part := g.ids[c[0]:c[1]]
				bt.exec(`UPDATE ductus_actors SET next_seq = next_seq + ?, unfinished = unfinished + ?, `+head+` WHERE pk IN (`+sqltx.List(len(part))+`)`,
					append([]any{g.key, g.key}, part...)...)
			}
		}
		return
	}
	for _, c := range sqltx.Chunks(len(order), 500) {
		as := order[c[0]:c[1]]
		var cases strings.Builder
		args := make([]any, 0, 5*len(as))
		for _, a := range as {
			cases.WriteString(" WHEN ? THEN ?")
			args = append(args, a.pk, added[a])
		}
		args = append(args, args...)
		for _, a := range as {
			args = append(args, a.pk)
		}
		bt.exec(`UPDATE ductus_actors SET next_seq = next_seq + CASE pk`+cases.String()+` END,
			unfinished = unfinished + CASE pk`+cases.String()+` END, `+head+` WHERE pk IN (`+sqltx.List(len(as))+`)`, args...)
	}
}

func insertChunk(bt *batch, rows []newRow) {
	var q strings.Builder
	q.WriteString("INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at) VALUES ")
	args := make([]any, 0, 8*len(rows))
	pks := map[int64]bool{}
	var pkArgs []any
	for j, r := range rows {
		r.res.ActorPK = r.a.pk
		if j > 0 {
			q.WriteByte(',')
		}
		q.WriteString(messageRow)
		var avail any
		if !r.m.AvailableAt.IsZero() {
			avail = r.m.AvailableAt.UTC()
		}
		args = append(args, r.a.pk, r.seq, r.m.Name, string(r.m.Args), sqltx.NullString(r.m.IdempotencyKey), r.m.Ask, avail, store.Micros(r.m.Delay))
		if !pks[r.a.pk] {
			pks[r.a.pk] = true
			pkArgs = append(pkArgs, r.a.pk)
		}
	}
	bt.exec(q.String(), args...)
	if len(rows) == 1 {
		res := rows[0].res
		bt.exec(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE id = LAST_INSERT_ID()`)
		bt.query(func(rs *sql.Rows) error {
			for rs.Next() {
				if err := rs.Scan(&res.MessageID); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT LAST_INSERT_ID()`)
		return
	}
	// The chunk's rows are the rows of its actors from LAST_INSERT_ID() on:
	// nobody else writes messages of an actor whose row this transaction
	// has locked, and a consistent read does not wait for anyone.
	in := sqltx.List(len(pkArgs))
	bt.exec(`INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) SELECT id, actor_pk, seq, available_at FROM ductus_messages
		WHERE id >= LAST_INSERT_ID() AND actor_pk IN (`+in+`)`, pkArgs...)
	type key struct{ pk, seq int64 }
	bySeq := make(map[key]*store.EnqueueResult, len(rows))
	for _, r := range rows {
		bySeq[key{r.a.pk, r.seq}] = r.res
	}
	bt.query(func(rs *sql.Rows) error {
		for rs.Next() {
			var id, pk, seq int64
			if err := rs.Scan(&id, &pk, &seq); err != nil {
				return err
			}
			if res := bySeq[key{pk, seq}]; res != nil {
				res.MessageID = id
			}
		}
		return nil
	}, `SELECT id, actor_pk, seq FROM ductus_messages WHERE id >= LAST_INSERT_ID() AND actor_pk IN (`+in+`)`, pkArgs...)
}

// MailboxEnqueue implements store.Backend.
func (b *Backend) MailboxEnqueue(ctx context.Context, outer store.Tx, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	if err := store.ValidateEnqueue(p); err != nil {
		return nil, err
	}
	if outer == nil {
		if results, err := b.enqueueFast(ctx, p); !errors.Is(err, errMiss) {
			return results, err
		}
	}
	var results []store.EnqueueResult
	err := b.txn(ctx, outer, func(s *session) error {
		w := &writes{signal: p.Signal}
		var err error
		if results, err = b.enqueue(ctx, s, p, w); err != nil {
			return err
		}
		bt := newBatch("enqueue: insert the messages")
		w.flush(bt)
		return s.commit(ctx, bt)
	})
	if err == nil && outer == nil {
		for i, r := range results {
			if r.ActorPK != 0 {
				b.pks.Put(p.Messages[i].Ref, r.ActorPK)
			}
		}
	}
	return results, err
}

// enqueue locks and plans a batch; its writes go to w (the runtime's own
// deliveries share it with their other writes).
func (b *Backend) enqueue(ctx context.Context, s *session, p *store.MailboxEnqueueParams, w *writes) ([]store.EnqueueResult, error) {
	msgs := p.Messages
	results := make([]store.EnqueueResult, len(msgs))
	groups := store.PlanEnqueue(msgs)
	rows := make([]*actorRow, len(groups))
	for i, g := range groups {
		rows[i] = groupRow(msgs, g)
	}
	if err := b.lockActors(ctx, s, "enqueue", rows); err != nil {
		return nil, err
	}
	for i, g := range groups {
		if err := planGroup(msgs, g, rows[i], p, results, w); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// MessageStatus implements store.Backend.
func (b *Backend) MessageStatus(ctx context.Context, ids []int64) ([]store.MessageStatus, error) {
	found := map[int64]store.MessageStatus{}
	for _, c := range sqltx.Chunks(len(ids), 500) {
		b.count(1)
		rows, err := b.db.QueryContext(ctx, `SELECT id, completed_at IS NOT NULL, dead_at IS NOT NULL, result, error
			FROM ductus_messages WHERE id IN (`+sqltx.List(c[1]-c[0])+`)`, sqltx.Int64s(ids[c[0]:c[1]])...)
		if err != nil {
			return nil, classify("read message status", err)
		}
		for rows.Next() {
			var id int64
			var done, dead bool
			var result, msg sql.NullString
			if err := rows.Scan(&id, &done, &dead, &result, &msg); err != nil {
				rows.Close()
				return nil, classify("read message status", err)
			}
			found[id] = sqlrow.MessageStatus(id, done, dead, []byte(result.String), msg.String)
		}
		if err := rows.Close(); err != nil {
			return nil, classify("read message status", err)
		}
	}
	return sqlrow.InOrder(ids, found), nil
}

// MessageGet implements store.Backend.
func (b *Backend) MessageGet(ctx context.Context, id int64) (*store.MessageInfo, error) {
	var m store.MessageInfo
	var args string
	var idem, result, errText sql.NullString
	var done, dead sql.NullTime
	b.count(1)
	err := b.db.QueryRowContext(ctx, `SELECT m.id, a.type, a.id, m.seq, m.name, m.args, m.idem_key, m.attempts, m.result, m.error,
		m.enqueued_at, m.available_at, m.completed_at, m.dead_at
		FROM ductus_messages m JOIN ductus_actors a ON a.pk = m.actor_pk WHERE m.id = ?`, id).
		Scan(&m.ID, &m.Ref.Type, &m.Ref.ID, &m.Seq, &m.Name, &args, &idem, &m.Attempts, &result, &errText,
			&m.EnqueuedAt, &m.AvailableAt, &done, &dead)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: message %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read a message", err)
	}
	m.Args = []byte(args)
	m.IdempotencyKey, m.Error = idem.String, errText.String
	if result.Valid {
		m.Result = []byte(result.String)
	}
	switch {
	case done.Valid:
		m.State, m.CompletedAt = store.MessageCompleted, done.Time
	case dead.Valid:
		m.State, m.CompletedAt = store.MessageDead, dead.Time
	default:
		m.State = store.MessagePending
	}
	return &m, nil
}

// count records single-statement round trips outside batches.
func (b *Backend) count(n int64) {
	b.roundTrips.Add(n)
	b.statements.Add(n)
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}
