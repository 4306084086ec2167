package sqlrow

import (
	"fmt"
	"slices"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// The engine store's statements that read the same on every backend
// (? placeholders; Postgres rebinds them), built here once; each adapter
// runs them in its own transaction types and writes its own upserts.

// Batch sizes of the engine's multi-row statements.
const (
	ixMessageBatch = 100
	ixKeyBatch     = 300
)

// IXMessageColumns are ductus_ix_messages' columns in the order
// IXMessageArgs writes them (readside reads them).
const IXMessageColumns = `id, interface, received_at, status, order_key, lane, dedupe_key, duplicate_of, origin, payload, ack, meta`

// ixMessageWidth is the number of IXMessageColumns.
const ixMessageWidth = 12

// Statement is one statement to run, with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Rows is a result being read: *sql.Rows, pgx.Rows. The caller closes it.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// IXInserts are the multi-row inserts of an intake's messages (batches of
// 100) and deliveries (batches of 300).
func IXInserts(p *ixstore.MessageInsertParams) ([]Statement, error) {
	var out []Statement
	for _, c := range Chunks(len(p.Messages), ixMessageBatch) {
		args := make([]any, 0, ixMessageWidth*(c[1]-c[0]))
		for i := c[0]; i < c[1]; i++ {
			var err error
			if args, err = ixMessageArgs(args, &p.Messages[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, Statement{`INSERT INTO ductus_ix_messages (` + IXMessageColumns + `) VALUES ` + Values(c[1]-c[0], ixMessageWidth), args})
	}
	var search []any
	for i := range p.Messages {
		if m := &p.Messages[i]; m.Type != "" {
			if len(m.Type) > widthSearchValue {
				return nil, fmt.Errorf("%w: message %s: the type is over %d bytes", actor.ErrInvalidArguments, m.ID, widthSearchValue)
			}
			search = append(search, m.Interface, SearchType, m.Type, m.ID)
		}
	}
	for _, c := range Chunks(len(search)/4, ixKeyBatch) {
		out = append(out, Statement{`INSERT INTO ductus_ix_search (interface, field, value, message_id) VALUES ` + Values(c[1]-c[0], 4), search[4*c[0] : 4*c[1]]})
	}
	for _, c := range Chunks(len(p.Deliveries), ixKeyBatch) {
		args := make([]any, 0, 3*(c[1]-c[0]))
		for _, d := range p.Deliveries[c[0]:c[1]] {
			args = append(args, d.MessageID, d.Destination, d.LaneMessageID)
		}
		out = append(out, Statement{`INSERT INTO ductus_ix_deliveries (message_id, destination, lane_message_id) VALUES ` + Values(c[1]-c[0], 3), args})
	}
	return out, nil
}

// ixMessageArgs appends m's values in IXMessageColumns order to args.
func ixMessageArgs(args []any, m *ixstore.Message) ([]any, error) {
	meta, err := m.MetaJSON()
	if err != nil {
		return nil, err
	}
	return append(args, m.ID, m.Interface, m.ReceivedAt.UnixMicro(), m.Status, NullString(m.Key), m.Lane, NullString(m.DedupeKey),
		NullString(m.DuplicateOf), NullString(m.Origin), m.Payload, NullBytes(m.ACK), meta), nil
}

// SearchType is the ductus_ix_search field of a message's type.
const SearchType = "type"

// widthSearchValue is ductus_ix_search.value's width.
const widthSearchValue = 255

// IXACKReads read messages' ACKs by ID (batches of 300).
func IXACKReads(ids []string) []Statement {
	return inLists(`SELECT id, ack FROM ductus_ix_messages WHERE id IN `, nil, ids)
}

// inLists are one statement per batch of keys: prefix, then "(?,...)"
// over the keys, with first's arguments before them.
func inLists(prefix string, first []any, keys []string) []Statement {
	var out []Statement
	for _, c := range Chunks(len(keys), ixKeyBatch) {
		args := make([]any, 0, len(first)+c[1]-c[0])
		args = append(args, first...)
		for _, k := range keys[c[0]:c[1]] {
			args = append(args, k)
		}
		out = append(out, Statement{prefix + `(` + List(c[1]-c[0]) + `)`, args})
	}
	return out
}

// IXClaim is one batch of a dedupe claim: the insert-if-absent (without
// its conflict clause, which each dialect writes) and the read of the
// winners that follows it.
type IXClaim struct {
	Insert Statement
	Read   Statement
}

// IXClaims are a dedupe claim's batches (300 keys each), keys sorted:
// claimers lock keys in one order, so two batches never wait on each
// other in opposite orders.
func IXClaims(p *ixstore.DedupeClaimParams) []IXClaim {
	sorted := make([]string, 0, len(p.Keys))
	for k := range p.Keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	at := p.At.UnixMicro()
	var out []IXClaim
	for _, c := range Chunks(len(sorted), ixKeyBatch) {
		part := sorted[c[0]:c[1]]
		args := make([]any, 0, 4*len(part)+2)
		for _, k := range part {
			args = append(args, p.Interface, k, p.Keys[k], at)
		}
		out = append(out, IXClaim{
			Insert: Statement{`INSERT INTO ductus_ix_dedupe (interface, dedupe_key, message_id, seen_at) VALUES ` + Values(len(part), 4), args},
			Read:   inLists(`SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND dedupe_key IN `, []any{p.Interface}, part)[0],
		})
	}
	return out
}

// CheckClaimed reports a key of a claim left without its holder (a claim
// must leave every key held, by the caller's message or an earlier one).
func CheckClaimed(p *ixstore.DedupeClaimParams, held map[string]string) error {
	for k := range p.Keys {
		if _, ok := held[k]; !ok {
			return fmt.Errorf("the dedupe key %q of interface %s has no claim after claiming it", k, p.Interface)
		}
	}
	return nil
}

// ScanPairs reads rows of (key, value) into into: dedupe claims
// (key, message) and ACKs (message, ack).
func ScanPairs[V string | []byte](rows Rows, into map[string]V) error {
	for rows.Next() {
		var k string
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		into[k] = v
	}
	return rows.Err()
}

// IXDeliveryRelink moves a delivery to a new lane message, only from the
// one it was read with (args: to, message, destination, from). A
// dismissal of the old lane message no longer applies.
const IXDeliveryRelink = `UPDATE ductus_ix_deliveries SET lane_message_id = ? WHERE message_id = ? AND destination = ? AND lane_message_id = ?`

// IXDeliveryDismiss records a dismissal, only while the delivery is on the
// lane message it was decided for and only once (args:
// IXDeliveryDismissArgs). The primary key refuses a concurrent second.
const IXDeliveryDismiss = `INSERT INTO ductus_ix_dismissals (message_id, destination, lane_message_id, dismissed_at, dismissed_by, reason)
SELECT d.message_id, d.destination, d.lane_message_id, ?, ?, ? FROM ductus_ix_deliveries d
WHERE d.message_id = ? AND d.destination = ? AND d.lane_message_id = ?
  AND NOT EXISTS (SELECT 1 FROM ductus_ix_dismissals x WHERE x.message_id = d.message_id AND x.destination = d.destination AND x.lane_message_id = d.lane_message_id)`

// IXDeliveryDismissArgs are IXDeliveryDismiss's arguments.
func IXDeliveryDismissArgs(p *ixstore.DeliveryDismissParams) []any {
	return []any{p.At.UnixMicro(), p.By, p.Reason, p.MessageID, p.Destination, p.LaneMessageID}
}

// Fixed statements of the engine store that every backend writes alike.
const (
	IXByOrigin    = `SELECT id FROM ductus_ix_messages WHERE interface = ? AND origin = ?`
	IXStateGet    = `SELECT value FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`
	IXStateDelete = `DELETE FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`
	// IXStatePut is the source state insert, before the dialect's
	// conflict clause (value and updated_at replace the old).
	IXStatePut = `INSERT INTO ductus_ix_source_state (interface, state_key, value, updated_at) VALUES (?, ?, ?, ?)`
)

// NullString maps "" to NULL.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NullBytes maps an empty slice to NULL.
func NullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
