package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/store"
)

// Record is one message a source hands to the intake.
type Record struct {
	Payload []byte
	Meta    map[string]any
	// Origin makes the store idempotent: a record whose origin the
	// interface already stored is not stored again (a routed hop, a
	// schedule occurrence).
	Origin string
	// OriginID is the message this one was routed from (the transform's
	// meta.origin).
	OriginID string
	// ACK, when set, builds the acknowledgement for the message given its
	// new ID; it is stored with the message, so a duplicate is answered
	// with the original's ACK again.
	ACK func(id string) ([]byte, error)
	// Parsed, when set, is Payload already parsed as HL7 v2 (read-only): the
	// ordering and dedupe keys are read from it rather than from a parse of
	// their own, so a message is parsed once between socket and store.
	Parsed *hl7.Message
	// Reject, when set, stores the record for audit with status rejected
	// and this reason, and queues it nowhere (a file record too large, a
	// CSV row that does not fit the header, a body not of the format).
	Reject string
}

// Stored is the intake's answer for one record.
type Stored struct {
	ID          string
	Duplicate   bool   // a dedupe hit: stored for audit, never queued
	DuplicateOf string // the original message
	Existing    bool   // the origin was stored already: nothing written
	Rejected    bool   // stored with status rejected, queued nowhere
	ACK         []byte // the ACK built for it, or for a duplicate the original's
}

// StateWrite is source state committed with the records (nil Value deletes).
type StateWrite struct {
	Key   string
	Value any
}

// ErrStore marks a failure to store: the source must answer with a
// retryable error (MLLP AE, HTTP 503) and the sender retries.
var ErrStore = errors.New("engine: storing failed")

// Intake stores records of an interface in one transaction: the messages
// (payload once), each destination's lane message, dedupe claims and source
// state; then it wakes the lanes. Only after it returns nil may a source
// acknowledge (persist before acknowledge). Concurrent calls share a
// transaction (groupcommit.go); each still gets only its own answer.
func (e *Engine) Intake(ctx context.Context, iface string, recs []Record, state *StateWrite) ([]Stored, error) {
	ir, ok := e.ifaces[iface]
	if !ok {
		return nil, fmt.Errorf("engine: unknown interface %q", iface)
	}
	if e.refuses(ir) {
		e.met.intakeErrors.WithLabelValues(iface).Inc()
		return nil, fmt.Errorf("%w: %w: %s", ErrStore, ErrInterfaceStopped, iface)
	}
	// A route's hop (its records carry their origin message) is not a
	// source: it goes on while the gates are closed, so routed work drains.
	// Counted before the gate is looked at: a drain that finds nothing in
	// flight after closing the gate has seen every intake that got past it.
	e.drain.inflight.Add(1)
	defer e.drain.inflight.Add(-1)
	if len(recs) > 0 && recs[0].OriginID == "" && e.drain.gateClosed() {
		return nil, fmt.Errorf("%w: %w: %s", ErrStore, ErrDraining, iface)
	}
	req := &intakeReq{ctx: ctx, ir: ir, recs: recs, state: state}
	e.group.do(req, e.commitGroup)
	if req.err != nil {
		e.met.intakeErrors.WithLabelValues(iface).Inc()
		return nil, fmt.Errorf("%w: %s: %v", ErrStore, iface, req.err)
	}
	for _, s := range req.out {
		switch {
		case s.Existing:
		case s.Duplicate:
			e.met.duplicates.WithLabelValues(iface).Inc()
		default:
			e.met.received.WithLabelValues(iface).Inc()
			ir.tp.add(time.Now(), 1, 0)
		}
	}
	return req.out, nil
}

// commitGroup stores a batch of intakes in one transaction and sets each
// request's answer; then it wakes the lanes it queued to.
//
// Only a failure that certainly rolled back is run again: after an
// ambiguous one (the connection lost during the commit) the records may be
// stored, and each source, which has not acknowledged, decides (an MLLP
// sender resends after AE and dedupe can catch it; a file resumes from its
// committed progress). A batch that failed before its commit is run again
// one request at a time, so a request the database refuses fails alone.
func (e *Engine) commitGroup(batch []*intakeReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err // its caller has gone: store nothing it cannot acknowledge
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	// The transaction outlives any one caller's context: it holds the
	// others' records too.
	ctx := context.WithoutCancel(live[0].ctx)
	var pks []int64
	err := store.RetryWhen(ctx, 5, store.IsRolledBack, func() error {
		var err error
		pks, err = e.intakeTx(ctx, live)
		return err
	})
	var ambiguous *commitError
	if err != nil && len(live) > 1 && !(errors.As(err, &ambiguous) && !store.IsRolledBack(err)) {
		e.met.groupSplits.Inc()
		for _, r := range live {
			err := store.RetryWhen(ctx, 5, store.IsRolledBack, func() error {
				p, err := e.intakeTx(ctx, []*intakeReq{r})
				if err == nil {
					pks = append(pks, p...)
				}
				return err
			})
			if err != nil {
				r.out, r.err = nil, err
			}
		}
	} else if err != nil {
		for _, r := range live {
			r.out, r.err = nil, err
		}
	}
	e.met.groupSize.Observe(float64(len(live)))
	e.rt.Notify(pks)
}

