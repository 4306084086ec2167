package msgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// Delivery statuses.
const (
	DeliveryPending     = "pending"
	DeliverySent        = "sent"
	DeliveryFiltered    = "filtered"
	DeliveryQuarantined = "quarantined"
	// DeliveryDismissed: an operator dismissed it while it was
	// quarantined; final.
	DeliveryDismissed = "dismissed"
)

// LaneResult is what a lane actor's turn records as its message's result:
// the transform's decision ("queued" when it staged the send).
type LaneResult struct {
	Status string `json:"status"` // queued | filtered | quarantined
	Reason string `json:"reason,omitempty"`
	Output []byte `json:"output,omitempty"` // with save_output
}

// Where a quarantined delivery stopped, which decides how it is resent.
const (
	// StoppedAtLane: the lane's turn quarantined it (the transform's
	// quarantine(), a runaway, an output that cannot be encoded) or the
	// lane message was dead-lettered after its retries; nothing was staged
	// to send.
	StoppedAtLane = "lane"
	// StoppedAtSend: its send effect was dead-lettered (a refusal, an AR,
	// a 4xx, max_attempts).
	StoppedAtSend = "send"
)

// DeliveryStatus is one destination's state of a message.
type DeliveryStatus struct {
	Destination string
	Status      string
	Reason      string
	Attempts    int
	Output      []byte

	// LaneMessageID is the lane message the delivery is on now.
	LaneMessageID int64
	// LaneDead: that lane message was dead-lettered.
	LaneDead bool
	// EffectID is its send effect (0 before the lane staged one).
	EffectID int64
	// StoppedAt is, for a quarantined delivery, where it stopped.
	StoppedAt string
	// DismissedAt and DismissedBy say when and by whom it was dismissed
	// (Reason is then the operator's).
	DismissedAt time.Time
	DismissedBy string
}

// Deliveries derives each destination's status of a message from the
// runtime's rows: the lane message (pending, its transform's decision, or
// dead after its retries) and the send effect it staged (pending, done =
// sent, dead = quarantined).
func (s *Store) Deliveries(ctx context.Context, messageID string) ([]DeliveryStatus, error) {
	ds, err := s.ix.DeliveryList(ctx, &ixstore.DeliveryListParams{MessageID: messageID})
	if err != nil {
		return nil, fmt.Errorf("msgstore: deliveries: %w", err)
	}
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.LaneMessageID
	}
	sts, err := s.be.MessageStatus(ctx, ids)
	if err != nil {
		return nil, err
	}
	fx, err := s.be.EffectListByMessages(ctx, ids)
	if err != nil {
		return nil, err
	}
	effects := make(map[int64]store.EffectInfo, len(fx))
	for _, e := range fx {
		effects[e.MessageID] = e // a lane message stages one send
	}
	out := make([]DeliveryStatus, len(ds))
	for i, d := range ds {
		out[i] = status(d, sts[i], effects[d.LaneMessageID])
	}
	return out, nil
}

func status(d Delivery, st store.MessageStatus, fx store.EffectInfo) DeliveryStatus {
	out := DeliveryStatus{Destination: d.Destination, Status: DeliveryPending, LaneMessageID: d.LaneMessageID, EffectID: fx.ID}
	if !d.DismissedAt.IsZero() {
		// Its dead send or dead lane message was discarded, or is about
		// to be: the dismissal is what stands.
		out.Status, out.Reason, out.DismissedAt, out.DismissedBy = DeliveryDismissed, d.DismissReason, d.DismissedAt, d.DismissedBy
		out.Attempts = fx.Attempts
		return out
	}
	switch st.State {
	case store.MessagePending:
		return out
	case store.MessageDead:
		out.Status, out.Reason, out.StoppedAt, out.LaneDead = DeliveryQuarantined, laneError(st.Error), StoppedAtLane, true
		return out
	case store.MessageMissing:
		out.Status, out.Reason = DeliveryPending, "the lane message is gone (pruned)"
		return out
	}
	var r LaneResult
	if err := json.Unmarshal(st.Result, &r); err != nil {
		out.Reason = fmt.Sprintf("unreadable lane result: %v", err)
		return out
	}
	out.Output = r.Output
	switch r.Status {
	case DeliveryFiltered:
		out.Status, out.Reason = r.Status, r.Reason
	case DeliveryQuarantined:
		// A lane message an older version completed as quarantined (now
		// a quarantine dead-letters it).
		out.Status, out.Reason, out.StoppedAt = r.Status, r.Reason, StoppedAtLane
	case "queued":
		out.Attempts = fx.Attempts
		switch fx.State {
		case store.EffectDone:
			out.Status = DeliverySent
		case store.EffectDead:
			out.Status, out.Reason, out.StoppedAt = DeliveryQuarantined, fx.Error, StoppedAtSend
		default:
			out.Reason = fx.Error // the last failed attempt, if any
		}
	}
	return out
}

// laneError is a dead lane message's error without the runtime's
// "actor: <lane> message "deliver" failed: " (actor.HandlerError's text),
// which names the lane rather than the reason an operator needs.
func laneError(s string) string {
	if _, rest, ok := strings.Cut(s, ` message "deliver" failed: `); ok && strings.HasPrefix(s, "actor: ") {
		return rest
	}
	return s
}

// Settled is a message's overall status from its deliveries: pending while
// any is pending; then quarantined if any is, else sent if any is, else
// dismissed if any is, else filtered.
func Settled(ds []DeliveryStatus) string {
	any := func(s string) bool {
		for _, d := range ds {
			if d.Status == s {
				return true
			}
		}
		return false
	}
	switch {
	case any(DeliveryPending):
		return DeliveryPending
	case any(DeliveryQuarantined):
		return DeliveryQuarantined
	case any(DeliverySent):
		return DeliverySent
	case any(DeliveryDismissed):
		return DeliveryDismissed
	default:
		return DeliveryFiltered
	}
}
