package hl7

import (
	"errors"
	"fmt"
	"strings"
)

// ParseError says why input is not an HL7 message and where.
type ParseError struct {
	// Segment is the 1-based number of the segment at fault (counting the
	// segments read so far), or 0 when the input as a whole is at fault.
	Segment int
	// Offset is the byte offset in the input where the problem starts.
	Offset int
	Reason string
}

func (e *ParseError) Error() string {
	if e.Segment > 0 {
		return fmt.Sprintf("hl7: segment %d (byte %d): %s", e.Segment, e.Offset, e.Reason)
	}
	return fmt.Sprintf("hl7: byte %d: %s", e.Offset, e.Reason)
}

// ErrReadOnly is returned by a write to MSH-1 or MSH-2, which hold the
// message's delimiters.
var ErrReadOnly = errors.New("hl7: MSH-1 and MSH-2 hold the message's delimiters and cannot be changed")

// Message is a parsed HL7 v2 message. It is not safe for concurrent use
// when one of the goroutines writes to it.
type Message struct {
	d        Delimiters
	segs     []*Segment
	trailing bool
}

// Segment is one segment of a Message. Its fields are split from the
// original text only when one is read.
type Segment struct {
	name   string
	raw    string   // the segment's text; valid unless dirty
	fields []string // split on first use: [name, field 1 (or MSH-2), ...]
	dirty  bool
	d      Delimiters
}

const bom = "\xef\xbb\xbf"

// Parse reads an HL7 v2 message. CR, LF and CRLF segment ends are all
// accepted and empty lines skipped. The input is copied once; the message
// does not refer to raw afterwards.
func Parse(raw []byte) (*Message, error) {
	return ParseString(string(raw))
}

// ParseString is Parse for a message already held as a string.
func ParseString(text string) (*Message, error) {
	base := 0
	if strings.HasPrefix(text, bom) {
		text = text[len(bom):]
		base = len(bom)
	}
	if !strings.HasPrefix(text, "MSH") {
		return nil, &ParseError{Offset: base, Reason: fmt.Sprintf("an HL7 message must start with an MSH segment; the input starts with %s", quoteStart(text))}
	}
	d, err := readDelimiters(text, base)
	if err != nil {
		return nil, err
	}
	m := &Message{d: d}
	for pos := 0; pos < len(text); {
		end := strings.IndexAny(text[pos:], "\r\n")
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += pos
			next = end + 1
			if text[end] == '\r' && next < len(text) && text[next] == '\n' {
				next++
			}
		}
		line := text[pos:end]
		if line == "" {
			m.trailing = true
			pos = next
			continue
		}
		m.trailing = end < len(text)
		n := len(m.segs) + 1
		if len(line) < 3 || !isAlnum(line[0]) || !isAlnum(line[1]) || !isAlnum(line[2]) {
			return nil, &ParseError{Segment: n, Offset: base + pos, Reason: fmt.Sprintf("a segment must start with a three-character name of letters or digits, got %s", quoteStart(line))}
		}
		if len(line) > 3 && line[3] != d.Field {
			return nil, &ParseError{Segment: n, Offset: base + pos + 3, Reason: fmt.Sprintf("segment %s is not followed by the field separator %q (got %q)", line[:3], d.Field, line[3])}
		}
		name := strings.ToUpper(line[:3])
		if name == "MSH" && len(m.segs) > 0 {
			return nil, &ParseError{Segment: n, Offset: base + pos, Reason: "a second MSH segment: a message has one (split a file or batch of messages first)"}
		}
		m.segs = append(m.segs, &Segment{name: name, raw: line, d: d})
		pos = next
	}
	return m, nil
}

// quoteStart shows the first bytes of text for an error message.
func quoteStart(text string) string {
	if text == "" {
		return "nothing (the input is empty)"
	}
	if len(text) > 24 {
		return fmt.Sprintf("%q...", text[:24])
	}
	return fmt.Sprintf("%q", text)
}

// Delimiters returns the message's separators.
func (m *Message) Delimiters() Delimiters { return m.d }

// Segments returns the message's segments named name (case-insensitive), or
// all of them when name is "". The slice is a copy; the segments are not.
func (m *Message) Segments(name string) []*Segment {
	if name == "" {
		return append([]*Segment(nil), m.segs...)
	}
	up := strings.ToUpper(name)
	var out []*Segment
	for _, s := range m.segs {
		if s.name == up {
			out = append(out, s)
		}
	}
	return out
}

// Segment returns the n-th (1-based) segment named name, or nil.
func (m *Message) Segment(name string, n int) *Segment {
	up := strings.ToUpper(name)
	seen := 0
	for _, s := range m.segs {
		if s.name == up {
			seen++
			if seen == n {
				return s
			}
		}
	}
	return nil
}

