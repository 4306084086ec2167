package sqlrow

import (
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
)

// IXMessageColumns are ductus_ix_messages' columns in the order
// IXMessageArgs writes and ScanIXMessage reads them (the same on every
// backend).
const IXMessageColumns = `id, interface, received_at, status, order_key, lane, dedupe_key, duplicate_of, origin, payload, ack, meta`

// IXMessageWidth is the number of IXMessageColumns.
const IXMessageWidth = 12

// IXMessageArgs appends m's values in IXMessageColumns order to args.
func IXMessageArgs(args []any, m *ixstore.Message) ([]any, error) {
	meta, err := m.MetaJSON()
	if err != nil {
		return nil, err
	}
	return append(args, m.ID, m.Interface, m.ReceivedAt.UnixMicro(), m.Status, NullString(m.Key), m.Lane, NullString(m.DedupeKey),
		NullString(m.DuplicateOf), NullString(m.Origin), m.Payload, NullBytes(m.ACK), meta), nil
}

// ScanIXMessage reads a row of IXMessageColumns.
func ScanIXMessage(sc Scanner) (ixstore.Message, error) {
	var m ixstore.Message
	var received int64
	var key, dedupe, dup, origin, meta sql.NullString
	var ack []byte
	if err := sc.Scan(&m.ID, &m.Interface, &received, &m.Status, &key, &m.Lane, &dedupe, &dup, &origin, &m.Payload, &ack, &meta); err != nil {
		return m, fmt.Errorf("read an interface message: %w", err)
	}
	m.ReceivedAt = time.UnixMicro(received)
	m.Key, m.DedupeKey, m.DuplicateOf, m.Origin = key.String, dedupe.String, dup.String, origin.String
	if len(ack) > 0 {
		m.ACK = ack
	}
	m.SetMetaJSON(meta.String)
	return m, nil
}

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

// SortedKeys returns a claim's keys sorted: claimers lock keys in one
// order, so two batches never wait on each other in opposite orders.
func SortedKeys(keys map[string]string) []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
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
