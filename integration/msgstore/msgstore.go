// Package msgstore keeps the integration engine's own rows: each interface
// message with its payload (stored once, however many destinations it fans
// out to), the lane message of each of its deliveries, dedupe keys and the
// sources' progress. Writes happen inside the intake's transaction (a
// store.Tx from the runtime's backend, so the rows commit with the lane
// messages); reads go through the backend's read connections.
//
// The SQL is written once, in the subset SQLite, PostgreSQL and
// MySQL/MariaDB share, with ? placeholders (the Postgres adapter translates
// them); the one statement that differs, an upsert, is chosen by dialect.
package msgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// Message statuses of an interface message row. Delivery statuses are
// derived (see Deliveries); a duplicate is never queued.
const (
	StatusPending   = "pending"
	StatusDuplicate = "duplicate"
	StatusRejected  = "rejected" // unusable input kept for audit (a file record that does not parse)
)

// Message is one stored interface message.
type Message struct {
	ID          string
	Interface   string
	ReceivedAt  time.Time
	Status      string
	Key         string // the ordering key ("" without one)
	Lane        int
	DedupeKey   string
	DuplicateOf string
	Origin      string // the routed-from message and destination, or a schedule occurrence
	Payload     []byte
	ACK         []byte // the ACK the sender got (MLLP), answered again to duplicates
	Meta        map[string]any
}

// Delivery links a message to a destination's lane message.
type Delivery struct {
	MessageID     string
	Destination   string
	LaneMessageID int64
}

// Store is the engine's access to its tables.
type Store struct {
	be store.Backend
}

// New returns a Store over the runtime's backend.
func New(be store.Backend) *Store { return &Store{be: be} }

// Insert writes messages and their deliveries in tx.
func (s *Store) Insert(ctx context.Context, tx store.Tx, msgs []Message, deliveries []Delivery) error {
	for _, chunk := range chunks(len(msgs), 100) {
		var q strings.Builder
		q.WriteString(`INSERT INTO ductus_ix_messages (id, interface, received_at, status, order_key, lane, dedupe_key, duplicate_of, origin, payload, ack, meta) VALUES `)
		args := make([]any, 0, 12*(chunk[1]-chunk[0]))
		for i, m := range msgs[chunk[0]:chunk[1]] {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?)")
			meta, err := json.Marshal(m.Meta)
			if err != nil {
				return fmt.Errorf("msgstore: message meta: %w", err)
			}
			args = append(args, m.ID, m.Interface, m.ReceivedAt.UnixMicro(), m.Status, null(m.Key), m.Lane, null(m.DedupeKey),
				null(m.DuplicateOf), null(m.Origin), m.Payload, nullBytes(m.ACK), string(meta))
		}
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("msgstore: insert messages: %w", err)
		}
	}
	for _, chunk := range chunks(len(deliveries), 300) {
		var q strings.Builder
		q.WriteString(`INSERT INTO ductus_ix_deliveries (message_id, destination, lane_message_id) VALUES `)
		args := make([]any, 0, 3*(chunk[1]-chunk[0]))
		for i, d := range deliveries[chunk[0]:chunk[1]] {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?)")
			args = append(args, d.MessageID, d.Destination, d.LaneMessageID)
		}
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("msgstore: insert deliveries: %w", err)
		}
	}
	return nil
}

