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

// Seen returns, for the dedupe keys of an interface seen since since, the
// message that first used each.
func (s *Store) Seen(ctx context.Context, tx store.Tx, iface string, keys []string, since time.Time) (map[string]string, error) {
	out := map[string]string{}
	for _, chunk := range chunks(len(keys), 300) {
		args := []any{iface, since.UnixMicro()}
		for _, k := range keys[chunk[0]:chunk[1]] {
			args = append(args, k)
		}
		rows, err := tx.Query(ctx, `SELECT dedupe_key, message_id FROM ductus_ix_dedupe WHERE interface = ? AND seen_at >= ? AND dedupe_key IN (`+
			placeholders(chunk[1]-chunk[0])+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("msgstore: read dedupe keys: %w", err)
		}
		for rows.Next() {
			var k, id string
			if err := rows.Scan(&k, &id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("msgstore: read dedupe keys: %w", err)
			}
			out[k] = id
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Claim records dedupe keys as first seen by their messages now (replacing
// an expired claim of the same key).
func (s *Store) Claim(ctx context.Context, tx store.Tx, iface string, keys map[string]string, at time.Time) error {
	for k, id := range keys {
		if _, err := tx.Exec(ctx, upsert(tx.Dialect(), "ductus_ix_dedupe", []string{"interface", "dedupe_key"}, []string{"message_id", "seen_at"}),
			iface, k, id, at.UnixMicro()); err != nil {
			return fmt.Errorf("msgstore: claim dedupe key: %w", err)
		}
	}
	return nil
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

// PruneDedupe deletes dedupe claims older than before, at most limit.
func (s *Store) PruneDedupe(ctx context.Context, before time.Time, limit int) (int64, error) {
	tx, err := s.be.Begin(ctx, store.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var n int64
	if tx.Dialect() == "mysql" {
		n, err = tx.Exec(ctx, `DELETE FROM ductus_ix_dedupe WHERE seen_at < ? ORDER BY seen_at LIMIT ?`, before.UnixMicro(), limit)
	} else {
		n, err = tx.Exec(ctx, `DELETE FROM ductus_ix_dedupe WHERE (interface, dedupe_key) IN (SELECT interface, dedupe_key FROM ductus_ix_dedupe WHERE seen_at < ? ORDER BY seen_at LIMIT ?)`,
			before.UnixMicro(), limit)
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
