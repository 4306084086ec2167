package realtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/ductus/ductus/actor"
)

// Frame kinds (the "op" field).
const (
	OpSubscribe    = "subscribe"
	OpUnsubscribe  = "unsubscribe"
	OpSnapshot     = "snapshot"
	OpUpdate       = "update"
	OpResumed      = "resumed"
	OpUnsubscribed = "unsubscribed"
	OpError        = "error"
)

// Error codes of error frames (and of the refusals metric).
const (
	CodeBadFrame      = "bad_frame"       // not a valid client frame
	CodeFrameTooLarge = "frame_too_large" // over MaxFrameBytes; the connection closes
	CodeBadToken      = "bad_token"       // malformed, unknown key or bad signature
	CodeTokenExpired  = "token_expired"
	CodeTokenScope    = "token_scope"  // the token is for another ref or observables
	CodeUnknownType   = "unknown_type" // the ref's type is not registered
	CodeBadRef        = "bad_ref"      // the ref's ID is invalid
	CodeUnknownObs    = "unknown_observable"
	CodeForbidden     = "forbidden" // the subscription policy refused
	CodeTooManySubs   = "too_many_subscriptions"
	CodeNotSubscribed = "not_subscribed"
	CodeInternal      = "internal" // reading state failed; retry later
	// Refused before the upgrade, as HTTP statuses (counted, never framed).
	CodeOrigin          = "origin"
	CodeTooManyConns    = "too_many_connections"
	CodeUnauthenticated = "unauthenticated" // Config.Identify refused the request
)

// clientFrame is a decoded frame from the client.
type clientFrame struct {
	Op          string    `json:"op"`
	Ref         actor.Ref `json:"ref"`
	Observables []string  `json:"observables,omitempty"`
	Token       string    `json:"token,omitempty"`
	// Since is the version the client last applied (resume); nil asks for
	// a snapshot.
	Since *int64 `json:"since,omitempty"`
}

// Server frames.
type snapshotFrame struct {
	Op      string                     `json:"op"`
	Ref     actor.Ref                  `json:"ref"`
	Version int64                      `json:"version"`
	Values  map[string]json.RawMessage `json:"values"`
}

type updateFrame struct {
	Op      string                     `json:"op"`
	Ref     actor.Ref                  `json:"ref"`
	Version int64                      `json:"version"`
	Changes map[string]json.RawMessage `json:"changes"`
}

type ackFrame struct {
	Op      string    `json:"op"`
	Ref     actor.Ref `json:"ref"`
	Version int64     `json:"version,omitempty"`
}

type errorFrame struct {
	Op      string     `json:"op"`
	Ref     *actor.Ref `json:"ref,omitempty"`
	Code    string     `json:"code"`
	Message string     `json:"message"`
}

// frameError is a decode failure answered with an error frame.
type frameError struct {
	code string
	msg  string
	ref  *actor.Ref // set when the frame named a ref
}

func (e *frameError) Error() string { return e.code + ": " + e.msg }

// Decoder limits.
const (
	maxObservables   = 64
	maxNameBytes     = 128
	maxTokenBytes    = 4096
	maxRefFieldBytes = 1024
)

// decodeFrame parses and checks one client frame. It never panics, whatever
// the bytes (FuzzDecodeFrame), and names what is wrong.
func decodeFrame(data []byte) (clientFrame, error) {
	var f clientFrame
	if !utf8.Valid(data) {
		return f, &frameError{code: CodeBadFrame, msg: "frame is not UTF-8 text"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return clientFrame{}, &frameError{code: CodeBadFrame, msg: "frame is not a valid JSON object: " + describe(err)}
	}
	if dec.More() {
		return clientFrame{}, &frameError{code: CodeBadFrame, msg: "frame has data after its JSON object"}
	}
	bad := func(format string, a ...any) error {
		var ref *actor.Ref
		if f.Ref.Type != "" {
			r := f.Ref
			ref = &r
		}
		return &frameError{code: CodeBadFrame, msg: fmt.Sprintf(format, a...), ref: ref}
	}
	switch f.Op {
	case OpSubscribe, OpUnsubscribe:
	case "":
		return clientFrame{}, bad(`frame has no "op" (want "subscribe" or "unsubscribe")`)
	default:
		return clientFrame{}, bad("unknown op %q (want \"subscribe\" or \"unsubscribe\")", truncate(f.Op, 40))
	}
	if f.Ref.Type == "" || f.Ref.ID == "" {
		return clientFrame{}, bad(`%s needs "ref": {"type", "id"}`, f.Op)
	}
	if len(f.Ref.Type) > maxRefFieldBytes || len(f.Ref.ID) > maxRefFieldBytes {
		return clientFrame{}, bad("ref type or ID is longer than %d bytes", maxRefFieldBytes)
	}
	if f.Op == OpUnsubscribe {
		if f.Token != "" || f.Since != nil || len(f.Observables) > 0 {
			return clientFrame{}, bad("unsubscribe takes only a ref")
		}
		return f, nil
	}
	if f.Token == "" {
		return clientFrame{}, bad(`subscribe needs a "token"`)
	}
	if len(f.Token) > maxTokenBytes {
		return clientFrame{}, bad("token is longer than %d bytes", maxTokenBytes)
	}
	if len(f.Observables) > maxObservables {
		return clientFrame{}, bad("at most %d observables per subscription", maxObservables)
	}
	seen := map[string]bool{}
	for _, o := range f.Observables {
		if o == "" || len(o) > maxNameBytes {
			return clientFrame{}, bad("observable names must be 1-%d bytes", maxNameBytes)
		}
		if seen[o] {
			return clientFrame{}, bad("observable %q is named twice", o)
		}
		seen[o] = true
	}
	if f.Since != nil && *f.Since < 0 {
		return clientFrame{}, bad("since must be a version (0 or more), not %d", *f.Since)
	}
	return f, nil
}

// describe shortens a JSON error for the client.
func describe(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)
	}
	return truncate(err.Error(), 200)
}
