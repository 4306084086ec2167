package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

// pass runs an activation until it has no due message, its budget is spent,
// its lease is lost or the host is closing.
func (h *Host) pass(ctx context.Context, a *activation) {
	for {
		outcome := h.runPass(ctx, a)
		switch outcome {
		case passIdle:
			if h.cache.park(a, time.Now()) {
				continue // work arrived while finishing
			}
			return
		case passYield:
			h.cache.remove(a)
			h.release(ctx, []*activation{a}, true)
			return
		case passDrop:
			h.cache.remove(a)
			return
		case passRelease:
			h.cache.remove(a)
			h.release(context.WithoutCancel(ctx), []*activation{a}, false)
			return
		}
	}
}

type passOutcome int

const (
	passIdle    passOutcome = iota // nothing due: keep cached
	passYield                      // budget spent: release behind waiting work
	passDrop                       // lease lost: forget it
	passRelease                    // trouble (store error, shutdown): give the lease back
)

func (h *Host) runPass(ctx context.Context, a *activation) passOutcome {
	if a.lost {
		return passDrop
	}
	start := time.Now()
	done := 0
	h.cache.taking(a)
	msgs, err := h.be.MessageTake(ctx, &store.MessageTakeParams{Owner: h.id, Lease: a.lease(), Limit: h.cfg.BatchSize})
	if err != nil {
		return h.storeTrouble(a, "take", err)
	}
	for len(msgs) > 0 {
		if !a.loaded {
			if err := h.load(ctx, a, msgs[0]); err != nil {
				return h.failLoad(ctx, a, msgs, err)
			}
		}
		budget := done+len(msgs) < h.cfg.PassMessages && time.Since(start) < h.cfg.PassDuration && !h.isClosing()
		next, failed, err := h.runBatch(ctx, a, msgs, budget)
		if err != nil {
			if errors.Is(err, actor.ErrLostActivation) {
				a.lost = true
				h.met.leaseLosses.WithLabelValues(a.ref.Type).Inc()
				h.log.Info("stale commit refused: the lease was lost", "actor", a.ref.String(), "generation", a.gen)
				return passDrop
			}
			return h.storeTrouble(a, "commit", err)
		}
		done += len(msgs)
		if failed || !budget {
			if !failed {
				return passYield
			}
			return passIdle // the head backs off; its due time wakes a claim
		}
		msgs = next
	}
	if h.isClosing() {
		return passRelease
	}
	return passIdle
}

// storeTrouble handles a failed take or commit that was not a fence
// refusal: the commit may or may not have happened, so the activation is
// released and the actor re-read by whoever claims it next.
func (h *Host) storeTrouble(a *activation, what string, err error) passOutcome {
	if errors.Is(err, actor.ErrLostActivation) {
		a.lost = true
		h.met.leaseLosses.WithLabelValues(a.ref.Type).Inc()
		return passDrop
	}
	if h.ctx.Err() == nil {
		h.met.storeErrors.WithLabelValues(what).Inc()
		h.log.Warn("store error during a turn; releasing the activation", "actor", a.ref.String(), "op", what, "err", err)
	}
	return passRelease
}

// load decodes and migrates the state and runs OnActivate.
func (h *Host) load(ctx context.Context, a *activation, first store.Message) error {
	impl, err := a.def.Load(a.initial, a.initialV)
	if err != nil {
		return err
	}
	a.impl, a.stored, a.storedV = impl, a.initial, a.initialV
	a.initial = nil
	if err := h.callHook(func() error {
		return impl.Activate(actor.NewContext(ctx, actor.TurnInfo{Ref: a.ref, Generation: a.gen, MessageID: actor.MessageID(first.ID)}, h.log, h.checker))
	}); err != nil {
		return fmt.Errorf("OnActivate: %w", err)
	}
	state, err := actor.Encode("state", impl.State(), h.cfg.Limits.StateBytes, h.cfg.Limits.Depth)
	if err != nil {
		return err
	}
	a.state = state
	a.observed, err = h.observe(a)
	if err != nil {
		return err
	}
	a.loaded = true
	return nil
}

