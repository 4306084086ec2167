// Package ixstoretest is the conformance suite of the engine store's
// operator API methods (ixstore.Store's tokens, audit log, delivery
// relinks and dismissals, pauses, and local accounts with their browser
// sessions): the same assertions on every backend. An adapter's test
// opens a fresh database, migrates the engine's line
// (EngineStore().SchemaMigrate) and calls Run.
//
// The subtests share that one database, so each writes rows of its own
// (IDs, hashes, actors and actions made unique per run) and reads back only
// what it wrote, or checks an order that other rows cannot break.
package ixstoretest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
	"github.com/ductus/ductus/runtime/store"
)

// Run runs the whole suite on be, opened and migrated by the caller.
func Run(t *testing.T, be ixstore.Backend) {
	s := &suite{be: be, ix: be.EngineStore(), run: randHex(4)}
	tests := map[string]func(*testing.T, *suite){}
	for name, fn := range tokenTests {
		tests["Token/"+name] = fn
	}
	for name, fn := range auditTests {
		tests["Audit/"+name] = fn
	}
	for name, fn := range deliveryTests {
		tests["Delivery/"+name] = fn
	}
	for name, fn := range pauseTests {
		tests["Pause/"+name] = fn
	}
	for name, fn := range userTests {
		tests["User/"+name] = fn
	}
	for name, fn := range sessionTests {
		tests["Session/"+name] = fn
	}
	for name, fn := range searchTests {
		tests["Search/"+name] = fn
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { tests[name](t, s) })
	}
}

// suite is what every test gets: the backend, its engine store, and a
// tag unique to this run that makes the test's names its own.
type suite struct {
	be  ixstore.Backend
	ix  ixstore.Store
	run string
}

// ctx is a context for t's calls.
func (s *suite) ctx(t *testing.T) context.Context { return testutil.Context(t) }

// name returns a name (actor, action) no other test or run uses.
func (s *suite) name(what string) string {
	return "ixstoretest." + s.run + "." + what + "." + randHex(3)
}

// token returns a valid new token with a fresh ID and hash, created at
// at (with nanoseconds, so a round trip must truncate to microseconds).
func (s *suite) token(name string, at time.Time) ixstore.Token {
	return ixstore.Token{
		ID: "tok_" + randHex(8), Name: name, Hash: hashOf(randHex(32)), Role: "operator", Perms: "payloads,audit",
		Owner: "owner-" + s.run, CreatedAt: at, CreatedBy: "ixstoretest",
	}
}

// insertToken stores tok, failing the test on an error.
func (s *suite) insertToken(t *testing.T, tok ixstore.Token) {
	t.Helper()
	if err := s.ix.TokenInsert(s.ctx(t), &ixstore.TokenInsertParams{Token: tok}); err != nil {
		t.Fatalf("TokenInsert(%s): %v", tok.ID, err)
	}
}

// byHash finds a token by hash, failing the test on an error.
func (s *suite) byHash(t *testing.T, hash string) (ixstore.Token, bool) {
	t.Helper()
	tok, found, err := s.ix.TokenByHash(s.ctx(t), &ixstore.TokenByHashParams{Hash: hash})
	if err != nil {
		t.Fatalf("TokenByHash: %v", err)
	}
	return tok, found
}

// entry returns an audit row with a fresh UUIDv7 (so entries made later
// sort after it) for actor and action, with a detail document.
func (s *suite) entry(t *testing.T, actor, action string) ixstore.AuditEntry {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return ixstore.AuditEntry{
		ID: id.String(), At: time.Now(), Actor: actor, Via: "token", Address: "127.0.0.1:5000",
		Action: action, Target: "msg-" + randHex(4), Outcome: "ok", Detail: []byte(`{"n":1}`),
	}
}

// insertEntry writes e in tx (nil: its own transaction), failing the test
// on an error.
func (s *suite) insertEntry(t *testing.T, tx store.Tx, e ixstore.AuditEntry) {
	t.Helper()
	if err := s.ix.AuditInsert(s.ctx(t), tx, &ixstore.AuditInsertParams{Entry: e}); err != nil {
		t.Fatalf("AuditInsert(%s): %v", e.ID, err)
	}
}

// list pages the audit log, failing the test on an error.
func (s *suite) list(t *testing.T, p ixstore.AuditListParams) []ixstore.AuditEntry {
	t.Helper()
	out, err := s.ix.AuditList(s.ctx(t), &p)
	if err != nil {
		t.Fatalf("AuditList(%+v): %v", p, err)
	}
	return out
}

// ids returns the IDs of entries, in their order.
func ids(entries []ixstore.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

// micro is what a stored time reads back as: microseconds since the epoch.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// sameTime reports whether got is want as stored (to the microsecond); a
// zero want needs a zero got.
func sameTime(got, want time.Time) bool {
	if want.IsZero() {
		return got.IsZero()
	}
	return got.Equal(micro(want))
}

// hashOf is a token's stored hash: the lower-case hex SHA-256 of secret.
func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics first)
	return hex.EncodeToString(b)
}

// Migrate applies the engine's migration line to be, failing the test on
// an error, and returns be: what an adapter's test does before Run.
func Migrate(t *testing.T, be ixstore.Backend) ixstore.Backend {
	t.Helper()
	if err := be.EngineStore().SchemaMigrate(testutil.Context(t)); err != nil {
		t.Fatalf("the engine's migrations: %v", err)
	}
	return be
}
