package actor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits bounds every value the runtime stores. Each limit is in bytes of
// the canonical JSON encoding (or of the ID). A zero field takes its default.
type Limits struct {
	IDBytes         int // actor ID; default 255
	ArgumentsBytes  int // message arguments; default 256 KiB
	ResultBytes     int // message results; default 256 KiB
	StateBytes      int // actor state; default 1 MiB
	EffectBytes     int // effect arguments and results; default 256 KiB
	ReminderBytes   int // reminder arguments; default 64 KiB
	ErrorBytes      int // stored error text; longer text is truncated; default 8 KiB
	Depth           int // nesting of arrays and objects; default 64
	MailboxMessages int // unfinished messages per actor; default 10,000; -1 = no cap
}

// MaxIDBytes is the widest actor ID a Limits may allow: every backend's
// schema stores at least this many bytes (MySQL's VARBINARY(2048) is the
// narrowest).
const MaxIDBytes = 2048

// Validate reports a limit no backend can honour.
func (l Limits) Validate() error {
	if l.IDBytes > MaxIDBytes {
		return fmt.Errorf("actor: Limits.IDBytes %d is over %d, the widest ID every backend stores", l.IDBytes, MaxIDBytes)
	}
	return nil
}

// DefaultLimits returns the limits used when a field is zero.
func DefaultLimits() Limits {
	return Limits{
		IDBytes:         255,
		ArgumentsBytes:  256 << 10,
		ResultBytes:     256 << 10,
		StateBytes:      1 << 20,
		EffectBytes:     256 << 10,
		ReminderBytes:   64 << 10,
		ErrorBytes:      8 << 10,
		Depth:           64,
		MailboxMessages: 10_000,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&l.IDBytes, d.IDBytes)
	set(&l.ArgumentsBytes, d.ArgumentsBytes)
	set(&l.ResultBytes, d.ResultBytes)
	set(&l.StateBytes, d.StateBytes)
	set(&l.EffectBytes, d.EffectBytes)
	set(&l.ReminderBytes, d.ReminderBytes)
	set(&l.ErrorBytes, d.ErrorBytes)
	set(&l.Depth, d.Depth)
	set(&l.MailboxMessages, d.MailboxMessages)
	return l
}

// Encode turns v into canonical, strictly checked JSON: v may be nil, a Go
// value that encoding/json marshals, json.RawMessage or []byte holding JSON.
// It refuses non-finite numbers, invalid UTF-8, duplicate object keys,
// nesting deeper than depth and encodings over limit bytes, naming what (e.g.
// "arguments") in the error. A nil v encodes as JSON null.
func Encode(what string, v any, limit, depth int) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case nil:
		raw = []byte("null")
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &JSONError{What: what, Reason: describeMarshalError(err)}
		}
		raw = b
	}
	if len(raw) == 0 {
		raw = []byte("null")
	}
	if err := Check(what, raw, depth); err != nil {
		return nil, err
	}
	out := raw
	if !isCompact(raw) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, &JSONError{What: what, Reason: err.Error()}
		}
		out = buf.Bytes()
	}
	if limit > 0 && len(out) > limit {
		return nil, &LimitError{What: what, Size: len(out), Limit: limit}
	}
	return out, nil
}

func describeMarshalError(err error) string {
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) {
		if strings.Contains(uv.Str, "NaN") || strings.Contains(uv.Str, "Inf") {
			return "non-finite number " + uv.Str + " (JSON allows only finite numbers)"
		}
		return "unsupported value " + uv.Str
	}
	var ut *json.UnsupportedTypeError
	if errors.As(err, &ut) {
		return "unsupported type " + ut.Type.String()
	}
	return err.Error()
}

// isCompact reports whether raw has no insignificant whitespace, so Encode
// can skip re-compacting the common case.
func isCompact(raw []byte) bool {
	inString, escaped := false, false
	for _, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// Check validates raw against the strict JSON rules: well-formed, valid
// UTF-8, one value, no duplicate keys in any object, nesting at most depth.
// JSON text cannot spell NaN or Infinity, so well-formedness covers
// non-finite numbers for raw input.
func Check(what string, raw []byte, depth int) error {
	if !utf8.Valid(raw) {
		return &JSONError{What: what, Reason: "not valid UTF-8"}
	}
	if json.Valid(raw) && plainValid(raw, depth) {
		return nil
	}
	// The token walk says what is wrong (or accepts what plainValid did
	// not try: escaped or very many keys).
	return checkTokens(what, raw, depth)
}

// checkTokens is Check by a walk over the decoder's tokens.
func checkTokens(what string, raw []byte, depth int) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := checkValue(dec, what, depth, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &JSONError{What: what, Reason: "more than one JSON value"}
	}
	return nil
}

func checkValue(dec *json.Decoder, what string, maxDepth, level int) error {
	tok, err := dec.Token()
	if err != nil {
		return &JSONError{What: what, Reason: "malformed JSON: " + err.Error()}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if maxDepth > 0 && level+1 > maxDepth {
		return &JSONError{What: what, Reason: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	switch d {
	case '[':
		for dec.More() {
			if err := checkValue(dec, what, maxDepth, level+1); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]struct{}{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return &JSONError{What: what, Reason: "malformed JSON: " + err.Error()}
			}
			key, _ := kt.(string)
			if _, dup := seen[key]; dup {
				return &JSONError{What: what, Reason: fmt.Sprintf("duplicate key %q", key)}
			}
			seen[key] = struct{}{}
			if err := checkValue(dec, what, maxDepth, level+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return &JSONError{What: what, Reason: "malformed JSON: " + err.Error()}
	}
	return nil
}

// Decode unmarshals canonical JSON into a value of type T, mapping failures
// to ErrInvalidArguments. An empty or null input leaves T's zero value.
func Decode[T any](what string, raw []byte) (T, error) {
	var v T
	if len(raw) == 0 || string(raw) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, &JSONError{What: what, Reason: err.Error()}
	}
	return v, nil
}

// plainValid is Check's fast path for well-formed JSON (json.Valid holds):
// one pass over the bytes for the nesting depth and duplicate keys, with
// no allocation for the usual shapes. It answers true only when it is
// sure; an object key with an escape (which must be unescaped to compare)
// or an object of more than 32 keys answers false, and the token walk
// decides. Every state and result a turn encodes, and every message's
// arguments, go through Check: the token walk was a fifth of a busy
// process's CPU.
func plainValid(raw []byte, depth int) bool {
	type frame struct {
		obj, wantKey bool
		keys         int // where this object's keys start in keys
	}
	var stackBuf [16]frame
	var keysBuf [64][2]int
	stack, keys := stackBuf[:0], keysBuf[:0]
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			if depth > 0 && len(stack)+1 > depth {
				return false
			}
			stack = append(stack, frame{obj: c == '{', wantKey: c == '{', keys: len(keys)})
		case '}', ']':
			keys = keys[:stack[len(stack)-1].keys]
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.obj {
				top.wantKey = true
			}
		case '"':
			start, escaped := i+1, false
			for i++; raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					escaped = true
					i++
				}
			}
			if len(stack) == 0 || !stack[len(stack)-1].wantKey {
				continue // a value
			}
			top := &stack[len(stack)-1]
			top.wantKey = false
			if escaped || len(keys)-top.keys >= 32 {
				return false
			}
			key := raw[start:i]
			for _, k := range keys[top.keys:] {
				if bytes.Equal(raw[k[0]:k[1]], key) {
					return false
				}
			}
			keys = append(keys, [2]int{start, i})
		}
	}
	return true
}
