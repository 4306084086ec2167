package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/runtime/store"
)

var _ actor.Client = (*Host)(nil)

// maxIdempotencyKey bounds idempotency keys (they are indexed).
const maxIdempotencyKey = 255

// Tell implements actor.Client.
func (h *Host) Tell(ctx context.Context, ref actor.Ref, message string, args any, opts ...actor.TellOption) (actor.MessageID, error) {
	ids, err := h.tell(ctx, nil, []actor.Envelope{{Ref: ref, Message: message, Args: args, Options: opts}}, false)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// TellBatch implements actor.Client: one transaction, all or nothing.
func (h *Host) TellBatch(ctx context.Context, batch []actor.Envelope) ([]actor.MessageID, error) {
	return h.tell(ctx, nil, batch, false)
}

// TellTx enqueues inside the caller's transaction (from Backend().Begin),
// so the caller's own rows and the messages commit together. Wake-ups are
// sent by Notify after the caller commits.
func (h *Host) TellTx(ctx context.Context, tx store.Tx, batch []actor.Envelope) ([]actor.MessageID, []int64, error) {
	msgs, err := h.prepare(ctx, batch, false)
	if err != nil {
		return nil, nil, err
	}
	res, err := h.enqueue(ctx, tx, msgs)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]actor.MessageID, len(res))
	pks := make([]int64, 0, len(res))
	for i, r := range res {
		ids[i] = actor.MessageID(r.MessageID)
		if !r.Duplicate {
			pks = append(pks, r.ActorPK)
		}
	}
	return ids, pks, nil
}

// Notify wakes workers for actors whose messages a caller transaction
// committed (the pks TellTx returned), and other processes where this one
// cannot take the work. Call it after the commit: TellTx sends no wake-up
// itself, so no process looks for rows that are not yet visible.
func (h *Host) Notify(pks []int64) {
	if len(pks) == 0 {
		return
	}
	if h.othersMustTake() {
		h.signalSoon()
	}
	for _, pk := range pks {
		h.workArrived(pk)
	}
}

func (h *Host) tell(ctx context.Context, tx store.Tx, batch []actor.Envelope, ask bool) ([]actor.MessageID, error) {
	msgs, err := h.prepare(ctx, batch, ask)
	if err != nil {
		return nil, err
	}
	res, err := h.enqueue(ctx, tx, msgs)
	if err != nil {
		return nil, err
	}
	ids := make([]actor.MessageID, len(res))
	for i, r := range res {
		ids[i] = actor.MessageID(r.MessageID)
	}
	if tx == nil {
		seen := map[int64]bool{}
		for _, r := range res {
			if !r.Duplicate && !seen[r.ActorPK] {
				seen[r.ActorPK] = true
				h.workArrived(r.ActorPK)
			}
		}
	}
	return ids, nil
}

func (h *Host) enqueue(ctx context.Context, tx store.Tx, msgs []store.NewMessage) ([]store.EnqueueResult, error) {
	p := &store.MailboxEnqueueParams{Messages: msgs, MailboxCap: h.cfg.Limits.MailboxMessages, SystemAllowance: h.cfg.SystemAllowance}
	ask, keyed := false, true
	for _, m := range msgs {
		ask = ask || m.Ask
		keyed = keyed && m.IdempotencyKey != ""
	}
	// Other processes are woken here only when this one cannot take the
	// work; otherwise its dispatcher claims the actor by key, and wakes
	// them if another process holds the lease (claimAvailable). An Ask
	// signals in its own commit (someone is waiting), as does everything
	// where no notifier runs; a Tell through the debounced notifier once
	// committed, off the commit path; TellTx not at all: the caller's
	// Notify does, after the caller's commit.
	notifyLater := false
	if h.othersMustTake() {
		switch {
		case ask || !h.ntOn.Load():
			p.Signal = true
		case tx == nil:
			notifyLater = true
		}
	}
	var res []store.EnqueueResult
	var err error
	if tx != nil {
		res, err = h.be.MailboxEnqueue(ctx, tx, p)
	} else {
		// A transient failure is retried only where a second attempt
		// cannot enqueue the messages twice: the first certainly rolled
		// back, or every message carries an idempotency key. A connection
		// lost with the commit on the wire may have committed, so a Tell
		// without a key returns that (transient) error to its caller, who
		// decides (an MLLP source answers AE and its sender resends).
		retry := store.IsRolledBack
		if keyed {
			retry = store.IsTransient
		}
		err = store.RetryWhen(ctx, 3, retry, func() error {
			res, err = h.be.MailboxEnqueue(ctx, nil, p)
			return err
		})
	}
	if err != nil {
		h.met.storeErrors.WithLabelValues("enqueue").Inc()
		return nil, err
	}
	if notifyLater {
		h.signalSoon()
	}
	for i, r := range res {
		if !r.Duplicate {
			h.met.enqueued.WithLabelValues(msgs[i].Ref.Type).Inc()
		}
	}
	return res, nil
}

// othersMustTake reports that work enqueued now is for other processes:
// this one runs no workers or has none free.
func (h *Host) othersMustTake() bool { return h.cfg.NoWorkers || len(h.free) == 0 }