// failLoad fails the head message with the activation error (so a broken
// migration backs off and is dead-lettered like any failure) and returns the
// rest. A newer stored state version is not this process's to judge: it
// backs off without ever dead-lettering, for a newer worker to take.
func (h *Host) failLoad(ctx context.Context, a *activation, msgs []store.Message, err error) passOutcome {
	head := msgs[0]
	rp := h.cfg.retryFor(a.ref.Type)
	f := &store.Failure{MessageID: head.ID, Attempt: head.Attempt, Error: h.errorText(err)}
	if errors.Is(err, actor.ErrNewerStateVersion) {
		f.RetryAfter = rp.Max
	} else {
		f.Dead = head.Attempt >= rp.MaxAttempts || actor.IsPermanent(err)
		f.RetryAfter = rp.Delay(head.Attempt)
	}
	h.log.Error("activation failed", "actor", a.ref.String(), "err", err, "dead", f.Dead)
	p := &store.TurnCommitParams{Owner: h.id, Lease: a.lease(), StateVersion: a.initialV, Failed: f, Returned: ids(msgs[1:]), SignalDone: h.remoteAsks(msgs[:1], f.Dead)}
	if _, cerr := h.be.TurnCommit(ctx, p); cerr != nil {
		return h.storeTrouble(a, "commit", cerr)
	}
	h.countFailure(a.ref.Type, f.Dead)
	if f.Dead {
		h.waiters.signal(head.ID, &actor.DeadLetterError{MessageID: actor.MessageID(head.ID), Reason: f.Error})
	}
	return passRelease
}

// runBatch runs msgs in order and commits them in one fenced transaction.
// A failure at message i commits 0..i-1, fails i and returns the rest. When
// takeNext, the commit also takes the next batch.
func (h *Host) runBatch(ctx context.Context, a *activation, msgs []store.Message, takeNext bool) (next []store.Message, failed bool, err error) {
	p := &store.TurnCommitParams{Owner: h.id, Lease: a.lease()}
	rp := h.cfg.retryFor(a.ref.Type)
	var results [][]byte
	var failErr error
	for i, m := range msgs {
		res, staged, err := h.runMessage(ctx, a, m)
		if err != nil {
			failErr = err
			f := &store.Failure{MessageID: m.ID, Attempt: m.Attempt, Error: h.errorText(err)}
			f.Dead = m.Attempt >= rp.MaxAttempts || actor.IsPermanent(err)
			if !f.Dead {
				f.RetryAfter = rp.Delay(m.Attempt)
			}
			p.Failed = f
			p.Returned = ids(msgs[i+1:])
			break
		}
		p.Completed = append(p.Completed, store.Completion{MessageID: m.ID, Attempt: m.Attempt, Result: res})
		results = append(results, res)
		if staged != nil {
			h.stage(p, a, m, staged)
		}
	}
	// State goes with completed messages only: what OnActivate or a
	// migration changed is persisted by the next successful message's
	// commit, never by a commit that only fails one.
	p.StateVersion = a.storedV
	if len(p.Completed) > 0 {
		if !bytes.Equal(a.state, a.stored) || a.storedV != a.spec.StateVersion {
			p.State = a.state
		}
		p.StateVersion = a.spec.StateVersion
		if err := h.broadcastsFor(a, p); err != nil {
			return nil, false, err
		}
	}
	ran := msgs[:len(p.Completed)]
	p.SignalDone = h.remoteAsks(ran, false)
	if p.Failed != nil && p.Failed.Dead {
		p.SignalDone = append(p.SignalDone, h.remoteAsks(msgs[len(p.Completed):len(p.Completed)+1], true)...)
	}
	if takeNext && p.Failed == nil {
		p.TakeNext = h.cfg.BatchSize
		h.cache.taking(a)
	}
	began := time.Now()
	res, err := h.be.TurnCommit(ctx, p)
	h.met.commit.Observe(time.Since(began).Seconds())
	if err != nil {
		h.met.turns.WithLabelValues(a.ref.Type, "error").Inc()
		return nil, false, err
	}
	h.met.turns.WithLabelValues(a.ref.Type, "ok").Inc()
	if len(p.Completed) > 0 {
		a.stored, a.storedV = a.state, a.spec.StateVersion
	}
	h.met.processed.WithLabelValues(a.ref.Type).Add(float64(len(p.Completed)))
	for i, c := range p.Completed {
		if ran[i].Ask {
			h.waiters.deliver(c.MessageID, results[i])
		}
	}
	if len(p.Effects) > 0 {
		h.poke(h.fxWake)
	}
	if len(p.Sends) > 0 {
		h.poke(h.sendWk)
	}
	if len(p.Broadcasts) > 0 {
		h.poke(h.bcWake)
		// Other processes' subscribers (realtime) hear of it by the
		// backend's cross-process signal, not their next broadcast poll.
		h.ntWantB.Store(true)
		h.poke(h.ntWake)
	}
	if f := p.Failed; f != nil {
		h.countFailure(a.ref.Type, f.Dead)
		h.log.Warn("message failed", "actor", a.ref.String(), "message_id", f.MessageID, "attempt", f.Attempt,
			"dead", f.Dead, "retry_in", f.RetryAfter, "err", failErr)
		if f.Dead {
			h.waiters.signal(f.MessageID, &actor.DeadLetterError{MessageID: actor.MessageID(f.MessageID), Reason: f.Error})
		}
		return nil, true, nil
	}
	return res.Next, false, nil
}

