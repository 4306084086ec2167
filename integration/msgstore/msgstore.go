// Package msgstore keeps the integration engine's own rows: each interface
// message with its payload (stored once, however many destinations it fans
// out to), the lane message of each of its deliveries, dedupe keys and the
// sources' progress. Writes happen inside the intake's transaction (a
// store.Tx from the runtime's backend, so the rows commit with the lane
// messages); reads go through the backend's read connections.
//
// The rows are read and written through the engine's store seam
// (ixstore.Store), which each adapter implements beside its other SQL:
// this package holds the engine's logic over them (derived delivery
// statuses, state encoding, defaults) and no SQL.
package msgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
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
type Message = ixstore.Message

// Delivery links a message to a destination's lane message.
type Delivery = ixstore.Delivery

// Store is the engine's access to its tables.
type Store struct {
	be     store.Backend
	ix     ixstore.Store
	recent *recent
}

// New returns a Store over the backend's engine store.
func New(be ixstore.Backend) *Store {
	return &Store{be: be, ix: be.EngineStore(), recent: newRecent(recentMaxBytes)}
}

// Insert writes messages and their deliveries in tx.
func (s *Store) Insert(ctx context.Context, tx store.Tx, msgs []Message, deliveries []Delivery) error {
	if err := s.ix.MessageInsert(ctx, tx, &ixstore.MessageInsertParams{Messages: msgs, Deliveries: deliveries}); err != nil {
		return fmt.Errorf("msgstore: insert messages: %w", err)
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
// The claim locks each key's row (keys sorted, so two batches never wait
// on each other in opposite orders); a concurrent intake of the same key
// waits for this transaction and then reads the winner, so two senders
// racing with one message can never both be queued. (Reading first and
// writing afterwards let both miss the other on PostgreSQL and MySQL,
// where intakes run concurrently.)
func (s *Store) Claim(ctx context.Context, tx store.Tx, iface string, keys map[string]string, at, since time.Time) (map[string]string, error) {
	out, err := s.ix.DedupeClaim(ctx, tx, &ixstore.DedupeClaimParams{Interface: iface, Keys: keys, At: at, Since: since})
	if err != nil {
		return nil, fmt.Errorf("msgstore: claim dedupe keys: %w", err)
	}
	return out, nil
}

// PutState writes (or, with a nil value, deletes) a source's state row.
func (s *Store) PutState(ctx context.Context, tx store.Tx, iface, key string, value any) error {
	p := &ixstore.SourceStatePutParams{Interface: iface, Key: key, At: time.Now()}
	if value != nil {
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("msgstore: source state: %w", err)
		}
		p.Value = b
	}
	if err := s.ix.SourceStatePut(ctx, tx, p); err != nil {
		return fmt.Errorf("msgstore: write source state: %w", err)
	}
	return nil
}

// State reads a source's state row into v, reporting whether it exists.
func (s *Store) State(ctx context.Context, iface, key string, v any) (bool, error) {
	raw, ok, err := s.ix.SourceStateGet(ctx, &ixstore.SourceStateGetParams{Interface: iface, Key: key})
	if err != nil || !ok {
		return false, err
	}
	return true, json.Unmarshal(raw, v)
}

// DeleteState removes a source's state row in its own transaction.
func (s *Store) DeleteState(ctx context.Context, iface, key string) error {
	return s.PutState(ctx, nil, iface, key, nil)
}

// ByOrigin finds the message an origin produced in an interface (a routed
// hop or a schedule occurrence stored already), inside tx.
func (s *Store) ByOrigin(ctx context.Context, tx store.Tx, iface, origin string) (string, bool, error) {
	id, ok, err := s.ix.MessageByOrigin(ctx, tx, &ixstore.MessageByOriginParams{Interface: iface, Origin: origin})
	if err != nil {
		return "", false, fmt.Errorf("msgstore: find by origin: %w", err)
	}
	return id, ok, nil
}

// ACKs reads, inside tx, the stored ACKs of messages.
func (s *Store) ACKs(ctx context.Context, tx store.Tx, ids []string) (map[string][]byte, error) {
	out, err := s.ix.MessageACKs(ctx, tx, &ixstore.MessageACKsParams{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("msgstore: read ACKs: %w", err)
	}
	return out, nil
}

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
	out, err := s.ix.MessageGetMany(ctx, &ixstore.MessageGetManyParams{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("msgstore: %w", err)
	}
	return out, nil
}

// List pages an interface's messages, newest first, before the ID before
// ("" = from the newest). IDs are time-ordered (UUIDv7).
func (s *Store) List(ctx context.Context, iface, before string, limit int) ([]Message, error) {
	return s.Search(ctx, ixstore.MessageListParams{Interface: iface, Before: before, Limit: limit})
}

// Search pages an interface's messages, newest first, filtered (see
// ixstore.MessageListParams).
func (s *Store) Search(ctx context.Context, p ixstore.MessageListParams) ([]Message, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	out, err := s.ix.MessageList(ctx, &p)
	if err != nil {
		return nil, fmt.Errorf("msgstore: %w", err)
	}
	return out, nil
}

// PruneDedupe deletes up to limit of an interface's dedupe claims older
// than before, in its own transaction, and returns how many it deleted.
func (s *Store) PruneDedupe(ctx context.Context, iface string, before time.Time, limit int) (int64, error) {
	n, err := s.ix.DedupePrune(ctx, &ixstore.DedupePruneParams{Interface: iface, Before: before, Limit: limit})
	if err != nil {
		return 0, fmt.Errorf("msgstore: prune dedupe keys: %w", err)
	}
	return n, nil
}

// Relink moves a message's delivery to destination from lane message from
// to lane message to, in tx; false when it no longer points at from.
func (s *Store) Relink(ctx context.Context, tx store.Tx, messageID, destination string, from, to int64) (bool, error) {
	ok, err := s.ix.DeliveryRelink(ctx, tx, &ixstore.DeliveryRelinkParams{MessageID: messageID, Destination: destination, From: from, To: to})
	if err != nil {
		return false, fmt.Errorf("msgstore: relink the delivery of %s to %s: %w", messageID, destination, err)
	}
	return ok, nil
}

// Dismiss records an operator's dismissal of a message's delivery on lane
// message lane, in tx; false when the delivery moved or was dismissed.
func (s *Store) Dismiss(ctx context.Context, tx store.Tx, messageID, destination string, lane int64, by, reason string, at time.Time) (bool, error) {
	ok, err := s.ix.DeliveryDismiss(ctx, tx, &ixstore.DeliveryDismissParams{MessageID: messageID, Destination: destination, LaneMessageID: lane, At: at, By: by, Reason: reason})
	if err != nil {
		return false, fmt.Errorf("msgstore: dismiss the delivery of %s to %s: %w", messageID, destination, err)
	}
	return ok, nil
}
