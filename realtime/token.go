package realtime

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
)

// Token errors, each answered to the client with its own code.
var (
	ErrTokenMalformed  = errors.New("realtime: token is malformed")
	ErrTokenUnknownKey = errors.New("realtime: token is signed with an unknown key")
	ErrTokenSignature  = errors.New("realtime: token signature does not match")
	ErrTokenExpired    = errors.New("realtime: token has expired")
	ErrTokenScope      = errors.New("realtime: token does not cover this subscription")
)

var b64 = base64.RawURLEncoding.Strict()

// MinKeyBytes is the shortest signing key a Keyring accepts.
const MinKeyBytes = 32

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Keyring holds the HMAC-SHA256 keys subscription tokens are signed with,
// by key ID. Tokens are signed with Current and verified with whichever key
// their ID names, so keys rotate without cutting anyone off: add the new key,
// make it Current, and drop the old one once its tokens have expired.
type Keyring struct {
	Current string
	Keys    map[string][]byte
}

// Validate reports a keyring that cannot sign or verify.
func (k Keyring) Validate() error {
	if len(k.Keys) == 0 {
		return errors.New("realtime: keyring has no keys")
	}
	for id, key := range k.Keys {
		if !keyIDPattern.MatchString(id) {
			return fmt.Errorf("realtime: key ID %q must be 1-32 letters, digits, _ or -", id)
		}
		if len(key) < MinKeyBytes {
			return fmt.Errorf("realtime: key %q is %d bytes; at least %d are required", id, len(key), MinKeyBytes)
		}
	}
	if _, ok := k.Keys[k.Current]; !ok {
		return fmt.Errorf("realtime: current key %q is not in the keyring", k.Current)
	}
	return nil
}

// Claims is what a subscription token grants: one actor's named
// observables until Expires. Subject is the application's own label (a user
// or session ID) handed to the subscription policy through TokenFrom; the
// token proves the claims were issued by the application, not that the
// caller may still have them: the policy decides that.
type Claims struct {
	Ref         actor.Ref
	Observables []string
	Expires     time.Time
	Subject     string
}

// wireClaims is the token's payload (short keys: it travels in every
// subscribe frame).
type wireClaims struct {
	Type        string   `json:"t"`
	ID          string   `json:"i"`
	Observables []string `json:"o"`
	Expires     int64    `json:"e"`
	Subject     string   `json:"s,omitempty"`
}

// Sign returns a token for c signed with the keyring's current key:
// "<key id>.<payload>.<signature>", both base64url without padding.
func (k Keyring) Sign(c Claims) (string, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	if c.Ref.Type == "" || c.Ref.ID == "" {
		return "", errors.New("realtime: token claims need a ref with a type and an ID")
	}
	if len(c.Observables) == 0 {
		return "", errors.New("realtime: token claims name no observables")
	}
	if c.Expires.IsZero() {
		return "", errors.New("realtime: token claims need an expiry")
	}
	obs := slices.Clone(c.Observables)
	slices.Sort(obs)
	payload, err := json.Marshal(wireClaims{Type: c.Ref.Type, ID: c.Ref.ID, Observables: slices.Compact(obs), Expires: c.Expires.Unix(), Subject: c.Subject})
	if err != nil {
		return "", err
	}
	signed := k.Current + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac(k.Keys[k.Current], signed)), nil
}

// Verify checks a token's key, signature and expiry (against now) and
// returns its claims.
func (k Keyring) Verify(token string, now time.Time) (Claims, error) {
	kid, rest, ok := strings.Cut(token, ".")
	payload64, sig64, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(sig64, ".") {
		return Claims{}, fmt.Errorf("%w: want <key id>.<payload>.<signature>", ErrTokenMalformed)
	}
	key, known := k.Keys[kid]
	if !known {
		return Claims{}, fmt.Errorf("%w: %q", ErrTokenUnknownKey, truncate(kid, 40))
	}
	// Strict: a last character differing only in its unused bits would
	// otherwise decode to the same signature, so a changed token passed.
	sig, err := b64.DecodeString(sig64)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: signature is not base64url", ErrTokenMalformed)
	}
	if !hmac.Equal(sig, mac(key, kid+"."+payload64)) {
		return Claims{}, ErrTokenSignature
	}
	raw, err := b64.DecodeString(payload64)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload is not base64url", ErrTokenMalformed)
	}
	var w wireClaims
	if err := json.Unmarshal(raw, &w); err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrTokenMalformed, err)
	}
	c := Claims{Ref: actor.Ref{Type: w.Type, ID: w.ID}, Observables: w.Observables, Expires: time.Unix(w.Expires, 0), Subject: w.Subject}
	if !now.Before(c.Expires) {
		return Claims{}, fmt.Errorf("%w (at %s)", ErrTokenExpired, c.Expires.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// covers checks that the claims grant ref and every observable asked for.
func (c Claims) covers(ref actor.Ref, observables []string) error {
	if c.Ref != ref {
		return fmt.Errorf("%w: it is for %s", ErrTokenScope, c.Ref)
	}
	for _, o := range observables {
		if !slices.Contains(c.Observables, o) {
			return fmt.Errorf("%w: observable %q is not in it", ErrTokenScope, o)
		}
	}
	return nil
}

func mac(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