// Claim claims dedupe keys for messages, atomically with respect to other
// transactions claiming the same keys: keys maps each key to the message
// that would be its first; a key already claimed since since keeps its
// claim (an older one is taken over). It returns, for every key, the
// message that holds it once this transaction commits: the caller's for a
// key it won, the earlier message's for a duplicate.
//
// The insert-if-absent locks each key's row (keys sorted, so two batches
// never wait on each other in opposite orders); a concurrent intake of the
// same key waits for this transaction and then reads the winner, so two
// senders racing with one message can never both be queued. (Reading
// first and writing afterwards let both miss the other on PostgreSQL and
// MySQL, where intakes run concurrently.)
func (s *Store) Claim(ctx context.Context, tx store.Tx, iface string, keys map[string]string, at, since time.Time) (map[string]string, error) {
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	out := make(map[string]string, len(keys))
	for _, chunk := range chunks(len(sorted), 300) {
		part := sorted[chunk[0]:chunk[1]]
		var q strings.Builder
		q.WriteString(`INSERT INTO ductus_ix_dedupe (interface, dedupe_key, message_id, seen_at) VALUES `)
		args := make([]any, 0, 4*len(part)+2)
		for i, k := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?,?)")
			args = append(args, iface, k, keys[k], at.UnixMicro())
		}
		cutoff := since.UnixMicro()
		if tx.Dialect() == "mysql" {
			// message_id first: each assignment sees the columns already
			// assigned, and seen_at must still be the old one here.
			q.WriteString(` ON DUPLICATE KEY UPDATE message_id = IF(seen_at < ?, VALUES(message_id), message_id), seen_at = IF(seen_at < ?, VALUES(seen_at), seen_at)`)
			args = append(args, cutoff, cutoff)
		} else {
			q.WriteString(` ON CONFLICT (interface, dedupe_key) DO UPDATE SET message_id = excluded.message_id, seen_at = excluded.seen_at WHERE ductus_ix_dedupe.seen_at < ?`)
			args = append(args, cutoff)
		}
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return nil, fmt.Errorf("msgstore: claim dedupe keys: %w", err)
		}
		// The rows are locked by this transaction now; a statement that
		// starts after the insert sees the committed winner of a key
		// another transaction held (both backends read committed).
		args = append(args[:0], iface)
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := tx.Query(ctx, `SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND dedupe_key IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("msgstore: read dedupe claims: %w", err)
		}
		for rows.Next() {
			var k, id string
			if err := rows.Scan(&k, &id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("msgstore: read dedupe claims: %w", err)
			}
			out[k] = id
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("msgstore: read dedupe claims: %w", err)
		}
	}
	for k := range keys {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("msgstore: the dedupe key %q of interface %s has no claim after claiming it", k, iface)
		}
	}
	return out, nil
}

// PutState writes (or, with a nil value, deletes) a source's state row.
func (s *Store) PutState(ctx context.Context, tx store.Tx, iface, key string, value any) error {
	if value == nil {
		_, err := tx.Exec(ctx, `DELETE FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, iface, key)
		return err
	}
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("msgstore: source state: %w", err)
	}
	_, err = tx.Exec(ctx, upsert(tx.Dialect(), "ductus_ix_source_state", []string{"interface", "state_key"}, []string{"value", "updated_at"}),
		iface, key, string(b), time.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("msgstore: write source state: %w", err)
	}
	return nil
}

// State reads a source's state row into v, reporting whether it exists.
func (s *Store) State(ctx context.Context, iface, key string, v any) (bool, error) {
	rows, err := s.query(ctx, `SELECT value FROM ductus_ix_source_state WHERE interface = ? AND state_key = ?`, iface, key)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	var raw string
	if err := rows.Scan(&raw); err != nil {
		return false, err
	}
	return true, json.Unmarshal([]byte(raw), v)
}

