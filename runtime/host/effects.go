package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// EffectHandler carries out one effect, outside any transaction. It may
// run more than once for the same effect (a worker can die after the
// external call but before recording it): use EffectContext.ID as the
// idempotency key downstream. Return actor.Permanent(err) to dead-letter
// the effect at once.
type EffectHandler func(ctx context.Context, ec EffectContext, args json.RawMessage) (any, error)

// Effect registers a handler and how its effects are run. Every process
// that runs the actor types emitting an effect must register it, with the
// same Ordered: Context.Emit refuses an effect name this process has no
// handler for (actor.ErrInvalidArguments), and whether an emitted effect is
// ordered is decided here, by its name, when it is staged.
type Effect struct {
	Handler EffectHandler
	// Ordered effects of one actor run strictly in staging order, one at a
	// time, across processes and crashes: a failing one blocks the later
	// ones until it succeeds or is dead-lettered. Unordered effects run
	// concurrently.
	Ordered bool
	// Retry is the back-off between attempts (defaults: Base 1s doubling
	// to Max 60s, Jitter 0.2) and Retry.MaxAttempts dead-letters the effect
	// after that many failed attempts. Unlike Config.Retry's, its zero
	// MaxAttempts means retry until it succeeds or an operator intervenes:
	// an effect usually fails because a downstream system is down, which is
	// worth waiting out.
	Retry RetryPolicy
	// Timeout bounds one attempt (default 30s).
	Timeout time.Duration
}

func (e Effect) maxAttempts() int { return max(e.Retry.MaxAttempts, 0) }

func (e Effect) backoff() RetryPolicy {
	b := e.Retry
	if b.Base <= 0 {
		b.Base = time.Second
	}
	if b.Max <= 0 {
		b.Max = time.Minute
	}
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	return b
}

func (e Effect) timeout() time.Duration {
	if e.Timeout <= 0 {
		return 30 * time.Second
	}
	return e.Timeout
}

// EffectFunc adapts a typed handler.
func EffectFunc[A, R any](fn func(ctx context.Context, ec EffectContext, args A) (R, error)) EffectHandler {
	return func(ctx context.Context, ec EffectContext, raw json.RawMessage) (any, error) {
		a, err := actor.Decode[A]("effect arguments", raw)
		if err != nil {
			return nil, actor.Permanent(err)
		}
		return fn(ctx, ec, a)
	}
}

// EffectContext describes the effect a handler runs.
type EffectContext struct {
	// ID is the effect's stable ID: the same on every attempt, the
	// idempotency key for downstream systems.
	ID        string
	Name      string
	Ref       actor.Ref
	MessageID actor.MessageID // the message whose turn staged it
	// Generation is the lease generation that staged the effect: a
	// fencing token a downstream system can compare with the highest it
	// has seen for Ref to refuse a stale sender.
	Generation int64
	// ActorGeneration is the actor's generation when this attempt was
	// claimed.
	ActorGeneration int64
	Attempt         int
	Ordered         bool
}

// Stale reports whether the actor has been activated again since the
// effect was staged (its generation moved on): a newer activation may have
// staged newer effects, so a downstream system that orders by generation
// can refuse this one.
func (e EffectContext) Stale() bool { return e.ActorGeneration > e.Generation }

