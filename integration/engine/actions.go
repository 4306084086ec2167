package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/runtime/store"
)

// What the operators' actions on a message (resend.go, dismiss.go) share.

// begin opens a write transaction with the project's durability, as an
// intake does.
func (e *Engine) begin(ctx context.Context) (store.Tx, error) {
	return e.be.Begin(ctx, store.TxOptions{Relaxed: e.proj.Engine.Durability == config.DurabilityRelaxed})
}

// pickDeliveries chooses the deliveries an action acts on: the named ones
// (each must exist, and refuse, when it says why, stops the action), or
// without names every quarantined one (none is ErrConflict, saying what
// there was nothing to do: verb, and hint when there is one).
func pickDeliveries(id string, ds []msgstore.DeliveryStatus, dests []string, verb, hint string,
	refuse func(msgstore.DeliveryStatus) string) ([]msgstore.DeliveryStatus, error) {
	var out []msgstore.DeliveryStatus
	if len(dests) == 0 {
		for _, d := range ds {
			if d.Status == msgstore.DeliveryQuarantined {
				out = append(out, d)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: message %s has no quarantined delivery to %s%s", api.ErrConflict, id, verb, hint)
		}
		return out, nil
	}
	for _, name := range dests {
		i := slices.IndexFunc(ds, func(d msgstore.DeliveryStatus) bool { return d.Destination == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: message %s has no delivery to destination %q", actor.ErrNotFound, id, name)
		}
		if why := refuse(ds[i]); why != "" {
			return nil, fmt.Errorf("%w: the delivery of %s to %s %s", api.ErrConflict, id, name, why)
		}
		out = append(out, ds[i])
	}
	return out, nil
}

// refusePending refuses a named delivery still pending: a worker may
// hold it (resend, edit).
func refusePending(d msgstore.DeliveryStatus) string {
	if d.Status == msgstore.DeliveryPending {
		return "is still pending"
	}
	return ""
}

// refuseUnlessQuarantined refuses a named delivery that is not
// quarantined (dismiss).
func refuseUnlessQuarantined(d msgstore.DeliveryStatus) string {
	if d.Status != msgstore.DeliveryQuarantined {
		return "is " + d.Status + ", not quarantined"
	}
	return ""
}

// discardDead removes the dead row a resent or dismissed delivery stood
// for (its dead send or dead lane message), so the destination's
// quarantined count drops. It runs after the action committed: should it
// fail, the action stands and the stale row only inflates the count.
func (e *Engine) discardDead(ctx context.Context, id string, d msgstore.DeliveryStatus) {
	var err error
	switch {
	case d.LaneDead:
		_, err = e.rt.DiscardDeadLetter(ctx, actor.MessageID(d.LaneMessageID))
	case d.StoppedAt == msgstore.StoppedAtSend:
		_, err = e.rt.DiscardEffect(ctx, d.EffectID)
	}
	if err != nil {
		e.log.Warn("the dead row of a resent or dismissed delivery stays", "message", id, "destination", d.Destination, "err", err)
	}
}
