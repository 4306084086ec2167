package host

import (
	"context"
	"time"

	"github.com/ductus/ductus/runtime/store"
)

const outboxBatch = 256

// outboxLoop delivers actor-to-actor sends into their targets' mailboxes:
// each row exactly once (its ID is the target's idempotency key), a
// source's rows in staging order. Sends were validated and authorized (as
// system deliveries) when the turn staged them.
func (h *Host) outboxLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.sendWk:
		case <-t.C:
		}
		for ctx.Err() == nil {
			n, err := h.deliverSends(ctx)
			if err != nil {
				if ctx.Err() == nil {
					h.met.storeErrors.WithLabelValues("outbox").Inc()
					h.log.Warn("delivering sends failed", "err", err)
				}
				break
			}
			if n < outboxBatch {
				break
			}
		}
	}
}

func (h *Host) deliverSends(ctx context.Context) (int, error) {
	rows, err := h.be.OutboxClaim(ctx, &store.OutboxClaimParams{Owner: h.id, TTL: h.cfg.ClaimTTL, Limit: outboxBatch})
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	res, err := h.be.OutboxDeliver(ctx, &store.OutboxDeliverParams{Owner: h.id, Rows: rows, MailboxCap: h.cfg.Limits.MailboxMessages, RetryAfter: time.Second})
	if err != nil {
		return 0, err
	}
	delivered := 0
	for _, r := range res {
		if r.MessageID != 0 {
			delivered++
			if r.TargetPK != 0 {
				h.workArrived(r.TargetPK) // an activation cached here runs it now, not at the next poll
			}
		}
	}
	h.met.sends.Add(float64(delivered))
	if delivered > 0 {
		h.poke(h.wake)
	}
	return len(rows), nil
}