// DeleteState removes a source's state row in its own transaction.
func (s *Store) DeleteState(ctx context.Context, iface, key string) error {
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := s.PutState(ctx, tx, iface, key, nil); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// ByOrigin finds the message an origin produced in an interface (a routed
// hop or a schedule occurrence stored already), inside tx.
func (s *Store) ByOrigin(ctx context.Context, tx store.Tx, iface, origin string) (string, bool, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM ductus_ix_messages WHERE interface = ? AND origin = ?`, iface, origin)
	if err != nil {
		return "", false, fmt.Errorf("msgstore: find by origin: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return "", false, rows.Err()
	}
	var id string
	if err := rows.Scan(&id); err != nil {
		return "", false, fmt.Errorf("msgstore: find by origin: %w", err)
	}
	return id, true, nil
}

const messageColumns = `id, interface, received_at, status, order_key, lane, dedupe_key, duplicate_of, origin, payload, ack, meta`

// Get reads one message with its payload.
func (s *Store) Get(ctx context.Context, id string) (*Message, error) {
	msgs, err := s.GetMany(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: interface message %s", actor.ErrNotFound, id)
	}
	return &msgs[0], nil
}

// GetMany reads messages with their payloads (missing IDs are skipped).
func (s *Store) GetMany(ctx context.Context, ids []string) ([]Message, error) {
	var out []Message
	for _, chunk := range chunks(len(ids), 300) {
		args := make([]any, 0, chunk[1]-chunk[0])
		for _, id := range ids[chunk[0]:chunk[1]] {
			args = append(args, id)
		}
		rows, err := s.query(ctx, `SELECT `+messageColumns+` FROM ductus_ix_messages WHERE id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, m)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// List pages an interface's messages, newest first, before the ID before
// ("" = from the newest). IDs are time-ordered (UUIDv7).
func (s *Store) List(ctx context.Context, iface, before string, limit int) ([]Message, error) {
	if limit <= 0 {
		limit = 100
	}
	q, args := `SELECT `+messageColumns+` FROM ductus_ix_messages WHERE interface = ?`, []any{iface}
	if before != "" {
		q, args = q+` AND id < ?`, append(args, before)
	}
	rows, err := s.query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// PruneDedupe deletes up to limit of an interface's dedupe claims older
// than before, in its own transaction, and returns how many it deleted.
func (s *Store) PruneDedupe(ctx context.Context, iface string, before time.Time, limit int) (int64, error) {
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var n int64
	cutoff := before.UnixMicro()
	if tx.Dialect() == "mysql" {
		n, err = tx.Exec(ctx, `DELETE FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? ORDER BY seen_at LIMIT ?`, iface, cutoff, limit)
	} else {
		// The outer seen_at test matters: a claim that took over an expired
		// key after the subquery chose it must survive (PostgreSQL rechecks
		// the outer condition on the row's newest version).
		n, err = tx.Exec(ctx, `DELETE FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? AND dedupe_key IN (SELECT dedupe_key FROM ductus_ix_dedupe WHERE interface = ? AND seen_at < ? ORDER BY seen_at LIMIT ?)`,
			iface, cutoff, iface, cutoff, limit)
	}
	if err != nil {
		return 0, fmt.Errorf("msgstore: prune dedupe keys: %w", err)
	}
	return n, tx.Commit(ctx)
}

type scanner interface{ Scan(...any) error }

func scanMessage(sc scanner) (Message, error) {
	var m Message
	var received int64
	var key, dedupe, dup, origin sql.NullString
	var ack []byte
	var meta sql.NullString
	if err := sc.Scan(&m.ID, &m.Interface, &received, &m.Status, &key, &m.Lane, &dedupe, &dup, &origin, &m.Payload, &ack, &meta); err != nil {
		return m, fmt.Errorf("msgstore: read a message: %w", err)
	}
	m.ReceivedAt = time.UnixMicro(received)
	m.Key, m.DedupeKey, m.DuplicateOf, m.Origin = key.String, dedupe.String, dup.String, origin.String
	if len(ack) > 0 {
		m.ACK = ack
	}
	if meta.Valid && meta.String != "" && meta.String != "null" {
		_ = json.Unmarshal([]byte(meta.String), &m.Meta)
	}
	return m, nil
}

// query runs a read on the backend's read connections (or, for a backend
// without them, in a transaction that is rolled back).
func (s *Store) query(ctx context.Context, q string, args ...any) (store.Rows, error) {
	if qr, ok := s.be.(store.Querier); ok {
		rows, err := qr.Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("msgstore: %w", err)
		}
		return rows, nil
	}
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		tx.Rollback(ctx)
		return nil, fmt.Errorf("msgstore: %w", err)
	}
	return &txRows{Rows: rows, tx: tx, ctx: ctx}, nil
}

type txRows struct {
	store.Rows
	tx  store.Tx
	ctx context.Context
}

func (r *txRows) Close() error {
	err := r.Rows.Close()
	r.tx.Rollback(r.ctx)
	return err
}

// upsert builds an insert-or-update of one row by its key columns.
func upsert(dialect, table string, keys, cols []string) string {
	all := append(append([]string{}, keys...), cols...)
	q := "INSERT INTO " + table + " (" + strings.Join(all, ", ") + ") VALUES (" + placeholders(len(all)) + ")"
	set := make([]string, len(cols))
	for i, c := range cols {
		if dialect == "mysql" {
			set[i] = c + " = VALUES(" + c + ")"
		} else {
			set[i] = c + " = excluded." + c
		}
	}
	if dialect == "mysql" {
		return q + " ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	}
	return q + " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

func chunks(n, size int) [][2]int {
	var out [][2]int
	for s := 0; s < n; s += size {
		out = append(out, [2]int{s, min(s+size, n)})
	}
	return out
}

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
