// Package ixstore is the integration engine's store seam: the [Store]
// interface through which the engine reads and writes its own tables
// (interface messages, deliveries, dedupe claims, source state), and the
// parameter and row types it speaks. It is to the engine what runtime/store
// is to the runtime, in the same shape: Noun+Verb methods taking
// (ctx, *Params) and returning this package's rows, so no SQL and no
// dialect appears anywhere under integration/.
//
// Each adapter (adapters/sqlite, adapters/postgres, adapters/mysql)
// implements Store beside its other SQL, in files named engine_*.go, and
// hands it out through [Backend.EngineStore]: the engine asks its backend
// for its store by an explicit, typed method, never by a type assertion on
// an optional interface. That makes the one import edge from adapters/*
// into integration/: adapters/* -> github.com/ductus/ductus/integration/ixstore.
// This package imports only actor and runtime/store, so the edge brings
// nothing else of the engine into the runtime's adapters.
//
// Writes that belong to an intake run in the caller's transaction (a
// store.Tx from the runtime backend's Begin, so they commit with the lane
// messages); a method taking a nil tx runs its own. Reads run on the
// backend's read connections, outside any write transaction.
//
// Schema: the engine's tables have a migration line of their own
// (migrations/<backend>/engine/, recorded in ductus_ix_schema_migrations),
// applied by [Store.SchemaMigrate] when the engine opens its database and
// never by the runtime's Open, so a runtime-only user gets no ductus_ix_*
// table. Databases from before the split had those tables created by the
// runtime line's version 2; the engine line's first migration creates
// only what is missing, so it applies cleanly on them.
package ixstore

import (
	"context"

	"github.com/ductus/ductus/runtime/store"
)

// Backend is a runtime backend that also carries the engine's store: what
// the engine opens and runs on. Every adapter's *Backend implements it.
type Backend interface {
	store.Backend
	// EngineStore returns the engine's store over the same database and
	// connections as the runtime backend (its transactions are the
	// backend's Begin).
	EngineStore() Store
}

