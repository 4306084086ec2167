package readside

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// messageRow is a row of ductus_ix_messages with its type from
// ductus_ix_search (the message browser's row).
type messageRow struct {
	ID          string `bun:"id"`
	Interface   string `bun:"interface"`
	ReceivedAt  int64  `bun:"received_at"`
	Status      string `bun:"status"`
	Key         string `bun:"order_key"`    // NULL without one
	Lane        int    `bun:"lane"`         //
	DedupeKey   string `bun:"dedupe_key"`   // NULL without one
	DuplicateOf string `bun:"duplicate_of"` // NULL unless a duplicate
	Origin      string `bun:"origin"`       // NULL unless routed or scheduled
	Payload     []byte `bun:"payload"`
	ACK         []byte `bun:"ack"`  // NULL unless MLLP
	Meta        string `bun:"meta"` // a JSON object, or NULL
	Type        string `bun:"type"` // NULL when the message has no type row
}

func (m *messageRow) message() ixstore.Message {
	out := ixstore.Message{ID: m.ID, Interface: m.Interface, ReceivedAt: micros(m.ReceivedAt), Status: m.Status, Key: m.Key,
		Lane: m.Lane, DedupeKey: m.DedupeKey, DuplicateOf: m.DuplicateOf, Origin: m.Origin, Type: m.Type, Payload: m.Payload}
	if len(m.ACK) > 0 {
		out.ACK = m.ACK
	}
	out.SetMetaJSON(m.Meta)
	return out
}

// messageColumns are a messageRow's, from the message table aliased r and
// its type row t.
const messageColumns = `r.id, r.interface, r.received_at, r.status, r.order_key, r.lane, r.dedupe_key, r.duplicate_of,
	r.origin, r.payload, r.ack, r.meta, t.value AS type`

// withType selects messageColumns from q's message table r, joining its
// type row by the search table's message index.
func withType(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr(messageColumns).
		Join("LEFT JOIN ductus_ix_search AS t ON t.message_id = r.id AND t.field = ?", sqlrow.SearchType)
}

// keyBatch is how many IDs one IN list of MessageGetMany holds.
const keyBatch = 300

// MessageGetMany implements ixstore.Store: the messages of ids that exist
// (batches of keyBatch).
func (r *Reader) MessageGetMany(ctx context.Context, p *ixstore.MessageGetManyParams) ([]ixstore.Message, error) {
	var out []ixstore.Message
	for _, c := range sqlrow.Chunks(len(p.IDs), keyBatch) {
		got, err := list(ctx, r, "read interface messages", MessageGetQuery(r.db, p.IDs[c[0]:c[1]]), (*messageRow).message)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// MessageGetQuery reads the messages of ids by primary key (the plan
// tests EXPLAIN it).
func MessageGetQuery(db bun.IDB, ids []string) *bun.SelectQuery {
	return withType(db.NewSelect().TableExpr("ductus_ix_messages AS r")).Where("r.id IN (?)", bun.List(ids))
}

// MessageList implements ixstore.Store (MessageListQuery).
func (r *Reader) MessageList(ctx context.Context, p *ixstore.MessageListParams) ([]ixstore.Message, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("%w: MessageList: limit %d is not positive", actor.ErrInvalidArguments, p.Limit)
	}
	return list(ctx, r, "read interface messages", MessageListQuery(r.db, p), (*messageRow).message)
}

// MessageListQuery pages an interface's messages, newest first, filtered.
// Each filter has an index that leads with (interface, the filter's
// column) and ends with the ID, so the page is a range of it read
// backwards: the order key, the dedupe key and the status on the message
// table (migration 0005), the type through the search table's primary
// key; without a filter, (interface, id).
//
// The page's IDs are chosen first, in a subquery that reads only that
// index (the ID is in it), and only the page's rows are then read whole:
// where the subquery was the statement itself, MariaDB, costing reads of
// whole rows, read a page far back in a large interface through the
// index's interface prefix alone, from the newest message down to the
// page (800,000 rows for a page at a fifth of a million messages), not
// the range the ID bounds. A type with another filter joins the message
// table in the subquery, naming its interface too (or the filter's index,
// which leads with the interface, could not serve: a type and a key
// scanned the message table), and the ID range bounds both tables (or a
// merge join read the messages from the newest down to the page). The
// adapters' plan tests (search_plan_test.go) hold the plans to this over
// a million messages, EXPLAINing this query's text.
func MessageListQuery(db bun.IDB, p *ixstore.MessageListParams) *bun.SelectQuery {
	page := db.NewSelect()
	idCols := []string{"m.id"}
	type filter struct{ cond, v string }
	var filters []filter
	for _, f := range []filter{{"m.order_key = ?", p.Key}, {"m.dedupe_key = ?", p.DedupeKey}, {"m.status = ?", p.Status}} {
		if f.v != "" {
			filters = append(filters, f)
		}
	}
	if p.Type == "" {
		page = page.TableExpr("ductus_ix_messages AS m")
	} else {
		// Start from the type's rows: the search key orders them by ID.
		idCols = []string{"s.message_id"}
		page = page.TableExpr("ductus_ix_search AS s").
			Where("s.interface = ?", p.Interface).Where("s.field = ?", sqlrow.SearchType).Where("s.value = ?", p.Type)
		if len(filters) > 0 {
			page, idCols = page.Join("JOIN ductus_ix_messages AS m ON m.id = s.message_id"), append(idCols, "m.id")
		}
	}
	if p.Type == "" || len(filters) > 0 {
		page = page.Where("m.interface = ?", p.Interface)
		for _, f := range filters {
			page = page.Where(f.cond, f.v)
		}
	}
	for _, col := range idCols {
		if p.Before != "" {
			page = page.Where("? < ?", bun.Safe(col), p.Before)
		}
		if p.From != "" {
			page = page.Where("? >= ?", bun.Safe(col), p.From)
		}
	}
	page = page.ColumnExpr("? AS id", bun.Safe(idCols[0])).OrderExpr("? DESC", bun.Safe(idCols[0])).Limit(int64(p.Limit))
	// r joins before withType's t, whose condition names r.
	return withType(db.NewSelect().TableExpr("(?) AS p", page).Join("JOIN ductus_ix_messages AS r ON r.id = p.id")).
		OrderExpr("r.id DESC")
}
