package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix starts every API token, so a leaked one is easy to find in
// logs and repositories by secret scanners.
const TokenPrefix = "dux_"

// tokenBytes is the secret's entropy: 256 bits.
const tokenBytes = 32

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// newSecret makes a new bearer token.
func newSecret() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics first)
	return TokenPrefix + strings.ToLower(b32.EncodeToString(b))
}

// newTokenID makes a token's public ID (what lists and revocations name;
// it proves nothing).
func newTokenID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "tok_" + hex.EncodeToString(b)
}

// HashToken is what is stored of a token: the hex SHA-256 of all of it.
// A fast hash is right here (unlike passwords): the secret has 256 bits of
// entropy, so nothing can be guessed from its hash.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// checkTokenSyntax refuses what cannot be a token before any lookup, so
// junk never reaches the database (and a JWT pasted by mistake gets a
// clear answer).
func checkTokenSyntax(token string) error {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return fmt.Errorf("%w: the bearer token does not start with %s", ErrUnauthenticated, TokenPrefix)
	}
	if len(rest) != b32.EncodedLen(tokenBytes) {
		return fmt.Errorf("%w: the bearer token has the wrong length", ErrUnauthenticated)
	}
	if _, err := b32.DecodeString(strings.ToUpper(rest)); err != nil {
		return fmt.Errorf("%w: the bearer token is not base32", ErrUnauthenticated)
	}
	return nil
}