func (m *Message) find(p Path, create bool) (*Segment, error) {
	if p.Segment == "" {
		return nil, &PathError{Path: p.String(), Reason: `a message path must start with a segment name, such as "PID-3"`}
	}
	want := max(p.SegmentIndex, 1)
	seen := 0
	for _, s := range m.segs {
		if s.name == p.Segment {
			seen++
			if seen == want {
				return s, nil
			}
		}
	}
	if !create {
		return nil, nil
	}
	if p.Segment == "MSH" {
		return nil, errors.New("hl7: a message has one MSH segment")
	}
	if seen+1 < want {
		return nil, fmt.Errorf("hl7: there are %d %s segments, so %s[%d] cannot be created", seen, p.Segment, p.Segment, want)
	}
	s := &Segment{name: p.Segment, raw: p.Segment, d: m.d}
	m.segs = append(m.segs, s)
	return s, nil
}

// Get returns the value at path, escape sequences decoded, or "" when it is
// absent or path is not a valid path (use ParsePath to tell them apart). A
// path without a repetition reads the first repetition; a path to a field
// or repetition returns its components with their separators.
func (m *Message) Get(path string) string {
	p, err := ParsePath(path)
	if err != nil {
		return ""
	}
	return m.GetPath(p)
}

// GetPath is Get for a parsed path, for callers that read the same path from
// many messages.
func (m *Message) GetPath(p Path) string {
	if p.check() != nil {
		return ""
	}
	s, err := m.find(p, false)
	if s == nil || err != nil {
		return ""
	}
	return Unescape(s.read(p), m.d)
}

// Raw returns the text at path as it stands in the message, escape sequences
// and all; a field path without a repetition gives every repetition.
func (m *Message) Raw(path string) string {
	p, err := ParsePath(path)
	if err != nil {
		return ""
	}
	s, _ := m.find(p, false)
	if s == nil {
		return ""
	}
	return s.rawAt(p)
}

// GetAll returns the value at path for every repetition of its field.
func (m *Message) GetAll(path string) []string {
	p, err := ParsePath(path)
	if err != nil || p.Repetition != 0 {
		return nil
	}
	s, _ := m.find(p, false)
	if s == nil {
		return nil
	}
	return s.getAll(p)
}

// Count returns the number of segments named what when what is a segment
// name ("OBX"), else the number of repetitions of the field at path what
// ("PID-3"); 0 for an invalid path.
func (m *Message) Count(what string) int {
	if len(what) == 3 && isAlnum(what[0]) && isAlnum(what[1]) && isAlnum(what[2]) {
		return len(m.Segments(what))
	}
	p, err := ParsePath(what)
	if err != nil {
		return 0
	}
	s, _ := m.find(p, false)
	if s == nil {
		return 0
	}
	return s.count(p)
}

// Set writes value at path as one literal value (escaping any delimiter in
// it), adding the segment at the end of the message, and the fields,
// repetitions and components up to path, as needed. Setting "" removes
// trailing empty components and repetitions and never creates a segment.
func (m *Message) Set(path, value string) error {
	p, err := ParsePath(path)
	if err != nil {
		return err
	}
	return m.SetPath(p, value)
}

// SetPath is Set for a parsed path.
func (m *Message) SetPath(p Path, value string) error {
	if err := p.check(); err != nil {
		return err
	}
	text := Escape(value, m.d)
	s, err := m.find(p, text != "")
	if err != nil || s == nil {
		return err
	}
	return s.write(p, text, false)
}

// SetRaw writes HL7 text at path as it is, so that it can carry
// components ("a^b") or escape sequences. A field path without a repetition
// replaces every repetition. The text may not contain a segment end, the
// field separator, nor the separators of the levels above path.
func (m *Message) SetRaw(path, text string) error {
	p, err := ParsePath(path)
	if err != nil {
		return err
	}
	whole := p.Component == 0 && p.Repetition == 0
	if err := checkRaw(text, m.d, p, whole); err != nil {
		return err
	}
	s, err := m.find(p, text != "")
	if err != nil || s == nil {
		return err
	}
	return s.write(p, text, whole)
}

// Type returns MSH-9.1 and MSH-9.2 joined by the component separator,
// such as "ADT^A01".
func (m *Message) Type() string {
	t, e := m.Get("MSH-9.1"), m.Get("MSH-9.2")
	if e == "" {
		return t
	}
	return t + string(m.d.Component) + e
}

// ControlID returns MSH-10, the message control ID.
func (m *Message) ControlID() string { return m.Get("MSH-10") }

// Version returns MSH-12.1, the HL7 version such as "2.5.1".
func (m *Message) Version() string { return m.Get("MSH-12.1") }

// String serialises the message with segments ended by CR.
func (m *Message) String() string { return string(m.AppendTo(nil, "\r")) }

// Bytes serialises the message with segments ended by CR.
func (m *Message) Bytes() []byte { return m.AppendTo(nil, "\r") }

// AppendTo appends the message to dst with segments ended by eol (normally
// "\r"); the last segment ends with eol only if the parsed input's did, or
// the message was built with one.
func (m *Message) AppendTo(dst []byte, eol string) []byte {
	for i, s := range m.segs {
		if i > 0 {
			dst = append(dst, eol...)
		}
		dst = append(dst, s.String()...)
	}
	if m.trailing {
		dst = append(dst, eol...)
	}
	return dst
}

// SetTrailing sets whether the last segment is followed by a segment end.
func (m *Message) SetTrailing(on bool) { m.trailing = on }
