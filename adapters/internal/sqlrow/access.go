package sqlrow

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// The operator API's statements (API tokens and the audit log), the same
// on every backend: ? placeholders, which Postgres rebinds. Arguments are
// built and checked here, so every backend refuses the same input with the
// same error before it writes anything: SQLite would store a value wider
// than its column, PostgreSQL and MySQL would refuse it in their own words.

// IXTokenColumns are ductus_ix_tokens' columns in the order
// IXTokenArgs writes them (readside reads them).
const IXTokenColumns = `id, name, hash, role, perms, owner, created_at, created_by, revoked_at`

// IXAuditColumns are ductus_ix_audit's columns in the order IXAuditArgs
// writes them (readside reads them).
const IXAuditColumns = `id, at, actor, via, address, action, target, outcome, detail`

// The operator API's fixed statements.
const (
	IXTokenInsert = `INSERT INTO ductus_ix_tokens (` + IXTokenColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// IXTokenRevoke changes only a valid token: revoking twice reports
	// no change and keeps the first revocation's time.
	IXTokenRevoke = `UPDATE ductus_ix_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`
	IXAuditInsert = `INSERT INTO ductus_ix_audit (` + IXAuditColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// Column widths of the engine line's 0002_api_access.sql, in characters
// (PostgreSQL's and MySQL's VARCHAR count characters; the IDs and the
// hash are ASCII, so their byte-counted VARBINARY on MySQL holds as many).
const (
	widthID      = 40
	widthHash    = 64
	widthName    = 64
	widthShort   = 16 // role, via, outcome
	widthAction  = 128
	widthDefault = 255
)

// field is one text value to check against its column.
type field struct {
	name  string
	value string
	width int
}

// checkFields refuses text that is not UTF-8 or is wider than its column.
func checkFields(what string, fields ...field) error {
	for _, f := range fields {
		if !utf8.ValidString(f.value) {
			return fmt.Errorf("%w: %s: the %s is not UTF-8", actor.ErrInvalidArguments, what, f.name)
		}
		if n := utf8.RuneCountInString(f.value); n > f.width {
			return fmt.Errorf("%w: %s: the %s has %d characters, at most %d fit", actor.ErrInvalidArguments, what, f.name, n, f.width)
		}
	}
	return nil
}

// IXTokenArgs checks a new token and returns its values in IXTokenColumns
// order. The hash must be a SHA-256 in lower-case hex: the lookup compares
// it exactly, so a token stored with any other spelling could never be
// found.
func IXTokenArgs(t *ixstore.Token) ([]any, error) {
	if t.ID == "" {
		return nil, fmt.Errorf("%w: a token needs an ID", actor.ErrInvalidArguments)
	}
	if !isHexSHA256(t.Hash) {
		return nil, fmt.Errorf("%w: token %s: the hash must be 64 lower-case hex digits", actor.ErrInvalidArguments, t.ID)
	}
	if err := checkFields("token "+t.ID,
		field{"ID", t.ID, widthID}, field{"name", t.Name, widthName}, field{"role", t.Role, widthShort},
		field{"permissions", t.Perms, widthDefault}, field{"owner", t.Owner, widthDefault},
		field{"creator", t.CreatedBy, widthDefault}); err != nil {
		return nil, err
	}
	return []any{t.ID, t.Name, t.Hash, t.Role, t.Perms, NullString(t.Owner), t.CreatedAt.UnixMicro(), t.CreatedBy, nullMicros(t.RevokedAt)}, nil
}

// isHexSHA256 reports whether s is 64 lower-case hex digits.
func isHexSHA256(s string) bool {
	if len(s) != widthHash {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IXTokenRevokeArgs returns IXTokenRevoke's arguments. A zero time is
// refused: it would mark the token revoked in the table while its row
// read back with a zero RevokedAt, that is as valid.
func IXTokenRevokeArgs(p *ixstore.TokenRevokeParams) ([]any, error) {
	if p.At.IsZero() {
		return nil, fmt.Errorf("%w: revoking token %s needs the time of the revocation", actor.ErrInvalidArguments, p.ID)
	}
	return []any{p.At.UnixMicro(), p.ID}, nil
}

// IXAuditArgs checks an audit row and returns its values in
// IXAuditColumns order. Detail must be a JSON document (or empty, stored
// as NULL): the log's readers parse it.
func IXAuditArgs(e *ixstore.AuditEntry) ([]any, error) {
	if e.ID == "" {
		return nil, fmt.Errorf("%w: an audit row needs an ID", actor.ErrInvalidArguments)
	}
	what := "audit row " + e.ID
	if err := checkFields(what,
		field{"ID", e.ID, widthID}, field{"actor", e.Actor, widthDefault}, field{"via", e.Via, widthShort},
		field{"address", e.Address, widthDefault}, field{"action", e.Action, widthAction},
		field{"target", e.Target, widthDefault}, field{"outcome", e.Outcome, widthShort}); err != nil {
		return nil, err
	}
	var detail any
	if len(e.Detail) > 0 {
		if !json.Valid(e.Detail) {
			return nil, fmt.Errorf("%w: %s: the detail is not a JSON document", actor.ErrInvalidArguments, what)
		}
		detail = string(e.Detail)
	}
	return []any{e.ID, e.At.UnixMicro(), e.Actor, e.Via, e.Address, e.Action, e.Target, e.Outcome, detail}, nil
}

// nullMicros maps the zero time to NULL, any other to microseconds since
// the epoch.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}
