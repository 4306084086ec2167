package ixstoretest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/ixstore"
)

// tokenTests are the API token methods' cases.
var tokenTests = map[string]func(*testing.T, *suite){
	"InsertAndFindByHash": testTokenInsertAndFind,
	"UnknownHashNotFound": testTokenUnknownHash,
	"DuplicateRefused":    testTokenDuplicate,
	"ListOrder":           testTokenList,
	"RevokeOnce":          testTokenRevoke,
	"BadInputRefused":     testTokenBadInput,
}

// A token reads back by its hash as it was written, times to the
// microsecond; a service token's empty owner and a valid token's zero
// revocation time read back as they were (NULL in the table), and a token
// stored revoked (an import, say) reads back revoked.
func testTokenInsertAndFind(t *testing.T, s *suite) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	user := s.token("deploy", at)
	service := s.token("service", at.Add(time.Second))
	service.Owner, service.Perms = "", ""
	revoked := s.token("revoked", at.Add(2*time.Second))
	revoked.RevokedAt = at.Add(time.Hour + 999)
	for _, want := range []ixstore.Token{user, service, revoked} {
		s.insertToken(t, want)
		got, found := s.byHash(t, want.Hash)
		if !found {
			t.Fatalf("token %s not found by its hash", want.ID)
		}
		checkToken(t, got, want)
	}
}

// checkToken compares a token read back with the one written.
func checkToken(t *testing.T, got, want ixstore.Token) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Hash != want.Hash || got.Role != want.Role ||
		got.Perms != want.Perms || got.Owner != want.Owner || got.CreatedBy != want.CreatedBy {
		t.Errorf("token read back = %+v, want %+v", got, want)
	}
	if !sameTime(got.CreatedAt, want.CreatedAt) {
		t.Errorf("token %s: CreatedAt = %v, want %v", want.ID, got.CreatedAt, micro(want.CreatedAt))
	}
	if !sameTime(got.RevokedAt, want.RevokedAt) {
		t.Errorf("token %s: RevokedAt = %v, want %v", want.ID, got.RevokedAt, micro(want.RevokedAt))
	}
}

// A hash no token has is not found, and that is not an error.
func testTokenUnknownHash(t *testing.T, s *suite) {
	for _, hash := range []string{hashOf("nobody's " + s.run), "", "not a hash"} {
		if tok, found := s.byHash(t, hash); found {
			t.Errorf("TokenByHash(%q) found %+v", hash, tok)
		}
	}
}

// A second token with an ID or a hash already stored is refused, and the
// first stays as it was.
func testTokenDuplicate(t *testing.T, s *suite) {
	first := s.token("first", time.Now())
	s.insertToken(t, first)
	sameHash := s.token("same hash", time.Now())
	sameHash.Hash = first.Hash
	sameID := s.token("same ID", time.Now())
	sameID.ID = first.ID
	for _, tc := range []struct {
		name string
		tok  ixstore.Token
	}{{"the same hash", sameHash}, {"the same ID", sameID}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.ix.TokenInsert(s.ctx(t), &ixstore.TokenInsertParams{Token: tc.tok}); err == nil {
				t.Fatalf("a second token with %s was stored", tc.name)
			}
			got, found := s.byHash(t, first.Hash)
			if !found {
				t.Fatal("the first token is gone")
			}
			checkToken(t, got, first)
		})
	}
	if _, found := s.byHash(t, sameID.Hash); found {
		t.Error("the refused token with the same ID is findable by its own hash")
	}
}