// prepare validates and authorizes a batch before anything is written.
func (h *Host) prepare(ctx context.Context, batch []actor.Envelope, ask bool) ([]store.NewMessage, error) {
	if len(batch) == 0 {
		return nil, fmt.Errorf("%w: empty batch", actor.ErrInvalidArguments)
	}
	msgs := make([]store.NewMessage, len(batch))
	for i, e := range batch {
		m, err := h.validate(ctx, e, ask)
		if err != nil {
			if len(batch) > 1 {
				return nil, fmt.Errorf("batch message %d: %w", i, err)
			}
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (h *Host) validate(ctx context.Context, e actor.Envelope, ask bool) (store.NewMessage, error) {
	lim := h.cfg.Limits
	def, err := h.reg.Lookup(e.Ref.Type)
	if err != nil {
		return store.NewMessage{}, err
	}
	if err := actor.ValidateID(e.Ref.ID, lim.IDBytes); err != nil {
		return store.NewMessage{}, err
	}
	query, known := def.Spec().Messages[e.Message]
	if !known {
		return store.NewMessage{}, fmt.Errorf("%w: type %q has no message %q", actor.ErrUnknownMessage, e.Ref.Type, e.Message)
	}
	op := actor.OpMessage
	if query {
		op = actor.OpQuery
	}
	if err := h.cfg.Policies.Authorize(ctx, actor.Request{Operation: op, Ref: e.Ref, Message: e.Message}); err != nil {
		return store.NewMessage{}, err
	}
	args, err := actor.Encode("arguments", e.Args, lim.ArgumentsBytes, lim.Depth)
	if err != nil {
		return store.NewMessage{}, err
	}
	if err := def.CheckArguments(e.Message, args); err != nil {
		return store.NewMessage{}, err
	}
	o := actor.ResolveTellOptions(e.Options)
	if len(o.IdempotencyKey) > maxIdempotencyKey {
		return store.NewMessage{}, &actor.LimitError{What: "idempotency key", Size: len(o.IdempotencyKey), Limit: maxIdempotencyKey}
	}
	_, system := actor.SystemFrom(ctx)
	return store.NewMessage{Ref: e.Ref, Name: e.Message, Args: args, IdempotencyKey: o.IdempotencyKey, AvailableAt: o.AvailableAt, Ask: ask, System: system}, nil
}

// Ask implements actor.Client.
func (h *Host) Ask(ctx context.Context, ref actor.Ref, message string, args any, opts ...actor.TellOption) (json.RawMessage, error) {
	if from, ok := actor.InTurn(ctx); ok {
		return nil, fmt.Errorf("%w: %s cannot Ask %s (send a message and handle the reply instead)", actor.ErrActorContext, from, ref)
	}
	ids, err := h.tell(ctx, nil, []actor.Envelope{{Ref: ref, Message: message, Args: args, Options: opts}}, true)
	if err != nil {
		return nil, err
	}
	id := int64(ids[0])
	timeout := actor.ResolveTellOptions(opts).Timeout
	if timeout <= 0 {
		timeout = h.cfg.AskTimeout
	}
	w := h.waiters.add(id, ref)
	defer h.waiters.remove(id)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// The first read comes soon (the message may have finished before the
	// waiter was registered); later ones back off to the poll interval.
	poll := 2 * time.Millisecond
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case o := <-w.ch:
			if !o.reread {
				if o.err != nil {
					return nil, o.err
				}
				return o.result, nil
			}
		case <-timer.C:
			poll = min(poll*2, h.cfg.PollInterval)
			timer.Reset(poll)
		case <-deadline.C:
			return nil, fmt.Errorf("%w: message %d to %s is still queued", actor.ErrAskTimeout, id, ref)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: message %d to %s is still queued", actor.ErrAskTimeout, id, ref)
			}
			return nil, ctx.Err()
		}
		st, err := h.be.MessageStatus(ctx, []int64{id})
		if err != nil {
			if store.IsTransient(err) {
				continue
			}
			return nil, err
		}
		switch st[0].State {
		case store.MessageCompleted:
			return st[0].Result, nil
		case store.MessageDead:
			return nil, &actor.DeadLetterError{MessageID: actor.MessageID(id), Reason: st[0].Error}
		case store.MessageMissing:
			return nil, fmt.Errorf("%w: message %d is gone (its actor %s was destroyed)", actor.ErrNotFound, id, ref)
		}
	}
}

// Destroy implements actor.Client.
func (h *Host) Destroy(ctx context.Context, ref actor.Ref) (bool, error) {
	if from, ok := actor.InTurn(ctx); ok {
		return false, fmt.Errorf("%w: %s cannot destroy %s from a turn", actor.ErrActorContext, from, ref)
	}
	if _, err := h.reg.Lookup(ref.Type); err != nil {
		return false, err
	}
	if err := actor.ValidateID(ref.ID, h.cfg.Limits.IDBytes); err != nil {
		return false, err
	}
	if err := h.cfg.Policies.Authorize(ctx, actor.Request{Operation: actor.OpDestroy, Ref: ref}); err != nil {
		return false, err
	}
	existed, err := h.be.ActorDestroy(ctx, ref)
	if err != nil {
		return false, err
	}
	h.waiters.signalRef(ref)
	return existed, nil
}
