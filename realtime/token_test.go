package realtime

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/actor"
)

func TestTokenRotation(t *testing.T) {
	ref := actor.Ref{Type: tallyType, ID: "t"}
	claims := Claims{Ref: ref, Observables: []string{"n"}, Expires: time.Now().Add(time.Minute), Subject: "user-1"}
	old := Keyring{Current: "k1", Keys: testKeys.Keys}
	tokOld, err := old.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	tokNew, err := testKeys.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tokOld, "k1.") || !strings.HasPrefix(tokNew, "k2.") {
		t.Fatalf("tokens %q %q do not carry their key IDs", tokOld, tokNew)
	}
	retired := Keyring{Current: "k2", Keys: map[string][]byte{"k2": testKeys.Keys["k2"]}}
	cases := []struct {
		name string
		ring Keyring
		tok  string
		want error
	}{
		{"old key still known", testKeys, tokOld, nil},
		{"current key", testKeys, tokNew, nil},
		{"old key retired", retired, tokOld, ErrTokenUnknownKey},
		{"new token after retiring", retired, tokNew, nil},
		{"signed with another key under the same ID", Keyring{Current: "k2", Keys: map[string][]byte{"k2": []byte(strings.Repeat("z", 32))}}, tokNew, ErrTokenSignature},
		{"two dots missing", testKeys, "k2.abc", ErrTokenMalformed},
		{"extra part", testKeys, tokNew + ".x", ErrTokenMalformed},
		{"last character's unused bits changed", testKeys, flipLowBit(tokNew), ErrTokenMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ring.Verify(tc.tok, time.Now())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil && (got.Ref != ref || got.Subject != "user-1" || len(got.Observables) != 1) {
				t.Fatalf("claims %+v", got)
			}
		})
	}
	if _, err := testKeys.Verify(tokNew, claims.Expires.Add(time.Second)); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("after expiry: %v, want ErrTokenExpired", err)
	}
}

func TestKeyringValidate(t *testing.T) {
	long := []byte(strings.Repeat("k", MinKeyBytes))
	cases := []struct {
		name string
		ring Keyring
		want string
	}{
		{"no keys", Keyring{}, "no keys"},
		{"short key", Keyring{Current: "a", Keys: map[string][]byte{"a": []byte("short")}}, "at least 32"},
		{"bad ID", Keyring{Current: "a.b", Keys: map[string][]byte{"a.b": long}}, "key ID"},
		{"current missing", Keyring{Current: "b", Keys: map[string][]byte{"a": long}}, "not in the keyring"},
		{"fine", Keyring{Current: "a", Keys: map[string][]byte{"a": long}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ring.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := testKeys.Sign(Claims{Ref: actor.Ref{Type: tallyType, ID: "x"}, Expires: time.Now()}); err == nil {
		t.Fatal("Sign accepted claims without observables")
	}
}

// flipLowBit changes the last character of tok to the one whose 6 bits
// differ only in the lowest (unused by a 32-byte signature's encoding).
func flipLowBit(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[i^1])
}