// TokenList lists every token oldest first, by creation time whatever the
// order of the inserts, revoked ones included.
func testTokenList(t *testing.T, s *suite) {
	base := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	second, third, first := s.token("b", base.Add(time.Minute)), s.token("c", base.Add(2*time.Minute)), s.token("a", base)
	for _, tok := range []ixstore.Token{second, third, first} {
		s.insertToken(t, tok)
	}
	revokedAt := base.Add(time.Hour)
	if ok, err := s.ix.TokenRevoke(s.ctx(t), &ixstore.TokenRevokeParams{ID: second.ID, At: revokedAt}); err != nil || !ok {
		t.Fatalf("TokenRevoke = %v, %v", ok, err)
	}
	second.RevokedAt = revokedAt

	all, err := s.ix.TokenList(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ixstore.Token{first.ID: first, second.ID: second, third.ID: third}
	var mine []string
	for i, tok := range all {
		if i > 0 && tok.CreatedAt.Before(all[i-1].CreatedAt) {
			t.Errorf("the list is not oldest first: %s (%v) after %s (%v)", tok.ID, tok.CreatedAt, all[i-1].ID, all[i-1].CreatedAt)
		}
		if w, ok := want[tok.ID]; ok {
			checkToken(t, tok, w)
			mine = append(mine, tok.ID)
		}
	}
	if got, exp := strings.Join(mine, " "), strings.Join([]string{first.ID, second.ID, third.ID}, " "); got != exp {
		t.Errorf("the test's tokens list as %s, want %s", got, exp)
	}
}

// A token is revoked once: the first revocation changes it and keeps its
// time, a second reports no change, and an unknown ID changes nothing.
func testTokenRevoke(t *testing.T, s *suite) {
	tok := s.token("revoke me", time.Now())
	s.insertToken(t, tok)
	at := time.Date(2025, 6, 7, 8, 9, 10, 987654321, time.UTC)
	for _, tc := range []struct {
		name string
		id   string
		at   time.Time
		want bool
	}{
		{"first revocation", tok.ID, at, true},
		{"second revocation", tok.ID, at.Add(time.Hour), false},
		{"unknown ID", "tok_unknown_" + s.run, at, false},
	} {
		ok, err := s.ix.TokenRevoke(s.ctx(t), &ixstore.TokenRevokeParams{ID: tc.id, At: tc.at})
		if err != nil || ok != tc.want {
			t.Errorf("%s: TokenRevoke = %v, %v; want %v", tc.name, ok, err, tc.want)
		}
	}
	got, found := s.byHash(t, tok.Hash)
	if !found {
		t.Fatal("the revoked token is not found by its hash (a revoked token still reads back)")
	}
	tok.RevokedAt = at
	checkToken(t, got, tok)
}

// Input the tables cannot hold as given is refused with
// actor.ErrInvalidArguments before anything is written, the same on every
// backend.
func testTokenBadInput(t *testing.T, s *suite) {
	ok := func() ixstore.Token { return s.token("bad input", time.Now()) }
	cases := map[string]func(*ixstore.Token){
		"no ID":              func(tok *ixstore.Token) { tok.ID = "" },
		"an ID too long":     func(tok *ixstore.Token) { tok.ID = "tok_" + strings.Repeat("x", 40) },
		"an upper-case hash": func(tok *ixstore.Token) { tok.Hash = strings.ToUpper(tok.Hash) },
		"a short hash":       func(tok *ixstore.Token) { tok.Hash = tok.Hash[:63] },
		"a name too long":    func(tok *ixstore.Token) { tok.Name = strings.Repeat("é", 65) },
		"a name not UTF-8":   func(tok *ixstore.Token) { tok.Name = "bad\xff" },
		"a role too long":    func(tok *ixstore.Token) { tok.Role = strings.Repeat("r", 17) },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			tok := ok()
			spoil(&tok)
			err := s.ix.TokenInsert(s.ctx(t), &ixstore.TokenInsertParams{Token: tok})
			if !errors.Is(err, actor.ErrInvalidArguments) {
				t.Fatalf("TokenInsert = %v, want actor.ErrInvalidArguments", err)
			}
			if _, found := s.byHash(t, tok.Hash); found {
				t.Fatal("the refused token was stored")
			}
		})
	}
	t.Run("a name of 64 characters fits", func(t *testing.T) {
		tok := ok()
		tok.Name = strings.Repeat("é", 64)
		s.insertToken(t, tok)
		got, _ := s.byHash(t, tok.Hash)
		checkToken(t, got, tok)
	})
	t.Run("revoke at the zero time", func(t *testing.T) {
		tok := ok()
		s.insertToken(t, tok)
		if _, err := s.ix.TokenRevoke(s.ctx(t), &ixstore.TokenRevokeParams{ID: tok.ID}); !errors.Is(err, actor.ErrInvalidArguments) {
			t.Fatalf("TokenRevoke = %v, want actor.ErrInvalidArguments", err)
		}
		if got, _ := s.byHash(t, tok.Hash); !got.RevokedAt.IsZero() {
			t.Fatalf("the token was revoked at %v", got.RevokedAt)
		}
	})
}