// commitError is a failed COMMIT: unless the backend says it rolled back,
// the transaction's outcome is unknown.
type commitError struct{ err error }

func (c *commitError) Error() string { return "commit: " + c.err.Error() }
func (c *commitError) Unwrap() error { return c.err }

// pendingRec is one record of a group transaction on its way to a row.
type pendingRec struct {
	req *intakeReq
	i   int    // the record's index in its request
	id  string // its new message ID ("" when its origin was stored already)
	key string // its dedupe key
}

// intakeTx stores the records of a batch of requests in one transaction
// and sets each request's out. It returns the actors the transaction
// queued to.
func (e *Engine) intakeTx(ctx context.Context, batch []*intakeReq) ([]int64, error) {
	tx, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	now := time.Now()
	var recs []pendingRec
	// Each interface's dedupe keys with their candidate first message: the
	// batch's first record with the key (a later one is its duplicate).
	candidates := map[string]map[string]string{}
	for _, r := range batch {
		r.out = make([]Stored, len(r.recs))
		for i, rec := range r.recs {
			p := pendingRec{req: r, i: i}
			if rec.Origin != "" {
				id, found, err := e.ms.ByOrigin(ctx, tx, r.ir.cfg.Name, rec.Origin)
				if err != nil {
					return nil, err
				}
				if found {
					r.out[i] = Stored{ID: id, Existing: true}
					continue
				}
			}
			p.id = uuid.Must(uuid.NewV7()).String()
			if r.ir.dedupe != nil && rec.Reject == "" {
				p.key, _ = r.ir.dedupe.ExtractParsed(rec.Payload, rec.Parsed)
				if p.key != "" {
					c := candidates[r.ir.cfg.Name]
					if c == nil {
						c = map[string]string{}
						candidates[r.ir.cfg.Name] = c
					}
					if _, ok := c[p.key]; !ok {
						c[p.key] = p.id
					}
				}
			}
			recs = append(recs, p)
		}
	}
	// Claim the keys before anything is queued: the claim decides, under
	// the keys' row locks, which message is the first of its key.
	// Interfaces in name order, so two transactions take the locks in one
	// order.
	winners := map[string]map[string]string{}
	names := make([]string, 0, len(candidates))
	for name := range candidates {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cfg := e.ifaces[name].cfg
		if winners[name], err = e.ms.Claim(ctx, tx, name, candidates[name], now, now.Add(-cfg.Dedupe.Window)); err != nil {
			return nil, err
		}
	}
	rows := make([]msgstore.Message, 0, len(recs))
	var envs []actor.Envelope
	type envOf struct {
		p    pendingRec
		dest int
	}
	var dests []envOf
	var dupOf []string
	for _, p := range recs {
		r, rec, cfg := p.req, p.req.recs[p.i], p.req.ir.cfg
		key := ""
		if r.ir.order != nil {
			key, _ = r.ir.order.ExtractParsed(rec.Payload, rec.Parsed) // no key: lane 0, still stored
		}
		lane := laneOf(key, cfg.Partitions)
		m := msgstore.Message{ID: p.id, Interface: cfg.Name, ReceivedAt: now, Status: msgstore.StatusPending, Key: key, Lane: lane,
			DedupeKey: p.key, Origin: rec.Origin, Type: messageType(cfg, rec.Payload, rec.Parsed), Payload: rec.Payload, Meta: rec.Meta}
		if rec.OriginID != "" {
			m.Meta = withMeta(m.Meta, "origin_id", rec.OriginID)
		}
		if rec.Reject != "" {
			m.Status = msgstore.StatusRejected
			m.Meta = withMeta(m.Meta, "reason", rec.Reject)
			r.out[p.i] = Stored{ID: p.id, Rejected: true}
			rows = append(rows, m)
			continue
		}
		if p.key != "" && winners[cfg.Name][p.key] != p.id {
			m.Status, m.DuplicateOf = msgstore.StatusDuplicate, winners[cfg.Name][p.key]
		}
		st := Stored{ID: p.id, Duplicate: m.Status == msgstore.StatusDuplicate, DuplicateOf: m.DuplicateOf}
		if st.Duplicate {
			dupOf = append(dupOf, m.DuplicateOf)
		} else {
			if rec.ACK != nil {
				if m.ACK, err = rec.ACK(p.id); err != nil {
					return nil, fmt.Errorf("build the ACK: %w", err)
				}
				st.ACK = m.ACK
			}
			// No idempotency key: the lane message is queued in the
			// transaction that stores its message, under an ID made for
			// this attempt, so there is never an earlier copy to find, and
			// a key would cost every group a lookup per lane and every
			// message an index entry.
			for d, dest := range cfg.Destinations {
				envs = append(envs, actor.Envelope{
					Ref: actor.Ref{Type: laneType, ID: dest.ActorID(lane)}, Message: "deliver", Args: deliverArgs{M: p.id},
				})
				dests = append(dests, envOf{p, d})
			}
		}
		r.out[p.i] = st
		rows = append(rows, m)
	}
	var pks []int64
	var deliveries []msgstore.Delivery
	if len(envs) > 0 {
		ids, actorPKs, err := e.rt.TellTx(ctx, tx, envs)
		if err != nil {
			return nil, err
		}
		pks = actorPKs
		if e.paused.any() {
			held := make([]bool, len(dests)) // by lane message: its destination is paused (wake.go)
			for j, d := range dests {
				cfg := d.p.req.ir.cfg
				_, held[j] = e.paused.get(destKey(cfg.Name, cfg.Destinations[d.dest].Name))
			}
			pks = wakeable(actorPKs, held)
		}
		for j, id := range ids {
			d := dests[j]
			deliveries = append(deliveries, msgstore.Delivery{MessageID: d.p.id, Destination: d.p.req.ir.cfg.Destinations[d.dest].Name, LaneMessageID: int64(id)})
		}
	}
	if err := e.ms.Insert(ctx, tx, rows, deliveries); err != nil {
		return nil, err
	}
	for _, r := range batch {
		if r.state != nil {
			if err := e.ms.PutState(ctx, tx, r.ir.cfg.Name, r.state.Key, r.state.Value); err != nil {
				return nil, err
			}
		}
	}
	// A duplicate is answered with its original's ACK (MLLP), read in the
	// same transaction (the original may be in this very batch).
	if len(dupOf) > 0 {
		acks, err := e.acksOf(ctx, tx, dupOf, rows)
		if err != nil {
			return nil, err
		}
		for _, r := range batch {
			for i := range r.out {
				if r.out[i].Duplicate {
					r.out[i].ACK = acks[r.out[i].DuplicateOf]
				}
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, &commitError{err}
	}
	e.ms.Remember(rows) // for their lanes to read from memory
	return pks, nil
}

// withMeta returns meta with k set, allocating it when nil.
func withMeta(meta map[string]any, k string, v any) map[string]any {
	if meta == nil {
		meta = map[string]any{}
	}
	meta[k] = v
	return meta
}

// acksOf reads the stored ACKs of messages (from this batch first).
func (e *Engine) acksOf(ctx context.Context, tx store.Tx, ids []string, batch []msgstore.Message) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, m := range batch {
		if m.ACK != nil {
			out[m.ID] = m.ACK
		}
	}
	var missing []string
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	stored, err := e.ms.ACKs(ctx, tx, missing)
	if err != nil {
		return nil, err
	}
	for id, ack := range stored {
		out[id] = ack
	}
	return out, nil
}

// messageType is what the message browser searches a message's type by:
// HL7's MSH-9.1^MSH-9.2, from the intake's parse when there is one, else
// from the header line alone; "" for other formats.
func messageType(cfg *config.Interface, payload []byte, parsed *hl7.Message) string {
	if cfg.Format != config.FormatHL7v2 {
		return ""
	}
	t := ""
	if parsed != nil {
		t = hl7.SearchType(parsed)
	} else {
		t = hl7.TypeOf(payload)
	}
	if len(t) > maxTypeLen {
		return "" // a type this long is junk; the message is still stored
	}
	return t
}

// maxTypeLen bounds a searchable type (the search column's width).
const maxTypeLen = 255
