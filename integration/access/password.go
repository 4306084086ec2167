package access

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/ductus/ductus/actor"
)

// Passwords are stored as argon2id hashes in the PHC string format
// ("$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>"), which carries its
// own parameters: a hash made with older parameters still verifies after
// they change.
//
// The parameters are OWASP's minimum for argon2id (19 MiB, 2 passes, one
// lane): about 30 ms of one core here. Hashing is bounded by a semaphore
// (hashers), so a burst of sign-ins queues rather than taking every core
// from the intake.

const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// Password length bounds, in characters. The lower one is NIST SP 800-63B's
// for a password a person chose; the upper one bounds the work a request
// can ask for.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

var b64 = base64.RawStdEncoding

// CheckPassword refuses a password too short, too long or equal to the
// account's name, saying which.
func CheckPassword(user, password string) error {
	n := utf8.RuneCountInString(password)
	switch {
	case !utf8.ValidString(password):
		return fmt.Errorf("%w: the password is not valid UTF-8", actor.ErrInvalidArguments)
	case n < MinPasswordLen:
		return fmt.Errorf("%w: a password needs at least %d characters (this one has %d)", actor.ErrInvalidArguments, MinPasswordLen, n)
	case n > MaxPasswordLen:
		return fmt.Errorf("%w: a password may have at most %d characters", actor.ErrInvalidArguments, MaxPasswordLen)
	case strings.EqualFold(password, user):
		return fmt.Errorf("%w: the password must not be the account's name", actor.ErrInvalidArguments)
	}
	return nil
}

// hashPassword returns password's PHC string with a fresh salt.
func (s *Store) hashPassword(ctx context.Context, password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (it panics first)
	if err := s.acquireHasher(ctx); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	s.releaseHasher()
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// errBadHash is a stored hash this code cannot read.
var errBadHash = errors.New("access: the stored password hash is not an argon2id PHC string")

// verifyPassword reports whether password matches the PHC string phc.
func (s *Store) verifyPassword(ctx context.Context, phc, password string) (bool, error) {
	var version int
	var mem uint32
	var iters uint32
	var threads uint8
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil || iters == 0 || threads == 0 {
		return false, errBadHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	if err := s.acquireHasher(ctx); err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	s.releaseHasher()
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// acquireHasher waits for a hashing slot, or for ctx.
func (s *Store) acquireHasher(ctx context.Context) error {
	select {
	case s.hashers <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("access: waiting to hash a password: %w", ctx.Err())
	}
}

func (s *Store) releaseHasher() { <-s.hashers }
