package engine

import (
	"context"
	"fmt"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/msgstore"
)

// Bulk actions: an operator's resend or dismissal of many messages at
// once (the quarantine page's "select many"), in one transaction, all or
// nothing. Every message is checked first; one that has nothing to act on,
// a pending named delivery or an unknown ID refuses the whole request,
// naming it, and nothing is done.
//
// A bulk resend places every delivery at the tail of its key's lane, in
// the order the IDs are given, the dead sends included: the single
// resend's in-place retry of a dead send is a runtime call outside any
// transaction, so it cannot be one of many all-or-nothing changes. The
// transform runs again on the stored payload, as for any lane_tail resend.

// MaxBulk bounds the messages one bulk action names.
const MaxBulk = 500

// bulkItem is one message of a bulk action with the deliveries it acts on.
type bulkItem struct {
	m      *msgstore.Message
	ir     *ifaceRuntime
	picked []msgstore.DeliveryStatus
}

// bulkPick reads each message and picks its deliveries as the single
// action would; the first that cannot be acted on refuses them all.
func (e *Engine) bulkPick(ctx context.Context, ids, dests []string, verb, hint string,
	refuse func(msgstore.DeliveryStatus) string) ([]bulkItem, error) {
	if len(ids) == 0 || len(ids) > MaxBulk {
		return nil, fmt.Errorf("%w: a bulk %s names 1 to %d messages, not %d", api.ErrConflict, verb, MaxBulk, len(ids))
	}
	out := make([]bulkItem, 0, len(ids))
	for _, id := range ids {
		m, ds, err := e.message(ctx, id)
		if err != nil {
			return nil, err
		}
		picked, err := pickDeliveries(id, ds, dests, verb, hint, refuse)
		if err != nil {
			return nil, err
		}
		ir := e.ifaces[m.Interface]
		if ir == nil {
			return nil, fmt.Errorf("%w: interface %s of message %s is no longer in the project", api.ErrConflict, m.Interface, id)
		}
		for _, d := range picked {
			if ir.cfg.Destination(d.Destination) == nil {
				return nil, fmt.Errorf("%w: destination %s was removed from interface %s", api.ErrConflict, d.Destination, m.Interface)
			}
		}
		out = append(out, bulkItem{m: m, ir: ir, picked: picked})
	}
	return out, nil
}

// BulkResend implements api.Engine.
func (e *Engine) BulkResend(ctx context.Context, ids, dests []string) ([]api.Resent, error) {
	items, err := e.bulkPick(ctx, ids, dests, "resend", " (name destinations to replay sent ones)", refusePending)
	if err != nil {
		return nil, err
	}
	tx, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	var wake []int64
	for _, it := range items {
		pks, err := e.requeueTx(ctx, tx, it.ir, it.m, it.picked)
		if err != nil {
			return nil, err
		}
		wake = append(wake, pks...)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("bulk resend: commit: %w", err)
	}
	e.rt.Notify(wake)
	out := make([]api.Resent, len(items))
	n := 0
	for i, it := range items {
		out[i] = api.Resent{Message: it.m.ID, Deliveries: make([]api.ResentDelivery, len(it.picked))}
		for j, d := range it.picked {
			if d.Status == msgstore.DeliveryQuarantined {
				e.discardDead(ctx, it.m.ID, d) // a dead send too: it was requeued, not retried
			}
			out[i].Deliveries[j] = api.ResentDelivery{Destination: d.Destination, Was: api.ResentDeliveryWas(d.Status), Placement: api.LaneTail}
			e.met.resent.WithLabelValues(it.m.Interface, d.Destination).Inc()
			n++
		}
	}
	e.log.Info("messages resent in bulk", "messages", len(items), "deliveries", n)
	return out, nil
}

// BulkDismiss implements api.Engine.
func (e *Engine) BulkDismiss(ctx context.Context, ids, dests []string, by, reason string) ([]api.Dismissed, error) {
	items, err := e.bulkPick(ctx, ids, dests, "dismiss", "", refuseUnlessQuarantined)
	if err != nil {
		return nil, err
	}
	tx, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	out := make([]api.Dismissed, len(items))
	for i, it := range items {
		done, err := e.dismissTx(ctx, tx, it.m.ID, it.picked, by, reason)
		if err != nil {
			return nil, err
		}
		out[i] = api.Dismissed{Message: it.m.ID, Destinations: done}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("bulk dismiss: commit: %w", err)
	}
	for _, it := range items {
		for _, d := range it.picked {
			e.discardDead(ctx, it.m.ID, d)
			e.met.dismissed.WithLabelValues(it.m.Interface, d.Destination).Inc()
		}
	}
	e.log.Info("messages dismissed in bulk", "messages", len(items), "by", by, "reason", reason)
	return out, nil
}
