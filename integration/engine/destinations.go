package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/runtime/host"
)

// sender delivers one output to a destination. It returns nil when the
// destination confirmed, a plain error for a transient failure (retried with
// the destination's back-off, holding its lane), or an actor.Permanent error
// for a refusal (the delivery is quarantined).
type sender interface {
	send(ctx context.Context, ec host.EffectContext, a sendArgs) error
	close() error
}

// effects builds one ordered effect per destination: its sender (or the
// route's hop), its rate limit and its retry policy.
func (e *Engine) effects() (map[string]host.Effect, error) {
	out := map[string]host.Effect{
		"ductus.schedule.run": {Handler: e.scheduleRun, Ordered: true, Timeout: 10 * time.Second, Retry: host.RetryPolicy{Base: time.Second, Max: time.Minute}},
	}
	for _, ir := range e.ifaces {
		for _, d := range ir.cfg.Destinations {
			var s sender
			var err error
			switch d.Type {
			case config.DestHTTP:
				s = newHTTPSender(d)
			case config.DestMLLP:
				s, err = e.newMLLPSender(d)
			case config.DestFile:
				s = newFileSender(d)
			case config.DestInterface:
				s = &routeSender{e: e, dest: d}
			default:
				err = fmt.Errorf("destination type %q", d.Type)
			}
			if err != nil {
				return nil, fmt.Errorf("interface %s destination %s: %w", d.Interface, d.Name, err)
			}
			e.senders = append(e.senders, s)
			var limiter *rate.Limiter
			if rl := d.RateLimit; rl != nil {
				limiter = rate.NewLimiter(rate.Limit(rl.PerSecond), max(rl.Burst, 1))
			}
			dest := d
			out[effectName(d)] = host.Effect{
				Ordered: true,
				Retry:   host.RetryPolicy{MaxAttempts: d.Retry.MaxAttempts, Base: d.Retry.Initial, Max: d.Retry.Max},
				Timeout: sendTimeout(d),
				Handler: func(ctx context.Context, ec host.EffectContext, raw json.RawMessage) (any, error) {
					var a sendArgs
					if err := json.Unmarshal(raw, &a); err != nil {
						return nil, actor.Permanent(fmt.Errorf("send arguments: %w", err))
					}
					if _, paused := e.paused.get(destKey(dest.Interface, dest.Name)); paused {
						// Held, not attempted: it keeps its place and
						// its attempts until the destination resumes.
						return nil, &host.NotAttemptedError{RetryAfter: pauseRefresh, Err: errPaused}
					}
					err := waitForToken(ctx, limiter, dest)
					if err == nil {
						err = s.send(ctx, ec, a)
					}
					if err != nil {
						switch {
						case errors.Is(err, errWaiting):
							// Nothing was sent: give the delivery back
							// without using up an attempt (max_attempts
							// counts failed sends, not time in a queue).
							e.met.sendWaits.WithLabelValues(dest.Interface, dest.Name).Inc()
							var we *waitError
							after := 50 * time.Millisecond
							if errors.As(err, &we) {
								after = we.after
							}
							return nil, &host.NotAttemptedError{RetryAfter: after, Err: err}
						case ctx.Err() == nil && (actor.IsPermanent(err) || (dest.Retry.MaxAttempts > 0 && ec.Attempt >= dest.Retry.MaxAttempts)):
							// Refused for good, or the last attempt
							// max_attempts allows: the runtime
							// dead-letters the send.
							e.quarantined(dest.Interface, dest.Name, a.M, err.Error())
						default:
							e.met.sendRetries.WithLabelValues(dest.Interface, dest.Name).Inc()
						}
						return nil, err
					}
					e.met.sent.WithLabelValues(dest.Interface, dest.Name).Inc()
					if st := e.statsOf(dest.Interface, dest.Name); st != nil {
						st.observeSent(time.Since(a.ReceivedAt))
					}
					if ir := e.ifaces[dest.Interface]; ir != nil {
						ir.tp.add(time.Now(), 0, 1)
					}
					return nil, nil
				},
			}
		}
	}
	return out, nil
}

// errWaiting marks an attempt that sent nothing because the destination
// was not free within the attempt (its rate limit, every MLLP connection
// busy, or an MLLP connection waiting out its reconnect back-off): it is
// counted as waiting, not as a failed send, and given back to be tried
// again without using up an attempt.
var errWaiting = errors.New("waiting for the destination")

// waitError is an errWaiting that knows when the destination is free again.
type waitError struct {
	after time.Duration
	why   string
}

func (w *waitError) Error() string        { return errWaiting.Error() + ": " + w.why }
func (w *waitError) Is(target error) bool { return target == errWaiting }

// exchangeBudget is what one send needs of an attempt once it may start:
// connecting and the destination's own timeout.
func exchangeBudget(d *config.Destination) time.Duration {
	switch {
	case d.MLLP != nil:
		return mllpDialTimeout + d.MLLP.AckTimeout
	case d.HTTP != nil:
		return d.HTTP.Timeout + time.Second // the client's timeout covers connecting
	}
	return 5 * time.Second // a file write or a route's intake
}

// waitContext bounds waiting before a send so that a whole exchange still
// fits in the attempt afterwards.
func waitContext(ctx context.Context, d *config.Destination) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-exchangeBudget(d)))
}

// waitForToken takes a token of the destination's rate limit, waiting for
// it only while a whole exchange still fits in the attempt afterwards;
// beyond that it gives the token back and reports errWaiting (a rate limit
// is a queue, not a failure of the destination).
func waitForToken(ctx context.Context, l *rate.Limiter, d *config.Destination) error {
	if l == nil {
		return nil
	}
	r := l.Reserve()
	delay := r.Delay()
	if delay == 0 {
		return nil
	}
	wctx, cancel := waitContext(ctx, d)
	defer cancel()
	if dl, ok := wctx.Deadline(); ok && time.Now().Add(delay).After(dl) {
		r.Cancel()
		return &waitError{after: delay, why: fmt.Sprintf("the rate limit's next token is %v away", delay.Round(time.Millisecond))}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// sendTimeout bounds one delivery attempt: the exchange's budget (the
// destination's own timeout, connecting and a margin) plus room to wait
// for the rate limit or a free connection. It stays well under the
// runtime's claim TTL (derived from the longest effect timeout).
func sendTimeout(d *config.Destination) time.Duration {
	return exchangeBudget(d) + 10*time.Second
}
