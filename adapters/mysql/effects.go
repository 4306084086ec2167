package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/runtime/store"
	"github.com/ductus/ductus/runtime/store/sqltx"
)

func scanEffect(rows *sql.Rows) (store.Effect, error) {
	var e store.Effect
	var args string
	err := rows.Scan(&e.ID, &e.UUID, &e.ActorPK, &e.Ref.Type, &e.Ref.ID, &e.Name, &args, &e.Ordered, &e.Generation,
		&e.ActorGeneration, &e.Attempt, &e.MaxAttempts, &e.OnSuccess, &e.OnFailure, &e.MessageID, &e.CreatedAt)
	e.Args = []byte(args)
	return e, err
}

// EffectClaim implements store.Backend. As for activations: a read-only
// scan for candidates (due unordered effects from their index, due effect
// lanes), then a lock by primary key with SKIP LOCKED and the conditions
// checked again, then the heads of the locked lanes, then the lease of the
// effects taken, their read and COMMIT. Ordered effects are taken from
// their actor's lane: the head and up to OrderedRun-1 following effects of
// that actor, stopping at one this process cannot run or that is not due.
// A claimed row's due_at is its lease expiry, so a dead worker's claims
// come due again by themselves.
func (b *Backend) EffectClaim(ctx context.Context, p *store.EffectClaimParams) ([]store.Effect, error) {
	if p.Limit <= 0 || len(p.Names) == 0 {
		return nil, nil
	}
	run := max(p.OrderedRun, 1)
	names := sqltx.Strings(p.Names)
	handled := map[string]bool{}
	for _, n := range p.Names {
		handled[n] = true
	}
	var candFx, candLanes []int64
	scan := newBatch("claim effects: find candidates")
	scan.query(scanInts(&candFx), `SELECT id FROM ductus_effects WHERE state = 'pending' AND ordered = 0 AND due_at <= NOW(6)
		AND name IN (`+sqltx.List(len(names))+`) ORDER BY due_at LIMIT ?`, append(append([]any{}, names...), p.Limit)...)
	// Only lanes whose head this process has a handler for (or that have
	// no head left, to settle them): a process without the handler must not
	// hold a lane, nor spend its claim's limit on it.
	scan.query(scanInts(&candLanes), `SELECT l.actor_pk FROM ductus_lanes l WHERE l.kind = 'effect' AND l.due_at <= NOW(6)
		AND COALESCE((SELECT e.name FROM ductus_effects e WHERE e.actor_pk = l.actor_pk AND e.state = 'pending' AND e.ordered = 1
			ORDER BY e.id LIMIT 1) IN (`+sqltx.List(len(names))+`), TRUE)
		ORDER BY l.due_at LIMIT ?`, append(append([]any{}, names...), p.Limit)...)
	if err := b.read(ctx, scan); err != nil || len(candFx)+len(candLanes) == 0 {
		return nil, err
	}
	var out []store.Effect
	err := b.txn(ctx, nil, func(s *session) error {
		out = nil
		var fx, lanes []int64
		type head struct {
			actorPK, id int64
			name        string
			due         bool
		}
		heads := map[int64][]head{}
		lock := newBatch("claim effects: lock candidates")
		if len(candFx) > 0 {
			lock.query(scanInts(&fx), `SELECT id FROM ductus_effects WHERE id IN (`+sqltx.List(len(candFx))+`)
				AND state = 'pending' AND ordered = 0 AND due_at <= NOW(6) FOR UPDATE SKIP LOCKED`, sqltx.Int64s(candFx)...)
		}
		if len(candLanes) > 0 {
			lock.query(scanInts(&lanes), `SELECT actor_pk FROM ductus_lanes WHERE kind = 'effect' AND actor_pk IN (`+sqltx.List(len(candLanes))+`)
				AND due_at <= NOW(6) FOR UPDATE SKIP LOCKED`, sqltx.Int64s(candLanes)...)
			// The heads, read after the lock statement in the same round
			// trip; only the locked lanes' heads are used.
			for _, pk := range candLanes {
				lock.query(func(rows *sql.Rows) error {
					for rows.Next() {
						var h head
						if err := rows.Scan(&h.actorPK, &h.id, &h.name, &h.due); err != nil {
							return err
						}
						heads[h.actorPK] = append(heads[h.actorPK], h)
					}
					return nil
				}, `SELECT actor_pk, id, name, due_at <= NOW(6) FROM ductus_effects
					WHERE actor_pk = ? AND state = 'pending' AND ordered = 1 ORDER BY id LIMIT ?`, pk, run)
			}
		}
		if err := s.run(ctx, lock); err != nil {
			return err
		}
		if len(fx)+len(lanes) == 0 {
			return nil
		}
		w := newBatch("claim effects: lease")
		take := fx
		var leased []int64
		for _, pk := range lanes {
			n := 0
			for _, h := range heads[pk] {
				if !handled[h.name] || !h.due {
					break // the run stops at an effect this process cannot run yet
				}
				take = append(take, h.id)
				n++
			}
			if n == 0 {
				settleLane(w, pk, "effect")
			} else {
				leased = append(leased, pk)
			}
		}
		if len(leased) > 0 {
			w.exec(`UPDATE ductus_lanes SET due_at = NOW(6) + INTERVAL ? MICROSECOND WHERE kind = 'effect' AND actor_pk IN (`+sqltx.List(len(leased))+`)`,
				append([]any{store.Micros(p.TTL)}, sqltx.Int64s(leased)...)...)
		}
		if len(take) > 0 {
			in := sqltx.List(len(take))
			ids := sqltx.Int64s(take)
			w.exec(`SET @ductus_exp = NOW(6) + INTERVAL ? MICROSECOND`, store.Micros(p.TTL))
			w.exec(`UPDATE ductus_effects SET lease_owner = ?, attempts = attempts + 1, due_at = @ductus_exp
				WHERE id IN (`+in+`) AND state = 'pending'`, append([]any{p.Owner}, ids...)...)
			w.query(func(rows *sql.Rows) error {
				for rows.Next() {
					e, err := scanEffect(rows)
					if err != nil {
						return err
					}
					out = append(out, e)
				}
				return nil
			}, `SELECT `+sqlrow.EffectColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
				WHERE e.id IN (`+in+`) AND e.lease_owner = ? AND e.due_at = @ductus_exp AND e.state = 'pending' ORDER BY e.id`,
				append(ids, p.Owner)...)
		}
		return s.commit(ctx, w)
	})
	return out, err
}

// EffectFinish implements store.Backend. The effect rows are locked first;
// an outcome applies only while its row is still this claim's (owner and
// attempt match, still pending), so a claim that expired and was taken
// over cannot overwrite the newer attempt. Outcome messages are enqueued
// in the same transaction and never recreate a destroyed actor.
func (b *Backend) EffectFinish(ctx context.Context, p *store.EffectFinishParams) error {
	if len(p.Outcomes) == 0 {
		return nil
	}
	return b.txn(ctx, nil, func(s *session) error {
		type row struct {
			actorPK  int64
			ordered  bool
			owner    sql.NullString
			attempts int
			state    string
		}
		cur := map[int64]row{}
		ids := make([]int64, 0, len(p.Outcomes))
		for _, o := range p.Outcomes {
			ids = append(ids, o.ID)
		}
		a := newBatch("record effect outcomes: lock the effects")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				var id int64
				var r row
				if err := rows.Scan(&id, &r.actorPK, &r.ordered, &r.owner, &r.attempts, &r.state); err != nil {
					return err
				}
				cur[id] = r
			}
			return nil
		}, `SELECT id, actor_pk, ordered, lease_owner, attempts, state FROM ductus_effects WHERE id IN (`+sqltx.List(len(ids))+`)
			ORDER BY id FOR UPDATE`, sqltx.Int64s(ids)...)
		if err := s.run(ctx, a); err != nil {
			return err
		}
		w := newBatch("record effect outcomes")
		lanes := map[int64]bool{}
		var outcomes []store.NewMessage
		for _, o := range p.Outcomes {
			r, ok := cur[o.ID]
			if !ok || r.state != string(store.EffectPending) || !r.owner.Valid || r.owner.String != p.Owner || r.attempts != o.Attempt {
				continue // no longer this claim's: another worker owns the newer attempt
			}
			switch {
			case o.Release:
				w.exec(`UPDATE ductus_effects SET lease_owner = NULL, attempts = attempts - 1, due_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = ?`,
					store.Micros(o.RetryAfter), o.ID)
			case o.Success:
				w.exec(`UPDATE ductus_effects SET state = 'done', result = ?, error = NULL, lease_owner = NULL, finished_at = NOW(6) WHERE id = ?`,
					sqltx.NullBytes(o.Result), o.ID)
			case o.Dead:
				w.exec(`UPDATE ductus_effects SET state = 'dead', error = ?, lease_owner = NULL, finished_at = NOW(6) WHERE id = ?`, o.Error, o.ID)
			default:
				w.exec(`UPDATE ductus_effects SET error = ?, lease_owner = NULL, due_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = ?`,
					o.Error, store.Micros(o.RetryAfter), o.ID)
			}
			if r.ordered {
				lanes[r.actorPK] = true
			}
			if o.Outcome != nil {
				outcomes = append(outcomes, *o.Outcome)
			}
		}
		if len(outcomes) > 0 {
			// No mailbox cap: the effect is finished in this transaction, so
			// its outcome must be written whatever the mailbox holds (see
			// store.EffectFinishParams).
			ep := &store.MailboxEnqueueParams{Messages: outcomes}
			if err := store.ValidateEnqueue(ep); err != nil {
				return err
			}
			wr := &writes{}
			if _, err := b.enqueue(ctx, s, ep, wr); err != nil {
				return err
			}
			wr.flush(w)
		}
		for pk := range lanes {
			settleLane(w, pk, "effect")
		}
		return s.commit(ctx, w)
	})
}

// EffectRetry implements store.Backend.
func (b *Backend) EffectRetry(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := b.txn(ctx, nil, func(s *session) error {
		var pk int64
		var ordered bool
		ok = false
		a := newBatch("retry an effect: lock it")
		a.query(func(rows *sql.Rows) error {
			for rows.Next() {
				ok = true
				if err := rows.Scan(&pk, &ordered); err != nil {
					return err
				}
			}
			return nil
		}, `SELECT actor_pk, ordered FROM ductus_effects WHERE id = ? AND state = 'dead' FOR UPDATE`, id)
		if err := s.run(ctx, a); err != nil || !ok {
			return err
		}
		w := newBatch("retry an effect")
		w.exec(`UPDATE ductus_effects SET state = 'pending', attempts = 0, error = NULL, finished_at = NULL, lease_owner = NULL, due_at = NOW(6)
			WHERE id = ?`, id)
		if ordered {
			openLane(w, pk, "effect", false)
			settleLane(w, pk, "effect")
		}
		return s.commit(ctx, w)
	})
	return ok, err
}

// EffectDiscard implements store.Backend. A dead effect holds no lane
// (its lane moved past it when it died), so deleting it settles nothing.
func (b *Backend) EffectDiscard(ctx context.Context, id int64) (bool, error) {
	n, err := b.execCount(ctx, "discard an effect", `DELETE FROM ductus_effects WHERE id = ? AND state = 'dead'`, id)
	return n > 0, err
}

func scanEffectInfo(sc sqlrow.Scanner) (store.EffectInfo, error) {
	var e store.EffectInfo
	var args string
	var result, errText sql.NullString
	var finished sql.NullTime
	err := sc.Scan(&e.ID, &e.UUID, &e.Ref.Type, &e.Ref.ID, &e.Name, &args, &e.Ordered, &e.State, &e.Attempts, &result, &errText,
		&e.Generation, &e.CreatedAt, &finished, &e.MessageID, &e.MaxAttempts)
	e.Args = []byte(args)
	if result.Valid {
		e.Result = []byte(result.String)
	}
	e.Error = errText.String
	e.FinishedAt = finished.Time
	return e, err
}

// EffectList implements store.Backend.
func (b *Backend) EffectList(ctx context.Context, p *store.EffectListParams) ([]store.EffectInfo, error) {
	before := p.BeforeID
	if before <= 0 {
		before = 1<<63 - 1
	}
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
		WHERE e.state = ? AND (? = '' OR a.type = ?) AND (? = '' OR a.id = ?) AND (? = 0 OR e.message_id = ?)
		AND (? = 0 OR e.ordered = 1 AND e.error IS NOT NULL) AND e.id < ? ORDER BY e.id DESC LIMIT ?`,
		string(p.State), p.Type, p.Type, p.ID, p.ID, p.MessageID, p.MessageID, p.Blocking, before, limitOr(p.Limit, 100))
	if err != nil {
		return nil, classify("list effects", err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scanEffectInfo)
	return out, classify("list effects", err)
}

// EffectGet implements store.Backend.
func (b *Backend) EffectGet(ctx context.Context, id int64) (*store.EffectInfo, error) {
	b.count(1)
	e, err := scanEffectInfo(b.db.QueryRowContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+`
		FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk WHERE e.id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%w: effect %d", actor.ErrNotFound, id)
	}
	if err != nil {
		return nil, classify("read an effect", err)
	}
	return &e, nil
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// EffectListByMessages implements store.Backend.
func (b *Backend) EffectListByMessages(ctx context.Context, messageIDs []int64) ([]store.EffectInfo, error) {
	var out []store.EffectInfo
	for _, c := range sqltx.Chunks(len(messageIDs), 500) {
		b.count(1)
		rows, err := b.db.QueryContext(ctx, `SELECT `+sqlrow.EffectInfoColumns+` FROM ductus_effects e JOIN ductus_actors a ON a.pk = e.actor_pk
			WHERE e.message_id IN (`+sqltx.List(c[1]-c[0])+`) ORDER BY e.id`, sqltx.Int64s(messageIDs[c[0]:c[1]])...)
		if err != nil {
			return nil, classify("list effects of messages", err)
		}
		for rows.Next() {
			e, err := scanEffectInfo(rows)
			if err != nil {
				rows.Close()
				return nil, classify("list effects of messages", err)
			}
			out = append(out, e)
		}
		if err := rows.Close(); err != nil {
			return nil, classify("list effects of messages", err)
		}
	}
	return out, nil
}
