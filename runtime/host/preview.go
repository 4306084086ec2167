package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ductus/ductus/actor"
)

// TurnPreview is what one message would do to an actor: its result or
// error, the state after it and what it staged. Nothing of it was written.
type TurnPreview struct {
	Result json.RawMessage // the handler's result, JSON-encoded
	Err    error           // the handler's error (then State is the state before)
	State  json.RawMessage // the state after the message
	Staged actor.Staged    // effects, sends and reminders it staged
}

// Preview runs message with args on the actor's stored state (its
// initial state when it has none yet) in memory, outside any lease, and
// reports what the turn would commit; it writes nothing and runs no
// effect. Staging is checked as in a real turn (an unregistered effect
// name, a send to an unknown type, a bad schedule). A handler with side
// effects of its own (which actor code must not have) would run them.
// Tests use it through hosttest; operators can ask what a message would do.
func (h *Host) Preview(ctx context.Context, ref actor.Ref, message string, args any) (*TurnPreview, error) {
	def, err := h.reg.Lookup(ref.Type)
	if err != nil {
		return nil, err
	}
	if err := actor.ValidateID(ref.ID, h.cfg.Limits.IDBytes); err != nil {
		return nil, err
	}
	if _, ok := def.Spec().Messages[message]; !ok {
		return nil, fmt.Errorf("%w: type %q has no message %q", actor.ErrUnknownMessage, ref.Type, message)
	}
	if err := h.admin(ctx, "actor.preview", ref); err != nil {
		return nil, err
	}
	raw, err := actor.Encode("arguments", args, h.cfg.Limits.ArgumentsBytes, h.cfg.Limits.Depth)
	if err != nil {
		return nil, err
	}
	if err := def.CheckArguments(message, raw); err != nil {
		return nil, err
	}
	var state []byte
	version := 0
	switch a, err := h.be.ActorGet(ctx, ref); {
	case err == nil:
		state, version = a.State, a.StateVersion
	case !isNotFound(err):
		return nil, err
	}
	impl, err := def.Load(state, version)
	if err != nil {
		return nil, err
	}
	c := actor.NewContext(ctx, actor.TurnInfo{Ref: ref, Message: message, Attempt: 1, Query: def.Spec().Messages[message]}, h.log, h.checker)
	if err := h.callHook(func() error { return impl.Activate(c) }); err != nil {
		return nil, fmt.Errorf("OnActivate: %w", err)
	}
	before, err := actor.Encode("state", impl.State(), h.cfg.Limits.StateBytes, h.cfg.Limits.Depth)
	if err != nil {
		return nil, err
	}
	p := &TurnPreview{}
	res, herr := impl.Handle(c, message, raw)
	if herr != nil {
		p.Err, p.State = herr, before
		return p, nil
	}
	if p.Result, err = actor.Encode("result", res, h.cfg.Limits.ResultBytes, h.cfg.Limits.Depth); err != nil {
		return nil, err
	}
	if p.State, err = actor.Encode("state", impl.State(), h.cfg.Limits.StateBytes, h.cfg.Limits.Depth); err != nil {
		return nil, err
	}
	p.Staged = *c.Staged()
	return p, nil
}
