package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/store"
)

// Dismiss implements api.Engine: an operator gives up on a message's
// quarantined deliveries, with a reason. The dismissals commit in one
// transaction (all or none); then the dead sends and dead lane messages
// they stand for are discarded, so the destination's quarantined count
// drops. A discard that fails leaves a stale dead row that only inflates
// that count: the delivery reads as dismissed from the commit on.
func (e *Engine) Dismiss(ctx context.Context, id string, dests []string, by, reason string) ([]string, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return nil, err
	}
	var picked []msgstore.DeliveryStatus
	for _, d := range ds {
		if len(dests) == 0 && d.Status == msgstore.DeliveryQuarantined {
			picked = append(picked, d)
		}
	}
	for _, name := range dests {
		i := slices.IndexFunc(ds, func(d msgstore.DeliveryStatus) bool { return d.Destination == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: message %s has no delivery to destination %q", actor.ErrNotFound, id, name)
		}
		if ds[i].Status != msgstore.DeliveryQuarantined {
			return nil, fmt.Errorf("%w: the delivery of %s to %s is %s, not quarantined", api.ErrConflict, id, name, ds[i].Status)
		}
		picked = append(picked, ds[i])
	}
	if len(picked) == 0 {
		return nil, fmt.Errorf("%w: message %s has no quarantined delivery to dismiss", api.ErrConflict, id)
	}
	tx, err := e.be.Begin(ctx, store.TxOptions{Relaxed: e.proj.Engine.Durability == config.DurabilityRelaxed})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	at := time.Now().UTC()
	out := make([]string, len(picked))
	for i, d := range picked {
		ok, err := e.ms.Dismiss(ctx, tx, id, d.Destination, d.LaneMessageID, by, reason, at)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: the delivery of %s to %s changed while it was dismissed (resent or dismissed already?)", api.ErrConflict, id, d.Destination)
		}
		out[i] = d.Destination
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("dismiss %s: commit: %w", id, err)
	}
	for _, d := range picked {
		var err error
		switch {
		case d.StoppedAt == msgstore.StoppedAtSend:
			_, err = e.rt.DiscardEffect(ctx, d.EffectID)
		case d.LaneDead:
			_, err = e.rt.DiscardDeadLetter(ctx, actor.MessageID(d.LaneMessageID))
		}
		if err != nil {
			e.log.Warn("dismiss: the dismissed dead row stays", "message", id, "destination", d.Destination, "err", err)
		}
		e.met.dismissed.WithLabelValues(m.Interface, d.Destination).Inc()
	}
	e.log.Info("message dismissed", "interface", m.Interface, "message", id, "destinations", out, "by", by, "reason", reason)
	return out, nil
}
