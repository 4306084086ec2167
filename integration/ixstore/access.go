package ixstore

import "time"

// Token is an API token's row. The token itself is never stored: only the
// SHA-256 of its secret (Hash, lower-case hex), so a copy of the database
// does not let anyone call the API.
type Token struct {
	ID        string // the public ID ("tok_..."), what list and revoke name
	Name      string
	Hash      string // hex SHA-256 of the whole bearer token
	Role      string // viewer | operator | admin
	Perms     string // permissions beyond the role, comma-separated ("payloads,audit")
	Owner     string // the user it acts for; "" for a service token
	CreatedAt time.Time
	CreatedBy string
	RevokedAt time.Time // zero while the token is valid
}

// TokenInsertParams is a new token.
type TokenInsertParams struct {
	Token Token
}

// TokenByHashParams names a token by its hash.
type TokenByHashParams struct {
	Hash string
}

// TokenRevokeParams revokes a token by its public ID at At.
type TokenRevokeParams struct {
	ID string
	At time.Time
}

// AuditEntry is one row of the audit log: who did what to which target,
// how, from where, and with what outcome.
type AuditEntry struct {
	ID      string // a time-ordered UUIDv7, so newest-first pages are keyset pages on it
	At      time.Time
	Actor   string // the user or token name
	Via     string // session | token | cli
	Address string // the caller's address ("" from the CLI)
	Action  string // the operation (e.g. "getMessagePayload", "token.create")
	Target  string // what it acted on (a message ID, a token ID)
	Outcome string // ok | refused | failed
	Detail  []byte // a JSON document, or nil
}

// AuditInsertParams is one audit row.
type AuditInsertParams struct {
	Entry AuditEntry
}

// AuditListParams pages the audit log, newest first (or, OldestFirst,
// oldest first: an export).
type AuditListParams struct {
	// Before, when set, lists only rows with a smaller ID (older ones);
	// After only rows with a larger one (newer ones).
	Before      string
	After       string
	OldestFirst bool
	// Action and Actor, when set, keep only rows that match exactly.
	Action string
	Actor  string
	Limit  int // at least 1
}
