package engine

import (
	"context"
	"fmt"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/store"
)

// Resend implements api.Engine: an operator's resend of a message's
// quarantined deliveries (no dests) or a replay of the named ones.
//
// Where a resent delivery goes in its lane's order depends on where it
// stopped:
//
//   - A delivery whose send was dead-lettered (a refusal, an AR, a 4xx,
//     max_attempts) has its send effect made pending again in place. A
//     lane's sends go out in the order of their effects, so it goes next,
//     ahead of the lane's later sends still pending, as the reference
//     engine's resend does (the delivery keeps its place).
//   - A delivery that stopped in the lane (the transform's quarantine(), a
//     runaway, an output that cannot be encoded, a lane message
//     dead-lettered after its retries) and a replay of a sent or filtered
//     one have no send to take up again: a new lane message for it is
//     queued at the tail of its key's lane, and the transform runs again
//     on the stored payload after what is queued there now. The new lane
//     message and the delivery's link to it commit in one transaction, so
//     the message's status follows the new attempt from that commit on.
//
// A named delivery still pending is refused (ErrConflict): a worker may
// hold it. Two resends of one delivery at once: the second finds it
// pending, or loses the relink race, and is refused.
func (e *Engine) Resend(ctx context.Context, id string, dests []string) ([]api.ResentDelivery, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return nil, err
	}
	picked, err := pickDeliveries(id, ds, dests, "resend", " (name destinations to replay sent ones)",
		refusePending)
	if err != nil {
		return nil, err
	}
	ir := e.ifaces[m.Interface]
	if ir == nil {
		return nil, fmt.Errorf("%w: interface %s of message %s is no longer in the project", api.ErrConflict, m.Interface, id)
	}
	var inPlace, requeue []msgstore.DeliveryStatus
	for _, d := range picked {
		if ir.cfg.Destination(d.Destination) == nil {
			return nil, fmt.Errorf("%w: destination %s was removed from interface %s", api.ErrConflict, d.Destination, m.Interface)
		}
		if d.Status == msgstore.DeliveryQuarantined && d.StoppedAt == msgstore.StoppedAtSend {
			inPlace = append(inPlace, d)
		} else {
			requeue = append(requeue, d)
		}
	}
	out := make([]api.ResentDelivery, 0, len(picked))
	if len(requeue) > 0 {
		if err := e.requeue(ctx, ir, m, requeue); err != nil {
			return nil, err
		}
		for _, d := range requeue {
			out = append(out, api.ResentDelivery{Destination: d.Destination, Was: api.ResentDeliveryWas(d.Status), Placement: api.LaneTail})
		}
	}
	for _, d := range inPlace {
		ok, err := e.rt.RetryEffect(ctx, d.EffectID)
		if err != nil {
			return out, fmt.Errorf("resend %s to %s: %w", id, d.Destination, err)
		}
		if !ok {
			return out, fmt.Errorf("%w: the send of %s to %s is no longer quarantined (resent already?)", api.ErrConflict, id, d.Destination)
		}
		out = append(out, api.ResentDelivery{Destination: d.Destination, Was: api.ResentDeliveryWasQuarantined, Placement: api.InPlace})
	}
	for _, d := range out {
		e.met.resent.WithLabelValues(m.Interface, d.Destination).Inc()
	}
	e.log.Info("message resent", "interface", m.Interface, "message", id, "deliveries", len(out))
	return out, nil
}

// requeue queues a new lane message for each delivery, at the tail of
// the lane its key maps to now, and links the delivery to it, in one
// transaction. A dead-lettered lane message it replaces is then discarded
// (discardDead).
func (e *Engine) requeue(ctx context.Context, ir *ifaceRuntime, m *msgstore.Message, ds []msgstore.DeliveryStatus) error {
	tx, err := e.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	pks, err := e.requeueTx(ctx, tx, ir, m, ds)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("resend %s: commit: %w", m.ID, err)
	}
	e.rt.Notify(pks)
	for _, d := range ds {
		if d.LaneDead {
			e.discardDead(ctx, m.ID, d)
		}
	}
	return nil
}

// requeueTx queues, in tx, a new lane message for each delivery of m and
// relinks the delivery to it; it returns the actors to wake once tx
// commits.
func (e *Engine) requeueTx(ctx context.Context, tx store.Tx, ir *ifaceRuntime, m *msgstore.Message, ds []msgstore.DeliveryStatus) ([]int64, error) {
	lane := laneOf(m.Key, ir.cfg.Partitions)
	envs := make([]actor.Envelope, len(ds))
	for i, d := range ds {
		envs[i] = actor.Envelope{Ref: actor.Ref{Type: laneType, ID: ir.cfg.Destination(d.Destination).ActorID(lane)},
			Message: "deliver", Args: deliverArgs{M: m.ID}}
	}
	ids, pks, err := e.rt.TellTx(ctx, tx, envs)
	if err != nil {
		return nil, fmt.Errorf("resend %s: queue: %w", m.ID, err)
	}
	for i, d := range ds {
		ok, err := e.ms.Relink(ctx, tx, m.ID, d.Destination, d.LaneMessageID, int64(ids[i]))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: the delivery of %s to %s changed while it was resent (resent already?)", api.ErrConflict, m.ID, d.Destination)
		}
	}
	return pks, nil
}
