package api

import (
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in attempts are limited per caller address, beside the lockout
// per account (access.Policy): the lockout stops guessing one account's
// password, this stops one address from trying many accounts (or from
// keeping an account locked). signInBurst attempts at once, then one
// every signInEvery.
const (
	signInBurst = 20
	signInEvery = 3 * time.Second
	// signInForget drops an address's limiter once unused this long (it
	// would be full again by then anyway), so the map stays small.
	signInForget = 10 * time.Minute
)

// signInLimiter holds a token bucket per caller address.
type signInLimiter struct {
	mu      sync.Mutex
	by      map[string]*addrLimit
	lastGC  time.Time
	burst   int
	every   time.Duration
	maxKeep int // addresses kept before idle ones are dropped
}

type addrLimit struct {
	lim  *rate.Limiter
	seen time.Time
}

func newSignInLimiter() *signInLimiter {
	return &signInLimiter{by: map[string]*addrLimit{}, burst: signInBurst, every: signInEvery, maxKeep: 10_000}
}

// allow takes a token for the address addr ("host:port" or "host"); when
// there is none it says how long until there is.
func (l *signInLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.by) >= l.maxKeep && now.Sub(l.lastGC) > time.Second {
		for h, a := range l.by {
			if now.Sub(a.seen) > signInForget {
				delete(l.by, h)
			}
		}
		l.lastGC = now
	}
	a := l.by[host]
	if a == nil {
		a = &addrLimit{lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
		l.by[host] = a
	}
	a.seen = now
	r := a.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// tooMany is a refusal for too many attempts (429, Retry-After).
type tooMany struct{ retry time.Duration }

func (t *tooMany) Error() string {
	return fmt.Sprintf("too many sign-in attempts from this address; try again in %s", t.retry.Round(time.Second))
}
