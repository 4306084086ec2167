package actor

import (
	"context"
	"testing"
)

func TestAuthorizeFillsCallerAndSystem(t *testing.T) {
	self := Ref{Type: "t", ID: "self"}
	turn := NewContext(context.Background(), TurnInfo{Ref: self}, nil, nil)
	cases := []struct {
		name       string
		ctx        context.Context
		wantVia    string // "" = no System
		wantCaller any
	}{
		{"a client", WithCaller(context.Background(), "alice"), "", "alice"},
		{"anonymous", context.Background(), "", nil},
		{"a Tell from inside a turn", turn, ViaTurn, nil},
		{"a staged send keeps its own Via", WithSystem(turn, System{Via: ViaSend, Source: self}), ViaSend, nil},
		{"an operator's retry keeps the operator", WithSystem(WithCaller(context.Background(), "op"), System{Via: ViaDeadLetterRetry, Source: self}), ViaDeadLetterRetry, "op"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got Request
			p := Policies{Message: func(_ context.Context, r Request) error { got = r; return nil }}
			if err := p.Authorize(c.ctx, Request{Operation: OpMessage, Ref: Ref{Type: "t", ID: "x"}}); err != nil {
				t.Fatal(err)
			}
			if got.Caller != c.wantCaller {
				t.Errorf("caller = %v, want %v", got.Caller, c.wantCaller)
			}
			switch {
			case c.wantVia == "" && got.System != nil:
				t.Errorf("system = %+v, want none", got.System)
			case c.wantVia != "" && (got.System == nil || got.System.Via != c.wantVia || got.System.Source != self):
				t.Errorf("system = %+v, want %s from %s", got.System, c.wantVia, self)
			}
		})
	}
}
