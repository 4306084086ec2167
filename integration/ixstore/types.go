package ixstore

import (
	"encoding/json"
	"fmt"
	"time"
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
	// Type is the message's type as operators search for it (HL7 v2:
	// MSH-9's first two components, e.g. ADT^A01; "" for other formats),
	// kept in the search table ductus_ix_search so a filter on it is an
	// index range.
	Type    string
	Payload []byte
	ACK     []byte // the ACK the sender got (MLLP), answered again to duplicates
	Meta    map[string]any
}

// MetaJSON is the message's meta as the JSON text the tables store.
func (m *Message) MetaJSON() (string, error) {
	b, err := json.Marshal(m.Meta)
	if err != nil {
		return "", fmt.Errorf("ixstore: the meta of message %s: %w", m.ID, err)
	}
	return string(b), nil
}

// SetMetaJSON fills Meta from stored JSON text; empty, "null" or
// unreadable text leaves it nil (meta is informational, never a reason to
// lose a message).
func (m *Message) SetMetaJSON(s string) {
	if s == "" || s == "null" {
		return
	}
	_ = json.Unmarshal([]byte(s), &m.Meta)
}

// Delivery links a message to a destination's lane message.
type Delivery struct {
	MessageID     string
	Destination   string
	LaneMessageID int64
	// An operator's dismissal of the delivery (zero when none): it is
	// final, whatever its lane message or send says.
	DismissedAt   time.Time
	DismissedBy   string
	DismissReason string
}

// DeliveryDismissParams record a dismissal of the delivery on
// LaneMessageID.
type DeliveryDismissParams struct {
	MessageID     string
	Destination   string
	LaneMessageID int64
	At            time.Time
	By            string
	Reason        string
}

// DeliveryRelinkParams move one delivery from lane message From to To.
type DeliveryRelinkParams struct {
	MessageID   string
	Destination string
	From, To    int64
}

// MessageInsertParams are the rows one intake writes.
type MessageInsertParams struct {
	Messages   []Message
	Deliveries []Delivery
}

// MessageByOriginParams names an origin within an interface.
type MessageByOriginParams struct {
	Interface string
	Origin    string
}

// MessageGetManyParams names messages by ID.
type MessageGetManyParams struct {
	IDs []string
}

// MessageListParams pages an interface's messages, newest first, with
// optional filters, every one of them served by an index.
type MessageListParams struct {
	Interface string
	// Before, when set, lists only messages with a smaller ID (IDs are
	// time-ordered UUIDv7s, so older ones); From, when set, only those
	// with an ID at least as large. A time range is an ID range.
	Before string
	From   string
	// Key, DedupeKey, Type and Status, when set, keep only messages whose
	// ordering key, dedupe key, type or intake status is exactly that.
	Key       string
	DedupeKey string
	Type      string
	Status    string
	Limit     int // at least 1
}

// MessageACKsParams names messages whose ACKs to read.
type MessageACKsParams struct {
	IDs []string
}

// DeliveryListParams names a message.
type DeliveryListParams struct {
	MessageID string
}

// DedupeClaimParams claims an interface's dedupe keys.
type DedupeClaimParams struct {
	Interface string
	// Keys maps each key to the message that would be its first.
	Keys map[string]string
	// At is the claim's time; Since is the oldest claim that still holds
	// (At minus the interface's dedupe window).
	At, Since time.Time
}

// DedupePruneParams bounds one prune of expired claims.
type DedupePruneParams struct {
	Interface string
	Before    time.Time
	Limit     int // at least 1
}

// SourceStatePutParams is one source state row; a nil Value deletes it.
type SourceStatePutParams struct {
	Interface string
	Key       string
	Value     []byte // JSON
	At        time.Time
}

// SourceStateGetParams names a source state row.
type SourceStateGetParams struct {
	Interface string
	Key       string
}

// Pause is a paused destination: who paused it, when and why.
type Pause struct {
	Interface   string
	Destination string
	Reason      string
	By          string
	At          time.Time
}

// PauseDeleteParams name a paused destination.
type PauseDeleteParams struct {
	Interface   string
	Destination string
}
