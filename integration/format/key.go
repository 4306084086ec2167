package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ductus/ductus/integration/hl7"
)

// KeyPath is a compiled ordering or dedupe key: an HL7 path for hl7v2
// ("PID-3.1"), a JSON path for json ("$.patient.mrn", "patient.mrn",
// "items[0].id", `$["odd key"]`), a column name for csv ("mrn" or "$.mrn").
// Compile it once, when the configuration is loaded, so a bad path is a
// configuration error and not a message error.
type KeyPath struct {
	format Name
	text   string
	hl7    hl7.Path
	steps  []step
}

// step is one JSON path step: an object key or an array index.
type step struct {
	key   string
	index int // -1 for a key step
}

// CompileKey checks path for format f.
func CompileKey(f Name, path string) (*KeyPath, error) {
	k := &KeyPath{format: f, text: path}
	switch f {
	case HL7v2:
		p, err := hl7.ParsePath(path)
		if err != nil {
			return nil, fmt.Errorf("format: key: %w", err)
		}
		if p.Segment == "" {
			return nil, fmt.Errorf("format: key %q: an HL7 key path starts with a segment name, such as \"PID-3.1\"", path)
		}
		k.hl7 = p
	case JSON:
		steps, err := parseJSONPath(path)
		if err != nil {
			return nil, err
		}
		k.steps = steps
	case CSV:
		steps, err := parseJSONPath(path)
		if err != nil {
			return nil, err
		}
		if len(steps) != 1 || steps[0].index >= 0 {
			return nil, fmt.Errorf("format: key %q: a CSV key is one column name, such as \"mrn\"", path)
		}
		k.steps = steps
	case Text:
		return nil, errors.New("format: key: a text message has no fields to take a key from")
	default:
		_, err := ParseName(string(f))
		return nil, err
	}
	return k, nil
}

// String returns the path as written.
func (k *KeyPath) String() string { return k.text }

// Extract returns the key of payload. An absent value is the empty key (""
// with no error): every such message shares one lane, and dedupe ignores
// it. A JSON string is the key as it is, a number its literal text ("12"
// and "12.0" are different keys), true and false the words, null absent;
// an object or array is an error, and so is a payload that is not of the
// format.
func (k *KeyPath) Extract(payload []byte) (string, error) {
	switch k.format {
	case HL7v2:
		m, err := hl7.Parse(payload)
		if err != nil {
			return "", fmt.Errorf("format: key %s: %w", k.text, err)
		}
		return m.GetPath(k.hl7), nil
	case CSV:
		rows, err := ReadCSV(payload)
		if err != nil {
			return "", fmt.Errorf("format: key %s: %w", k.text, err)
		}
		if len(rows) == 0 {
			return "", nil
		}
		v, _ := rows[0].Get(k.steps[0].key)
		return v, nil
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("format: key %s: the message is not JSON: %w", k.text, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return "", fmt.Errorf("format: key %s: the message has more data after its JSON value", k.text)
	}
	for _, s := range k.steps {
		switch node := v.(type) {
		case map[string]any:
			if s.index >= 0 {
				return "", nil
			}
			v = node[s.key]
		case []any:
			if s.index < 0 || s.index >= len(node) {
				return "", nil
			}
			v = node[s.index]
		default:
			return "", nil
		}
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("format: key %s: the value is an object or array; a key must be a string, number or boolean", k.text)
}

// ExtractParsed is Extract for a payload its caller has parsed already: an
// HL7 v2 key is read from m (the parse of payload) without parsing the
// payload again; other formats, or a nil m, parse payload as Extract does.
func (k *KeyPath) ExtractParsed(payload []byte, m *hl7.Message) (string, error) {
	if k.format == HL7v2 && m != nil {
		return m.GetPath(k.hl7), nil
	}
	return k.Extract(payload)
}

// Key extracts the key at path from payload of format f: CompileKey and
// Extract in one call, for callers that use a path once.
func Key(f Name, payload []byte, path string) (string, error) {
	k, err := CompileKey(f, path)
	if err != nil {
		return "", err
	}
	return k.Extract(payload)
}

// Lane returns the lane of key among partitions lanes: FNV-1a (32-bit) of
// the key's bytes modulo partitions. Messages with one key always share a
// lane, and so keep their order; the function must never change, since
// queued messages were placed with it. partitions below 1 count as 1.
func Lane(key string, partitions int) int {
	if partitions < 1 {
		return 0
	}
	return int(FNV1a32(key) % uint32(partitions))
}

// FNV1a32 is the 32-bit FNV-1a hash of s.
func FNV1a32(s string) uint32 {
	const (
		offset = 2166136261
		prime  = 16777619
	)
	h := uint32(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= prime
	}
	return h
}

// parseJSONPath reads "$.a.b[0]", "a.b[0]", `$["a b"]`, "$" (the whole
// value) into steps.
func parseJSONPath(path string) ([]step, error) {
	bad := func(why string) ([]step, error) {
		return nil, fmt.Errorf("format: key %q: %s (expected a path such as \"$.patient.mrn\" or \"items[0].id\")", path, why)
	}
	s := strings.TrimSpace(path)
	if s == "" {
		return bad("the path is empty")
	}
	if s[0] == '$' {
		s = s[1:]
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			if s == "" {
				return bad("nothing after \"$.\"")
			}
		} else if s != "" && s[0] != '[' {
			return bad("\"$\" must be followed by \".\" or \"[\"")
		}
	}
	var steps []step
	first := true
	for s != "" {
		switch {
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if len(s) > 1 && (s[1] == '"' || s[1] == '\'') {
				q := s[1]
				n := strings.IndexByte(s[2:], q) // the key's length
				if n < 0 || len(s) < n+4 || s[n+3] != ']' {
					return bad("a quoted key in brackets is not closed")
				}
				key := s[2 : 2+n]
				if q == '"' {
					u, err := strconv.Unquote(`"` + key + `"`)
					if err != nil {
						return bad(fmt.Sprintf("bad quoted key %q", key))
					}
					key = u
				}
				steps = append(steps, step{key: key, index: -1})
				s = s[n+4:]
				break
			}
			if end < 0 {
				return bad("missing ]")
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil || n < 0 || strings.HasPrefix(s[1:end], "+") {
				return bad(fmt.Sprintf("%q in brackets is not an array index from 0", s[1:end]))
			}
			steps = append(steps, step{index: n})
			s = s[end+1:]
		case s[0] == '.':
			if first {
				return bad("a path cannot start with \".\"")
			}
			s = s[1:]
			if s == "" || s[0] == '.' || s[0] == '[' {
				return bad("an empty key between dots")
			}
			fallthrough
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			key := s[:end]
			if strings.ContainsAny(key, "]\"'") {
				return bad(fmt.Sprintf("key %q has a bracket or quote; use $[\"...\"]", key))
			}
			steps = append(steps, step{key: key, index: -1})
			s = s[end:]
		}
		first = false
	}
	return steps, nil
}
