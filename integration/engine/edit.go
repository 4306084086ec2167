package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/msgstore"
)

// Edit implements api.Engine: an operator corrects a message and sends
// the corrected copy.
//
// The copy is a new message of the same interface, whose ordering and
// dedupe keys are read from the new payload (a corrected MRN moves it to
// that MRN's lane). It is queued to the destinations whose deliveries were
// quarantined (or, with dests, to those, whatever they ended as but
// pending) at the tail of its lane, after what is queued there now, like
// a resend that has no send to take up again: the transform runs on the
// corrected payload. Its meta names the original, the editor and the
// reason, so each links to the other.
//
// In the same transaction each quarantined delivery of the original is
// dismissed as "replaced by <copy>", so it leaves the quarantine; a sent
// delivery replayed by name keeps its status. The copy claims no dedupe
// key: it is a correction, not a second arrival, and must not be taken
// for a duplicate of its original.
func (e *Engine) Edit(ctx context.Context, id string, payload []byte, dests []string, by, reason string) (api.Edited, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return api.Edited{}, err
	}
	ir := e.ifaces[m.Interface]
	if ir == nil {
		return api.Edited{}, fmt.Errorf("%w: interface %s of message %s is no longer in the project", api.ErrConflict, m.Interface, id)
	}
	if err := format.Check(format.Name(ir.cfg.Format), payload); err != nil {
		return api.Edited{}, fmt.Errorf("%w: the edited payload is not %s: %v", actor.ErrInvalidArguments, ir.cfg.Format, err)
	}
	picked, err := pickDeliveries(id, ds, dests, "edit", " (name destinations to send a corrected copy of a sent one)",
		refusePending)
	if err != nil {
		return api.Edited{}, err
	}
	for _, d := range picked {
		if ir.cfg.Destination(d.Destination) == nil {
			return api.Edited{}, fmt.Errorf("%w: destination %s was removed from interface %s", api.ErrConflict, d.Destination, m.Interface)
		}
	}

	cp := msgstore.Message{ID: uuid.Must(uuid.NewV7()).String(), Interface: m.Interface, ReceivedAt: time.Now(),
		Status: msgstore.StatusPending, Payload: payload, Meta: map[string]any{"edited_from": id, "edited_by": by, "edit_reason": reason}}
	if cs, ok := m.Meta[metaCharset]; ok {
		cp.Meta[metaCharset] = cs // destinations encode the copy as they would have the original
	}
	if ir.order != nil {
		cp.Key, _ = ir.order.ExtractParsed(payload, nil)
	}
	if ir.dedupe != nil {
		cp.DedupeKey, _ = ir.dedupe.ExtractParsed(payload, nil)
	}
	cp.Lane = laneOf(cp.Key, ir.cfg.Partitions)
	cp.Type = messageType(ir.cfg, payload, nil)

	tx, err := e.begin(ctx)
	if err != nil {
		return api.Edited{}, err
	}
	defer tx.Rollback(ctx)
	envs := make([]actor.Envelope, len(picked))
	for i, d := range picked {
		envs[i] = actor.Envelope{Ref: actor.Ref{Type: laneType, ID: ir.cfg.Destination(d.Destination).ActorID(cp.Lane)},
			Message: "deliver", Args: deliverArgs{M: cp.ID}}
	}
	ids, pks, err := e.rt.TellTx(ctx, tx, envs)
	if err != nil {
		return api.Edited{}, fmt.Errorf("edit %s: queue: %w", id, err)
	}
	deliveries := make([]msgstore.Delivery, len(picked))
	for i, d := range picked {
		deliveries[i] = msgstore.Delivery{MessageID: cp.ID, Destination: d.Destination, LaneMessageID: int64(ids[i])}
	}
	if err := e.ms.Insert(ctx, tx, []msgstore.Message{cp}, deliveries); err != nil {
		return api.Edited{}, err
	}
	out := api.Edited{Message: id, Copy: cp.ID, Destinations: make([]string, len(picked)), Replaced: []string{}}
	at := time.Now().UTC()
	var replaced []msgstore.DeliveryStatus
	for i, d := range picked {
		out.Destinations[i] = d.Destination
		if d.Status != msgstore.DeliveryQuarantined {
			continue
		}
		ok, err := e.ms.Dismiss(ctx, tx, id, d.Destination, d.LaneMessageID, by, "replaced by "+cp.ID, at)
		if err != nil {
			return api.Edited{}, err
		}
		if !ok {
			return api.Edited{}, fmt.Errorf("%w: the delivery of %s to %s changed while it was edited (resent or dismissed already?)", api.ErrConflict, id, d.Destination)
		}
		replaced = append(replaced, d)
		out.Replaced = append(out.Replaced, d.Destination)
	}
	if err := tx.Commit(ctx); err != nil {
		return api.Edited{}, fmt.Errorf("edit %s: commit: %w", id, err)
	}
	e.rt.Notify(pks)
	for _, d := range replaced {
		e.discardDead(ctx, id, d)
	}
	for _, d := range out.Destinations {
		e.met.resent.WithLabelValues(m.Interface, d).Inc()
	}
	e.log.Info("message edited and resent", "interface", m.Interface, "message", id, "copy", cp.ID,
		"destinations", out.Destinations, "by", by, "reason", reason)
	return out, nil
}
