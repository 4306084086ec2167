package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/store"
)

// Dismiss implements api.Engine: an operator gives up on a message's
// quarantined deliveries, with a reason. The dismissals commit in one
// transaction (all or none); then the dead sends and dead lane messages
// they stand for are discarded (discardDead): the delivery reads as
// dismissed from the commit on.
func (e *Engine) Dismiss(ctx context.Context, id string, dests []string, by, reason string) ([]string, error) {
	m, ds, err := e.message(ctx, id)
	if err != nil {
		return nil, err
	}
	picked, err := pickDeliveries(id, ds, dests, "dismiss", "", refuseUnlessQuarantined)
	if err != nil {
		return nil, err
	}
	tx, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	out, err := e.dismissTx(ctx, tx, id, picked, by, reason)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("dismiss %s: commit: %w", id, err)
	}
	for _, d := range picked {
		e.discardDead(ctx, id, d)
		e.met.dismissed.WithLabelValues(m.Interface, d.Destination).Inc()
	}
	e.log.Info("message dismissed", "interface", m.Interface, "message", id, "destinations", out, "by", by, "reason", reason)
	return out, nil
}

// dismissTx dismisses, in tx, the picked deliveries of message id and
// returns their destinations.
func (e *Engine) dismissTx(ctx context.Context, tx store.Tx, id string, picked []msgstore.DeliveryStatus, by, reason string) ([]string, error) {
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
	return out, nil
}
