package store

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"time"

	"github.com/ductus/ductus/actor"
)

// ProcessInfo is a runtime process row.
type ProcessInfo struct {
	ID          string
	Kind        string
	Host        string
	PID         int
	Version     string
	Metadata    []byte // JSON
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   time.Time // zero while running
}

// DeadLetter is a dead-lettered message.
type DeadLetter struct {
	MessageID int64
	Ref       actor.Ref
	Seq       int64
	Name      string
	Args      []byte
	Error     string
	Attempts  int
	DeadAt    time.Time
}

// DeadLetterListParams pages dead letters, oldest first.
type DeadLetterListParams struct {
	Type    string // "" = every type
	AfterID int64
	Limit   int
}

// ActorInfo describes a stored actor for operators and reconciliation.
type ActorInfo struct {
	PK           int64
	Ref          actor.Ref
	State        []byte
	StateVersion int
	Generation   int64
	LeaseOwner   string
	LeaseExpires time.Time
	Paused       bool
	Unfinished   int // ready + claimed messages
	HeadDue      time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// StateFilter matches actors whose state has a value at a JSON path,
// e.g. Path "status", Value "submitted" (string, number, bool or nil).
type StateFilter struct {
	Path  string // dotted keys: "order.status"
	Value any
}

// ActorListParams pages actors of a type by ID.
type ActorListParams struct {
	Type    string
	AfterID string // page after this actor ID
	Limit   int
	Filter  *StateFilter
	// Quiet, when > 0, keeps only actors without pending work (no ready or
	// claimed messages, no reminders) whose last change is older than Quiet.
	Quiet time.Duration
	// OrphanedAgainst, when set, keeps only actors whose ID has no row in
	// the owner table: Table and Column are SQL identifiers of the
	// application's table in the same database.
	OrphanedAgainst *OwnerRelation
}

// OwnerRelation names an application table whose key column holds live
// owner IDs.
type OwnerRelation struct {
	Table  string
	Column string
}

// PruneParams deletes finished history older than Keep, in bounded batches.
type PruneParams struct {
	Keep  time.Duration
	Limit int // rows per table per call
}

// PruneResult counts deleted rows.
type PruneResult struct {
	Messages   int
	Effects    int
	Outbox     int
	Broadcasts int
}

// Total is the number of rows deleted.
func (r PruneResult) Total() int { return r.Messages + r.Effects + r.Outbox + r.Broadcasts }

var (
	statePathKey  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	sqlIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
)

// StatePath validates a StateFilter path and returns its keys. Keys are
// plain identifiers, so a path can be placed in a JSON path expression
// without quoting problems.
func StatePath(path string) ([]string, error) {
	keys := strings.Split(path, ".")
	if len(keys) > 16 {
		return nil, fmt.Errorf("%w: state path %q has more than 16 keys", actor.ErrInvalidArguments, path)
	}
	for _, k := range keys {
		if !statePathKey.MatchString(k) {
			return nil, fmt.Errorf("%w: state path %q: key %q must be letters, digits and _", actor.ErrInvalidArguments, path, k)
		}
	}
	return keys, nil
}

// FilterValue checks a StateFilter value's type: string, bool, nil or a
// number (any Go integer or float kind, or json.Number).
func FilterValue(v any) error {
	switch v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return nil
	}
	return fmt.Errorf("%w: state filter value of type %T (want string, number, bool or nil)", actor.ErrInvalidArguments, v)
}

// CheckOwnerRelation validates an OwnerRelation's identifiers.
func CheckOwnerRelation(o *OwnerRelation) error {
	if !sqlIdentifier.MatchString(o.Table) || !sqlIdentifier.MatchString(o.Column) {
		return fmt.Errorf("%w: owner table %q and column %q must be plain SQL identifiers", actor.ErrInvalidArguments, o.Table, o.Column)
	}
	return nil
}