// effectOutcomeMessage is what on-success / on-failure messages carry.
type effectOutcomeMessage struct {
	EffectID string          `json:"effect_id"`
	Effect   string          `json:"effect"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
}

const (
	effectClaimLimit = 64
	effectOrderedRun = 16
	effectFlushCount = 50
	effectFlushEvery = 20 * time.Millisecond
	// effectClaimMargin is kept between an attempt's timeout and its
	// claim's expiry, for recording the outcome (capped at half the room
	// the configuration leaves, see claimLeft).
	effectClaimMargin = 5 * time.Second
)

// effectLoop claims due effects and runs them: unordered ones each on its
// own goroutine, an actor's ordered run on one goroutine in order. Outcomes
// are recorded by a flusher in batches.
func (h *Host) effectLoop(ctx context.Context) {
	if len(h.cfg.Effects) == 0 {
		return
	}
	names := make([]string, 0, len(h.cfg.Effects))
	for n := range h.cfg.Effects {
		names = append(names, n)
	}
	// The flusher outlives the loop: effects still running at shutdown
	// give their claims back (Release outcomes), and those must be
	// recorded, or the claims would hold their lanes until they expire.
	fl := newFlusher(h)
	flCtx, stopFlusher := context.WithCancel(context.WithoutCancel(ctx))
	flushed := make(chan struct{})
	go func() { fl.run(flCtx); close(flushed) }()
	var running sync.WaitGroup
	defer func() {
		running.Wait()
		stopFlusher()
		<-flushed
	}()
	sem := make(chan struct{}, effectClaimLimit*2)
	poll := time.NewTicker(h.cfg.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.fxWake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			limit := cap(sem) - len(sem)
			if limit <= 0 {
				break
			}
			// The claim expires ClaimTTL after the database took it, which
			// is after this moment: measuring from here errs on the safe side.
			deadline := time.Now().Add(h.cfg.ClaimTTL)
			fx, err := h.be.EffectClaim(ctx, &store.EffectClaimParams{Owner: h.id, TTL: h.cfg.ClaimTTL, Limit: min(limit, effectClaimLimit), Names: names, OrderedRun: effectOrderedRun})
			if err != nil {
				if ctx.Err() == nil {
					h.met.storeErrors.WithLabelValues("effect_claim").Inc()
					h.log.Warn("claiming effects failed", "err", err)
					sleep(ctx, 200*time.Millisecond)
				}
				break
			}
			for _, run := range groupRuns(fx) {
				sem <- struct{}{}
				running.Add(1)
				go func() {
					defer func() { <-sem; running.Done() }()
					h.runEffects(ctx, run, fl, deadline)
				}()
			}
			if len(fx) < min(limit, effectClaimLimit) {
				break
			}
		}
	}
}

// groupRuns splits a claim into units of work: each unordered effect
// alone, each actor's ordered effects together in order.
func groupRuns(fx []store.Effect) [][]store.Effect {
	var out [][]store.Effect
	ordered := map[int64]int{}
	for _, e := range fx {
		if !e.Ordered {
			out = append(out, []store.Effect{e})
			continue
		}
		i, ok := ordered[e.ActorPK]
		if !ok {
			i = len(out)
			ordered[e.ActorPK] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// runEffects runs a unit in order, stopping at the first failure (the rest
// of an ordered run is released untouched). No attempt starts unless it can
// finish, and its outcome be recorded, before the claim (which nothing
// renews) could expire: an expired claim lets another process take the
// effects over, and it would run them while this one still does, or send an
// effect again after this one sent the next.
func (h *Host) runEffects(ctx context.Context, run []store.Effect, fl *flusher, deadline time.Time) {
	for i, e := range run {
		if !h.claimLeft(e, deadline) {
			if i == 0 {
				h.log.Debug("an effect claim came back too close to its expiry; giving it back", "effect", e.Name, "id", e.UUID)
			}
			for _, rest := range run[i:] {
				fl.add(store.EffectOutcome{ID: rest.ID, Attempt: rest.Attempt, Release: true})
			}
			fl.flushNow()
			return
		}
		o := h.attemptEffect(ctx, e)
		if o.Outcome != nil {
			fl.mu.Lock()
			fl.actors[e.ID] = e.ActorPK
			fl.mu.Unlock()
		}
		if !o.Success && !o.Dead && e.Ordered {
			fl.add(o)
			for _, rest := range run[i+1:] {
				fl.add(store.EffectOutcome{ID: rest.ID, Attempt: rest.Attempt, Release: true})
			}
			fl.flushNow()
			return
		}
		fl.add(o)
	}
}

// claimLeft reports whether a claim expiring at deadline outlasts a whole
// attempt of e plus a margin for recording its outcome.
func (h *Host) claimLeft(e store.Effect, deadline time.Time) bool {
	timeout := h.cfg.Effects[e.Name].timeout()
	margin := min(effectClaimMargin, (h.cfg.ClaimTTL-timeout)/2)
	return time.Until(deadline) >= timeout+margin
}

// NotAttemptedError is what an effect handler returns when it did nothing
// because it could not start (its destination was not free: a rate limit's
// next token, every connection of a pool busy). The effect is given back
// without counting an attempt, so waiting never uses up MaxAttempts nor
// dead-letters it, and it is due again after RetryAfter; an ordered effect
// keeps blocking the later ones meanwhile.
type NotAttemptedError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *NotAttemptedError) Error() string { return "not attempted: " + e.Err.Error() }

// Unwrap returns the reason.
func (e *NotAttemptedError) Unwrap() error { return e.Err }

func (h *Host) attemptEffect(ctx context.Context, e store.Effect) store.EffectOutcome {
	spec, ok := h.cfg.Effects[e.Name]
	if !ok { // not claimable without a handler; keep the outcome sane anyway
		return store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Release: true}
	}
	ec := EffectContext{ID: e.UUID, Name: e.Name, Ref: e.Ref, MessageID: actor.MessageID(e.MessageID), Generation: e.Generation,
		ActorGeneration: e.ActorGeneration, Attempt: e.Attempt, Ordered: e.Ordered}
	cctx, cancel := context.WithTimeout(ctx, spec.timeout())
	var out any
	err := h.callHook(func() error {
		var err error
		out, err = spec.Handler(cctx, ec, e.Args)
		return err
	})
	cancel()
	var result []byte
	if err == nil {
		result, err = actor.Encode("effect result", out, h.cfg.Limits.EffectBytes, h.cfg.Limits.Depth)
	}
	if err == nil {
		h.met.effects.WithLabelValues(e.Name, "ok").Inc()
		o := store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Success: true, Result: result}
		if e.OnSuccess != "" {
			o.Outcome = h.outcomeMessage(e, e.OnSuccess, effectOutcomeMessage{EffectID: e.UUID, Effect: e.Name, Result: result})
		}
		return o
	}
	if ctx.Err() != nil {
		// Shutting down: give the claim back rather than count an attempt
		// the handler may not have finished.
		return store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Release: true}
	}
	var na *NotAttemptedError
	if errors.As(err, &na) {
		h.met.effects.WithLabelValues(e.Name, "not_attempted").Inc()
		h.log.Debug("effect not attempted; due again later", "effect", e.Name, "id", e.UUID, "actor", e.Ref.String(), "retry_in", na.RetryAfter, "err", err)
		return store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Release: true, RetryAfter: max(na.RetryAfter, 0)}
	}
	msg := h.errorText(err)
	dead := actor.IsPermanent(err) || (spec.maxAttempts() > 0 && e.Attempt >= spec.maxAttempts())
	o := store.EffectOutcome{ID: e.ID, Attempt: e.Attempt, Error: msg, Dead: dead}
	if dead {
		h.met.effects.WithLabelValues(e.Name, "dead").Inc()
		h.log.Warn("effect dead-lettered", "effect", e.Name, "id", e.UUID, "actor", e.Ref.String(), "attempt", e.Attempt, "err", err)
		if e.OnFailure != "" {
			o.Outcome = h.outcomeMessage(e, e.OnFailure, effectOutcomeMessage{EffectID: e.UUID, Effect: e.Name, Error: msg})
		}
	} else {
		h.met.effects.WithLabelValues(e.Name, "retry").Inc()
		o.RetryAfter = spec.backoff().Delay(e.Attempt)
		h.log.Info("effect failed; retrying", "effect", e.Name, "id", e.UUID, "actor", e.Ref.String(), "attempt", e.Attempt, "retry_in", o.RetryAfter, "err", err)
	}
	return o
}

func (h *Host) outcomeMessage(e store.Effect, name string, body effectOutcomeMessage) *store.NewMessage {
	args, err := json.Marshal(body)
	if err != nil {
		return nil
	}
	return &store.NewMessage{Ref: e.Ref, Name: name, Args: args, MustExist: true, System: true}
}

// flusher records effect outcomes in batches: at most effectFlushCount
// outcomes per transaction, every effectFlushEvery, and at once when that
// many are waiting or before a back-off starts, so the window in which a
// crash re-sends is small.
type flusher struct {
	h      *Host
	every  time.Duration
	mu     sync.Mutex
	buf    []store.EffectOutcome
	actors map[int64]int64 // effect ID -> actor pk, for outcome wake-ups
	kick   chan struct{}
}

func (f *flusher) actorOf(effectID int64) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pk, ok := f.actors[effectID]
	delete(f.actors, effectID)
	return pk, ok
}

func newFlusher(h *Host) *flusher {
	return &flusher{h: h, every: effectFlushEvery, actors: map[int64]int64{}, kick: make(chan struct{}, 1)}
}

func (f *flusher) add(o store.EffectOutcome) {
	f.mu.Lock()
	f.buf = append(f.buf, o)
	n := len(f.buf)
	f.mu.Unlock()
	if n >= effectFlushCount {
		f.flushNow()
	}
}

func (f *flusher) flushNow() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *flusher) run(ctx context.Context) {
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.flush()
			return
		case <-t.C:
		case <-f.kick:
		}
		f.flush()
	}
}

// flush records the buffered outcomes, at most effectFlushCount per
// transaction, until none is left. It is never cancelled (only bounded in
// time): an outcome dropped half-way would leave its effect claimed until
// the claim expires.
func (f *flusher) flush() {
	for f.flushBatch() {
	}
}

// flushBatch records up to effectFlushCount outcomes and reports whether
// it recorded any.
func (f *flusher) flushBatch() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.mu.Lock()
	n := min(len(f.buf), effectFlushCount)
	batch := slices.Clone(f.buf[:n])
	f.buf = f.buf[n:]
	if len(f.buf) == 0 {
		f.buf = nil // let the backing array go
	}
	f.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	h := f.h
	p := &store.EffectFinishParams{Owner: h.id, Outcomes: batch, MailboxCap: h.cfg.Limits.MailboxMessages, SystemAllowance: h.cfg.SystemAllowance}
	err := store.Retry(ctx, 5, func() error { return h.be.EffectFinish(ctx, p) })
	if err != nil {
		// The claims expire and the effects run again: at least once.
		h.met.storeErrors.WithLabelValues("effect_finish").Inc()
		h.log.Error("recording effect outcomes failed; they will be retried after their claims expire", "outcomes", len(batch), "err", err)
		for _, o := range batch {
			f.actorOf(o.ID) // no outcome message was written: forget its actor
		}
		return true
	}
	for _, o := range batch {
		if o.Outcome != nil {
			if pk, ok := f.actorOf(o.ID); ok {
				h.workArrived(pk)
			}
		}
	}
	h.poke(h.fxWake) // the next ordered effects are claimable now
	return true
}
