package mysql

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

// Signal rows are written where they cannot announce what did not commit:
// in the same transaction as the enqueue (MailboxEnqueueParams.Signal: an
// Ask that no local worker can take) or the commit
// (TurnCommitParams.SignalDone: finished messages another process asked
// for) they announce, or on their own after the work committed (Notify:
// the runtime's debounced work signal for plain Tells, one row per burst
// of enqueues instead of one row in each enqueue's transaction).
const (
	signalWork      = 1
	signalDone      = 2
	signalBroadcast = 3 // observable changes committed (older binaries skip the kind)

	signalPage      = 5000
	signalRetention = time.Minute
	signalCleanup   = 10 * time.Second
	// An id below the cursor that has not been seen yet may belong to a
	// transaction that took its id first and committed later; it is asked
	// for again for this long (rolled-back ids never show up).
	gapWait = 2 * time.Second
	maxGaps = 1024
)

// Listen implements store.Signaler: it polls the signal table every
// Config.SignalPoll (default 25 ms) from the newest row at the time it
// starts, calling fn once per poll that found signals. A wake-up from
// another process therefore arrives within one poll interval plus a query
// (measured at the default: 14 ms mean, 26 ms p95; see this adapter's README). It deletes rows older than a
// minute every 10 s, keeps polling through errors (backing off to 1 s),
// and returns ctx.Err() when ctx ends.
func (b *Backend) Listen(ctx context.Context, fn func(store.Signal)) error {
	cursor := int64(-1)
	gaps := map[int64]time.Time{}
	lastClean := time.Time{}
	wait := b.poll
	for {
		full := false
		err := func() error {
			if cursor < 0 {
				var max sql.NullInt64
				if err := b.db.QueryRowContext(ctx, `SELECT MAX(id) FROM ductus_signals`).Scan(&max); err != nil {
					return classify("read the latest signal", err)
				}
				cursor = max.Int64
				return nil
			}
			n, err := b.pollSignals(ctx, &cursor, gaps, fn)
			full = n == signalPage
			if err != nil {
				return err
			}
			if time.Since(lastClean) > signalCleanup {
				lastClean = time.Now()
				return b.cleanSignals(ctx)
			}
			return nil
		}()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			b.log.Warn("mysql: signal poll failed", "err", err)
			wait = min(wait*2, time.Second)
		} else {
			wait = b.poll
		}
		if full {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// pollSignals reads the rows after the cursor (and gaps still awaited),
// advances the cursor and calls fn.
func (b *Backend) pollSignals(ctx context.Context, cursor *int64, gaps map[int64]time.Time, fn func(store.Signal)) (int, error) {
	now := time.Now()
	for id, since := range gaps {
		if now.Sub(since) > gapWait {
			delete(gaps, id)
		}
	}
	q := `SELECT id, kind, message_id FROM ductus_signals WHERE id > ?`
	args := []any{*cursor}
	if len(gaps) > 0 {
		ids := make([]int64, 0, len(gaps))
		for id := range gaps {
			ids = append(ids, id)
		}
		q += ` OR id IN (` + sqltx.List(len(ids)) + `)`
		args = append(args, sqltx.Int64s(ids)...)
	}
	b.count(1)
	rows, err := b.db.QueryContext(ctx, q+` ORDER BY id LIMIT `+strconv.Itoa(signalPage), args...)
	if err != nil {
		return 0, classify("poll signals", err)
	}
	defer rows.Close()
	var sig store.Signal
	n := 0
	for rows.Next() {
		var id int64
		var kind int
		var msg sql.NullInt64
		if err := rows.Scan(&id, &kind, &msg); err != nil {
			return n, classify("poll signals", err)
		}
		n++
		if id > *cursor {
			for g := *cursor + 1; g < id && len(gaps) < maxGaps; g++ {
				gaps[g] = now
			}
			*cursor = id
		}
		delete(gaps, id)
		switch kind {
		case signalWork:
			sig.Work = true
		case signalBroadcast:
			sig.Broadcast = true
		case signalDone:
			if msg.Valid {
				sig.Done = append(sig.Done, msg.Int64)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, classify("poll signals", err)
	}
	if sig.Work || sig.Broadcast || len(sig.Done) > 0 {
		fn(sig)
	}
	return n, nil
}

// cleanSignals deletes rows older than the retention, in bounded batches.
func (b *Backend) cleanSignals(ctx context.Context) error {
	for i := 0; i < 20; i++ {
		n, err := b.execCount(ctx, "delete old signals", `DELETE FROM ductus_signals WHERE created_at < NOW(6) - INTERVAL ? MICROSECOND
			ORDER BY created_at LIMIT 10000`, store.Micros(signalRetention))
		if err != nil || n < 10000 {
			return err
		}
	}
	return nil
}

// Notify implements store.Notifier: signal rows written on their own,
// outside every transaction, once the work they announce has committed.
// The runtime sends the work signals of plain Tells this way, debounced
// (one row per burst of enqueues rather than one per enqueue, which would
// have 16 concurrent callers each insert into this one table in their
// commit), and keeps the in-transaction row for an Ask that no local
// worker can take.
func (b *Backend) Notify(ctx context.Context, s store.Signal) error {
	if s.Work {
		if _, err := b.execCount(ctx, "notify other processes", `INSERT INTO ductus_signals (kind, created_at) VALUES (1, NOW(6))`); err != nil {
			return err
		}
	}
	if s.Broadcast {
		if _, err := b.execCount(ctx, "notify other processes", `INSERT INTO ductus_signals (kind, created_at) VALUES (3, NOW(6))`); err != nil {
			return err
		}
	}
	for _, c := range sqltx.Chunks(len(s.Done), 500) {
		var q strings.Builder
		q.WriteString(`INSERT INTO ductus_signals (kind, message_id, created_at) VALUES `)
		for i := c[0]; i < c[1]; i++ {
			if i > c[0] {
				q.WriteString(", ")
			}
			q.WriteString("(2, ?, NOW(6))")
		}
		if _, err := b.execCount(ctx, "notify other processes", q.String(), sqltx.Int64s(s.Done[c[0]:c[1]])...); err != nil {
			return err
		}
	}
	return nil
}

// NotifyInterval implements store.NotifyPacer: every work signal is a
// commit of its own, and other processes read the table only every poll
// interval, so the runtime sends at most one per interval.
func (b *Backend) NotifyInterval() time.Duration { return b.poll }