func (h *Host) countFailure(typ string, dead bool) {
	if dead {
		h.met.deadLetters.WithLabelValues(typ).Inc()
	} else {
		h.met.retries.WithLabelValues(typ).Inc()
	}
}

// runMessage runs one message outside any transaction. On failure the
// in-memory state is restored to what it was before the message.
func (h *Host) runMessage(ctx context.Context, a *activation, m store.Message) ([]byte, *actor.Staged, error) {
	query, known := a.spec.Messages[m.Name]
	if !known {
		return nil, nil, actor.Permanent(fmt.Errorf("%w: type %q has no message %q", actor.ErrUnknownMessage, a.ref.Type, m.Name))
	}
	info := actor.TurnInfo{Ref: a.ref, MessageID: actor.MessageID(m.ID), Message: m.Name, Sequence: m.Seq, Attempt: m.Attempt,
		Generation: a.gen, Query: query, Due: m.AvailableAt}
	tc := actor.NewContext(ctx, info, h.log, h.checker)
	var out any
	err := h.callHook(func() error {
		var err error
		out, err = a.impl.Handle(tc, m.Name, m.Args)
		return err
	})
	var result, state []byte
	if err == nil {
		result, err = actor.Encode("result", out, h.cfg.Limits.ResultBytes, h.cfg.Limits.Depth)
	}
	if err == nil {
		state, err = actor.Encode("state", a.impl.State(), h.cfg.Limits.StateBytes, h.cfg.Limits.Depth)
	}
	if err == nil && query && !bytes.Equal(state, a.state) {
		err = actor.Permanent(fmt.Errorf("%w: query %q of %s", actor.ErrQueryMutated, m.Name, a.ref))
	}
	if err != nil {
		if rerr := a.impl.Reset(a.state); rerr != nil {
			// The restored state does not decode: drop the in-memory copy so
			// the next activation starts from the committed state.
			a.lost = true
		}
		var he *actor.HandlerError
		if !errors.As(err, &he) {
			err = &actor.HandlerError{Ref: a.ref, Message: m.Name, Err: err}
		} else if he.Ref.Type == "" {
			he.Ref, he.Message = a.ref, m.Name
		}
		return nil, nil, err
	}
	a.state = state
	st := tc.Staged()
	if st.Empty() {
		return result, nil, nil
	}
	return result, st, nil
}

// callHook runs actor code, turning a panic into a HandlerError.
func (h *Host) callHook(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &actor.HandlerError{Err: fmt.Errorf("%v\n%s", r, debug.Stack()), Panic: true}
		}
	}()
	return fn()
}

// observe evaluates the observables as JSON.
func (h *Host) observe(a *activation) (map[string][]byte, error) {
	vals := a.impl.Observe()
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(vals))
	for name, v := range vals {
		b, err := actor.Encode("observable "+name, v, h.cfg.Limits.StateBytes, h.cfg.Limits.Depth)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// broadcastsFor adds a broadcast row for each observable the batch changed.
func (h *Host) broadcastsFor(a *activation, p *store.TurnCommitParams) error {
	if len(a.spec.Observables) == 0 {
		return nil
	}
	now, err := h.observe(a)
	if err != nil {
		return err
	}
	for _, name := range a.spec.Observables {
		if v := now[name]; !bytes.Equal(v, a.observed[name]) {
			p.Broadcasts = append(p.Broadcasts, store.NewBroadcast{Name: name, Value: v, StateVersion: a.spec.StateVersion})
		}
	}
	a.observed = now
	return nil
}

// remoteAsks lists the asked messages among msgs that no waiter of this
// process is waiting for, so backends with cross-process wake-ups signal
// only what another process needs.
func (h *Host) remoteAsks(msgs []store.Message, _ bool) []int64 {
	var out []int64
	for _, m := range msgs {
		if m.Ask && !h.waiters.local(m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}

func (h *Host) errorText(err error) string {
	s := err.Error()
	if n := h.cfg.Limits.ErrorBytes; len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

func ids(msgs []store.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}
