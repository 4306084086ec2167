package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/ductus/ductus/runtime/store"
)

// A Tell (one message, no idempotency key) to an actor this process has
// seen is one round trip of seven statements: SET TRANSACTION, START
// TRANSACTION, LAST_INSERT_ID(0), an UPDATE that locks and advances the
// actor row (the cached key checked against type and id, the mailbox cap
// in its WHERE, the old sequence stashed with LAST_INSERT_ID(expr)), the
// message INSERT, its ready row, COMMIT. The results come from the OK packets (the driver's
// per-statement insert IDs), so nothing is read back. When the UPDATE
// matches nothing (the actor was destroyed and recreated, or its mailbox is
// full) LAST_INSERT_ID() stays 0, the message's sequence is NULL, the NOT
// NULL column stops the batch before COMMIT, and the general path runs and
// reports exactly what happened.

// errMiss is the fast path's "not applicable": the general path runs.
var errMiss = errors.New("fast path does not apply")

// enqueueFast runs a Tell in one round trip, or reports errMiss.
func (b *Backend) enqueueFast(ctx context.Context, p *store.MailboxEnqueueParams) ([]store.EnqueueResult, error) {
	if len(p.Messages) != 1 {
		return nil, errMiss
	}
	m := p.Messages[0]
	if m.IdempotencyKey != "" || m.MustExist {
		return nil, errMiss
	}
	pk, ok := b.pks.Get(m.Ref)
	if !ok {
		return nil, errMiss
	}
	capCond, args := "", []any{nullTime(m.AvailableAt), m.Delay.Microseconds(), pk, m.Ref.Type, m.Ref.ID}
	if p.MailboxCap > 0 {
		limit := p.MailboxCap
		if m.System {
			limit += p.SystemAllowance
		}
		capCond, args = " AND unfinished < ?", append(args, limit)
	}
	q := `SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
DO LAST_INSERT_ID(0);
UPDATE ductus_actors SET next_seq = LAST_INSERT_ID(next_seq) + 1, unfinished = unfinished + 1,
	head_due = COALESCE(head_due, COALESCE(?, NOW(6) + INTERVAL ? MICROSECOND)), updated_at = NOW(6)
	WHERE pk = ? AND type = ? AND id = ?` + capCond + `;
INSERT INTO ductus_messages (actor_pk, seq, name, args, idem_key, ask, enqueued_at, available_at)
	VALUES (?, NULLIF(LAST_INSERT_ID(), 0), ?, ?, NULL, ?, (SELECT a.updated_at FROM ductus_actors a WHERE a.pk = ?),
		COALESCE(?, (SELECT a.updated_at FROM ductus_actors a WHERE a.pk = ?) + INTERVAL ? MICROSECOND));
INSERT INTO ductus_ready (message_id, actor_pk, seq, due_at) SELECT id, actor_pk, seq, available_at FROM ductus_messages WHERE id = LAST_INSERT_ID()`
	args = append(args, pk, m.Name, string(m.Args), m.Ask, pk, nullTime(m.AvailableAt), pk, m.Delay.Microseconds())
	n := 7
	if p.Signal {
		q += ";\nINSERT INTO ductus_signals (kind, created_at) VALUES (1, NOW(6))"
		n++
	}
	q += ";\nCOMMIT"
	var ids []int64
	err := b.txn(ctx, nil, func(s *session) error {
		var err error
		s.open = true // the batch starts the transaction; on an error the session rolls back
		ids, err = b.rawExec(ctx, s.conn, "enqueue: insert the message", q, args, n)
		if err == nil {
			s.open = false
		}
		return err
	})
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1048 { // seq NULL: the UPDATE matched nothing
			b.pks.Drop(m.Ref)
			return nil, errMiss
		}
		return nil, err
	}
	if len(ids) < 5 {
		return nil, classify("enqueue: insert the message", errors.New("the server reported fewer results than statements"))
	}
	return []store.EnqueueResult{{MessageID: ids[4], ActorPK: pk, Seq: ids[3]}}, nil
}

// rawExec sends a multi-statement query through the driver directly, to
// read each statement's insert ID (database/sql keeps only the last).
func (b *Backend) rawExec(ctx context.Context, conn *sql.Conn, op, q string, args []any, stmts int) ([]int64, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, classify(op, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	b.roundTrips.Add(1)
	b.statements.Add(int64(stmts))
	var ids []int64
	err := conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the driver connection cannot execute")
		}
		res, err := ex.ExecContext(ctx, q, named)
		if err != nil {
			return err
		}
		r, ok := res.(mysql.Result)
		if !ok {
			return errors.New("the driver result has no per-statement insert IDs")
		}
		ids = r.AllLastInsertIds()
		return nil
	})
	return ids, classify(op, err)
}
