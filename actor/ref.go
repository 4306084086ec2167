package actor

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Ref addresses an actor: a registered type name and an ID. It is a plain
// value, cheap to copy and JSON-serializable; holding a Ref does not imply
// that an activation exists.
type Ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// NewRef returns the Ref for typeName and id.
func NewRef(typeName, id string) Ref { return Ref{Type: typeName, ID: id} }

// String renders the Ref for logs as type/"id" (the ID quoted, since it may
// contain any character).
func (r Ref) String() string { return r.Type + "/" + strconv.Quote(r.ID) }

// ValidateID checks an actor ID against the configured byte limit: it must be
// non-empty, valid UTF-8, free of NUL bytes and at most maxBytes long.
func ValidateID(id string, maxBytes int) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: actor ID is empty", ErrInvalidID)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: actor ID is not valid UTF-8", ErrInvalidID)
	case len(id) > maxBytes:
		return &LimitError{What: "actor ID", Size: len(id), Limit: maxBytes}
	}
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return fmt.Errorf("%w: actor ID contains a NUL byte", ErrInvalidID)
		}
	}
	return nil
}

// MessageID identifies a durable mailbox message. IDs are assigned by the
// database at enqueue and never reused.
type MessageID int64

// String renders the ID in decimal.
func (id MessageID) String() string { return strconv.FormatInt(int64(id), 10) }
