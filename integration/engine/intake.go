package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
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
// acknowledge (persist before acknowledge).
func (e *Engine) Intake(ctx context.Context, iface string, recs []Record, state *StateWrite) ([]Stored, error) {
	ir, ok := e.ifaces[iface]
	if !ok {
		return nil, fmt.Errorf("engine: unknown interface %q", iface)
	}
	if e.refuses(ir) {
		e.met.intakeErrors.WithLabelValues(iface).Inc()
		return nil, fmt.Errorf("%w: %w: %s", ErrStore, ErrInterfaceStopped, iface)
	}
	var out []Stored
	var pks []int64
	// Only a failure that certainly rolled back is run again here: after an
	// ambiguous one (the connection lost during the commit) the records may
	// be stored, and the source, which has not acknowledged, decides (an
	// MLLP sender resends after AE and dedupe can catch it; a file resumes
	// from its committed progress).
	err := store.RetryWhen(ctx, 5, store.IsRolledBack, func() error {
		var err error
		out, pks, err = e.intakeTx(ctx, ir, recs, state)
		return err
	})
	if err != nil {
		e.met.intakeErrors.WithLabelValues(iface).Inc()
		return nil, fmt.Errorf("%w: %s: %v", ErrStore, iface, err)
	}
	e.rt.Notify(pks)
	for _, s := range out {
		switch {
		case s.Existing:
		case s.Duplicate:
			e.met.duplicates.WithLabelValues(iface).Inc()
		default:
			e.met.received.WithLabelValues(iface).Inc()
		}
	}
	return out, nil
}

func (e *Engine) intakeTx(ctx context.Context, ir *ifaceRuntime, recs []Record, state *StateWrite) ([]Stored, []int64, error) {
	cfg := ir.cfg
	tx, err := e.be.Begin(ctx, store.TxOptions{Relaxed: e.proj.Engine.Durability == config.DurabilityRelaxed})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx)
	now := time.Now()
	out := make([]Stored, len(recs))
	rows := make([]msgstore.Message, 0, len(recs))
	var envs []actor.Envelope
	var dests [][2]int // per envelope: record index, destination index
	keys := make([]string, len(recs))
	ids := make([]string, len(recs))
	// Each dedupe key's candidate first message: the batch's first record
	// with it (a later one in the batch is its duplicate).
	candidates := map[string]string{}
	for i, r := range recs {
		if r.Origin != "" {
			id, found, err := e.ms.ByOrigin(ctx, tx, cfg.Name, r.Origin)
			if err != nil {
				return nil, nil, err
			}
			if found {
				out[i] = Stored{ID: id, Existing: true}
				continue
			}
		}
		ids[i] = uuid.Must(uuid.NewV7()).String()
		if ir.dedupe != nil && r.Reject == "" {
			k, _ := ir.dedupe.Extract(r.Payload)
			keys[i] = k
			if _, ok := candidates[k]; k != "" && !ok {
				candidates[k] = ids[i]
			}
		}
	}
	// Claim the keys before anything is queued: the claim decides, under
	// the keys' row locks, which message is the first of its key.
	winners := map[string]string{}
	if len(candidates) > 0 {
		if winners, err = e.ms.Claim(ctx, tx, cfg.Name, candidates, now, now.Add(-cfg.Dedupe.Window)); err != nil {
			return nil, nil, err
		}
	}
	var dupOf []string
	for i, r := range recs {
		if out[i].Existing {
			continue
		}
		id := ids[i]
		key := ""
		if ir.order != nil {
			key, _ = ir.order.Extract(r.Payload) // no key: lane 0, still stored
		}
		lane := laneOf(key, cfg.Partitions)
		m := msgstore.Message{ID: id, Interface: cfg.Name, ReceivedAt: now, Status: msgstore.StatusPending, Key: key, Lane: lane,
			DedupeKey: keys[i], Origin: r.Origin, Payload: r.Payload, Meta: r.Meta}
		if r.OriginID != "" {
			if m.Meta == nil {
				m.Meta = map[string]any{}
			}
			m.Meta["origin_id"] = r.OriginID
		}
		if r.Reject != "" {
			m.Status = msgstore.StatusRejected
			if m.Meta == nil {
				m.Meta = map[string]any{}
			}
			m.Meta["reason"] = r.Reject
			out[i] = Stored{ID: id, Rejected: true}
			rows = append(rows, m)
			continue
		}
		if k := keys[i]; k != "" && winners[k] != id {
			m.Status, m.DuplicateOf = msgstore.StatusDuplicate, winners[k]
		}
		out[i] = Stored{ID: id, Duplicate: m.Status == msgstore.StatusDuplicate, DuplicateOf: m.DuplicateOf}
		if out[i].Duplicate {
			dupOf = append(dupOf, m.DuplicateOf)
		} else {
			if r.ACK != nil {
				if m.ACK, err = r.ACK(id); err != nil {
					return nil, nil, fmt.Errorf("build the ACK: %w", err)
				}
				out[i].ACK = m.ACK
			}
			for d, dest := range cfg.Destinations {
				envs = append(envs, actor.Envelope{
					Ref: actor.Ref{Type: laneType, ID: dest.ActorID(lane)}, Message: "deliver", Args: deliverArgs{M: id},
					Options: []actor.TellOption{actor.WithIdempotencyKey("ix:" + id)},
				})
				dests = append(dests, [2]int{i, d})
			}
		}
		rows = append(rows, m)
	}
	var pks []int64
	var deliveries []msgstore.Delivery
	if len(envs) > 0 {
		ids, actorPKs, err := e.rt.TellTx(ctx, tx, envs)
		if err != nil {
			return nil, nil, err
		}
		pks = actorPKs
		for j, id := range ids {
			rec, d := dests[j][0], dests[j][1]
			deliveries = append(deliveries, msgstore.Delivery{MessageID: out[rec].ID, Destination: cfg.Destinations[d].Name, LaneMessageID: int64(id)})
		}
	}
	if err := e.ms.Insert(ctx, tx, rows, deliveries); err != nil {
		return nil, nil, err
	}
	if state != nil {
		if err := e.ms.PutState(ctx, tx, cfg.Name, state.Key, state.Value); err != nil {
			return nil, nil, err
		}
	}
	// A duplicate is answered with its original's ACK (MLLP), read in the
	// same transaction (the original may be in this very batch).
	if len(dupOf) > 0 {
		acks, err := e.acksOf(ctx, tx, dupOf, rows)
		if err != nil {
			return nil, nil, err
		}
		for i := range out {
			if out[i].Duplicate {
				out[i].ACK = acks[out[i].DuplicateOf]
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, err
	}
	return out, pks, nil
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
