package realtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ductus/ductus/actor"
)

type tokenKey struct{}

// TokenFrom returns the verified claims of the subscription a policy is
// asked about (the subscription policy runs with them in its context).
func TokenFrom(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(tokenKey{}).(Claims)
	return c, ok
}

// subscribe runs a subscribe frame: verify the token, resolve the type,
// ask the policy, then resume or snapshot. A refusal ends only this
// subscription (an error frame naming the ref); the connection stays open.
func (c *conn) subscribe(f clientFrame) {
	ref := f.Ref
	refuse := func(code, format string, a ...any) { c.sendError(&ref, code, fmt.Sprintf(format, a...)) }
	claims, err := c.h.cfg.Keys.Verify(f.Token, time.Now())
	if err != nil {
		code := CodeBadToken
		if errors.Is(err, ErrTokenExpired) {
			code = CodeTokenExpired
		}
		refuse(code, "%v", err)
		return
	}
	if err := claims.covers(ref, f.Observables); err != nil {
		refuse(CodeTokenScope, "%v", err)
		return
	}
	obs := f.Observables
	if len(obs) == 0 {
		obs = claims.Observables
	}
	obs = slices.Clone(obs)
	slices.Sort(obs)
	def, err := c.h.host.Registry().Lookup(ref.Type)
	if err != nil {
		refuse(CodeUnknownType, "actor type %q is not registered", ref.Type)
		return
	}
	for _, o := range obs {
		if !slices.Contains(def.Spec().Observables, o) {
			refuse(CodeUnknownObs, "actor type %q has no observable %q", ref.Type, o)
			return
		}
	}

	c.subMu.Lock()
	defer c.subMu.Unlock()
	old := c.subs[ref]
	if old == nil && len(c.subs) >= c.h.cfg.MaxSubscriptions {
		refuse(CodeTooManySubs, "at most %d subscriptions per connection", c.h.cfg.MaxSubscriptions)
		return
	}
	s := &sub{c: c, ref: ref, obs: obs, claims: claims}
	if err := c.h.host.AuthorizeSubscription(c.policyCtx(s), ref); err != nil {
		code, msg := refusal(err)
		refuse(code, "%s", msg)
		return
	}
	if old != nil { // a new subscribe replaces the old one (other observables, a new token)
		c.drop(old)
	}
	c.subs[ref] = s
	c.h.met.subscriptions.Inc()
	if f.Since != nil && c.h.hub.resume(s, *f.Since) {
		return
	}
	if err := c.snapshot(s); err != nil {
		c.drop(s)
		code, msg := refusal(err)
		refuse(code, "%s", msg)
	}
}

// policyCtx is what the subscription policy sees: the connection's caller
// and the token's claims.
func (c *conn) policyCtx(s *sub) context.Context {
	ctx := context.WithValue(c.ctx, tokenKey{}, s.claims)
	if c.caller != nil {
		ctx = actor.WithCaller(ctx, c.caller)
	}
	return ctx
}

// snapshot reads s's actor's current values (the policy runs again in
// Observe) and queues them, then whatever changed meanwhile. Call with
// subMu held.
func (c *conn) snapshot(s *sub) error {
	version := c.h.hub.beginSnapshot(s)
	ctx, cancel := context.WithTimeout(c.policyCtx(s), c.h.cfg.WriteTimeout)
	defer cancel()
	values, _, err := c.h.host.Observe(ctx, s.ref)
	if err != nil {
		c.h.hub.remove(s)
		return err
	}
	for name := range values {
		if !s.wants(name) {
			delete(values, name)
		}
	}
	c.h.hub.endSnapshot(s, version, values)
	return nil
}

// resnapshot replaces a subscription's dropped updates with a snapshot,
// unless it ended meanwhile; a refusal now (the policy changed its mind)
// ends it with an error frame.
func (c *conn) resnapshot(s *sub) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if c.subs[s.ref] != s {
		return
	}
	if err := c.snapshot(s); err != nil {
		c.drop(s)
		code, msg := refusal(err)
		c.sendError(&s.ref, code, msg)
	}
}

// refusal maps a runtime error to an error code and a message for the
// client (an internal failure's details stay in the log).
func refusal(err error) (code, msg string) {
	switch {
	case errors.Is(err, actor.ErrForbidden):
		return CodeForbidden, err.Error()
	case errors.Is(err, actor.ErrUnknownType):
		return CodeUnknownType, err.Error()
	case errors.Is(err, actor.ErrInvalidID), errors.Is(err, actor.ErrTooLarge):
		return CodeBadRef, err.Error()
	}
	return CodeInternal, "reading the actor's state failed; subscribe again later"
}
