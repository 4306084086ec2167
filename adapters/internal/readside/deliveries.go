package readside

import (
	"context"

	"github.com/ductus/ductus/integration/ixstore"
)

// deliveryRow is a row of ductus_ix_deliveries with the dismissal of the
// lane message it is on (NULLs when none).
type deliveryRow struct {
	Destination   string `bun:"destination"`
	LaneMessageID int64  `bun:"lane_message_id"`
	DismissedAt   int64  `bun:"dismissed_at"`
	DismissedBy   string `bun:"dismissed_by"`
	Reason        string `bun:"reason"`
}

// DeliveryList implements ixstore.Store: a message's deliveries by
// destination. A dismissal counts only for the lane message it was made
// for: a delivery resent since is on a new one.
func (r *Reader) DeliveryList(ctx context.Context, p *ixstore.DeliveryListParams) ([]ixstore.Delivery, error) {
	q := r.db.NewSelect().
		ColumnExpr("d.destination, d.lane_message_id, x.dismissed_at, x.dismissed_by, x.reason").
		TableExpr("ductus_ix_deliveries AS d").
		Join("LEFT JOIN ductus_ix_dismissals AS x ON x.message_id = d.message_id AND x.destination = d.destination AND x.lane_message_id = d.lane_message_id").
		Where("d.message_id = ?", p.MessageID).
		Order("d.destination")
	return list(ctx, r, "read deliveries", q, func(d *deliveryRow) ixstore.Delivery {
		return ixstore.Delivery{MessageID: p.MessageID, Destination: d.Destination, LaneMessageID: d.LaneMessageID,
			DismissedAt: micros(d.DismissedAt), DismissedBy: d.DismissedBy, DismissReason: d.Reason}
	})
}