// Store is the engine's access to its tables; see the package
// documentation.
type Store interface {
	// SchemaMigrate applies the engine's migration line, each file once
	// (concurrent openers wait for each other). It is safe on a database
	// whose engine tables an older runtime line created.
	SchemaMigrate(ctx context.Context) error

	// MessageInsert writes interface messages and their deliveries in tx
	// (multi-row inserts, in batches).
	MessageInsert(ctx context.Context, tx store.Tx, p *MessageInsertParams) error
	// MessageByOrigin finds, in tx, the message an origin produced in an
	// interface (a routed hop or a schedule occurrence stored already).
	MessageByOrigin(ctx context.Context, tx store.Tx, p *MessageByOriginParams) (id string, found bool, err error)
	// MessageGetMany reads messages with their payloads; missing IDs are
	// skipped.
	MessageGetMany(ctx context.Context, p *MessageGetManyParams) ([]Message, error)
	// MessageList pages an interface's messages, newest first.
	MessageList(ctx context.Context, p *MessageListParams) ([]Message, error)
	// MessageACKs reads, in tx, the stored ACK of each message that has
	// one, by message ID.
	MessageACKs(ctx context.Context, tx store.Tx, p *MessageACKsParams) (map[string][]byte, error)

	// DeliveryList lists a message's deliveries, by destination.
	DeliveryList(ctx context.Context, p *DeliveryListParams) ([]Delivery, error)
	// DeliveryRelink points a delivery at a new lane message (a resend),
	// in tx, only if it still points at From; false when it does not (a
	// concurrent resend moved it, or there is no such delivery). A
	// dismissal belongs to a lane message, so the old one's stops applying.
	DeliveryRelink(ctx context.Context, tx store.Tx, p *DeliveryRelinkParams) (bool, error)
	// DeliveryDismiss records an operator's dismissal, in tx, only if the
	// delivery is still on LaneMessageID and not dismissed; false when not.
	DeliveryDismiss(ctx context.Context, tx store.Tx, p *DeliveryDismissParams) (bool, error)

	// DedupeClaim claims dedupe keys in tx, atomically with respect to
	// other transactions claiming the same keys: Keys maps each key to the
	// message that would be its first; a key claimed at or after Since
	// keeps its claim (an older one is taken over). It returns, for every
	// key, the message that holds it once tx commits. Keys are locked in
	// sorted order, so two batches never wait on each other in opposite
	// orders.
	DedupeClaim(ctx context.Context, tx store.Tx, p *DedupeClaimParams) (map[string]string, error)
	// DedupePrune deletes up to Limit of an interface's claims older than
	// Before, in its own transaction, and returns how many it deleted. A
	// claim that took an expired key over while the prune ran survives.
	DedupePrune(ctx context.Context, p *DedupePruneParams) (int64, error)

	// SourceStatePut writes (or, with a nil Value, deletes) a source's
	// state row, in tx or (nil tx) in a transaction of its own.
	SourceStatePut(ctx context.Context, tx store.Tx, p *SourceStatePutParams) error
	// SourceStateGet reads a source's state row.
	SourceStateGet(ctx context.Context, p *SourceStateGetParams) (value []byte, found bool, err error)

	// PauseInsert records a pause in a transaction of its own; false (and
	// nothing written) when the destination is paused already.
	PauseInsert(ctx context.Context, p *Pause) (bool, error)
	// PauseDelete removes a pause; false when there was none.
	PauseDelete(ctx context.Context, p *PauseDeleteParams) (bool, error)
	// PauseList lists every pause, by interface and destination.
	PauseList(ctx context.Context) ([]Pause, error)

	// TokenInsert stores a new API token (its hash, never the token), in
	// a transaction of its own. A duplicate ID or hash is an error.
	TokenInsert(ctx context.Context, p *TokenInsertParams) error
	// TokenByHash finds a token by the hash of its secret, revoked or not
	// (the caller decides), on the read connections.
	TokenByHash(ctx context.Context, p *TokenByHashParams) (Token, bool, error)
	// TokenList lists every token, revoked ones included, oldest first.
	TokenList(ctx context.Context) ([]Token, error)
	// TokenRevoke marks a valid token revoked; false when no valid token
	// has that ID.
	TokenRevoke(ctx context.Context, p *TokenRevokeParams) (bool, error)

	// UserInsert stores a new account in a transaction of its own; false
	// (and nothing written) when the name is taken.
	UserInsert(ctx context.Context, p *UserInsertParams) (bool, error)
	// UserGet reads an account by name, on the read connections.
	UserGet(ctx context.Context, p *UserGetParams) (User, bool, error)
	// UserList lists every account by name.
	UserList(ctx context.Context) ([]User, error)
	// UserUpdate changes an account's role, permissions and disabled
	// flag; disabling it ends its sessions in the same transaction.
	// False when there is no such account.
	UserUpdate(ctx context.Context, p *UserUpdateParams) (bool, error)
	// UserSetPassword sets an account's password (see the params); false
	// when there is no such account.
	UserSetPassword(ctx context.Context, p *UserSetPasswordParams) (bool, error)
	// UserLoginFailed counts a wrong password, atomically with other
	// sign-ins of the same name, and locks the account at the limit; it
	// returns whether this failure locked it. An unknown name is no error.
	UserLoginFailed(ctx context.Context, p *UserLoginFailedParams) (locked bool, err error)
	// UserLoginSucceeded clears an account's failed sign-ins.
	UserLoginSucceeded(ctx context.Context, p *UserLoginSucceededParams) error

	// SessionInsert stores a new browser session (its hash, never the
	// secret). A duplicate hash is an error.
	SessionInsert(ctx context.Context, p *SessionInsertParams) error
	// SessionByHash finds a session by the hash of its secret, on the
	// read connections; the caller checks its times.
	SessionByHash(ctx context.Context, p *SessionByHashParams) (Session, bool, error)
	// SessionTouch moves a session's LastSeen forward to At (never back).
	SessionTouch(ctx context.Context, p *SessionTouchParams) error
	// SessionDelete ends sessions (see the params) and returns how many.
	SessionDelete(ctx context.Context, p *SessionDeleteParams) (int64, error)
	// SessionPrune deletes expired and idle sessions and returns how many.
	SessionPrune(ctx context.Context, p *SessionPruneParams) (int64, error)

	// AuditInsert writes one audit row in tx, so it commits with the
	// change it describes, or (nil tx) in a transaction of its own.
	AuditInsert(ctx context.Context, tx store.Tx, p *AuditInsertParams) error
	// AuditList pages the audit log, newest first.
	AuditList(ctx context.Context, p *AuditListParams) ([]AuditEntry, error)
}
