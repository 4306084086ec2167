package hl7

import (
	"errors"
	"fmt"
	"strings"
)

// Name returns the segment's upper-cased name, such as "PID".
func (s *Segment) Name() string { return s.name }

// String returns the segment's text, without a segment end.
func (s *Segment) String() string {
	if s.dirty {
		s.raw = strings.Join(s.fields, string(s.d.Field))
		s.dirty = false
	}
	return s.raw
}

// Fields returns the number of the last field present (for MSH, counting
// MSH-1 and MSH-2).
func (s *Segment) Fields() int {
	n := len(s.split()) - 1
	if s.name == "MSH" {
		n++
	}
	return n
}

func (s *Segment) split() []string {
	if s.fields == nil {
		s.fields = strings.Split(s.raw, string(s.d.Field))
	}
	return s.fields
}

// index is where field n sits in split(): MSH-1 is the separator itself, so
// the MSH fields sit one place lower than other segments' fields.
func (s *Segment) index(n int) int {
	if s.name == "MSH" {
		return n - 1
	}
	return n
}

func (s *Segment) locked(p Path) bool { return s.name == "MSH" && p.Field <= 2 }

func (s *Segment) fieldRaw(n int) string {
	if s.name == "MSH" && n == 1 {
		return string(s.d.Field)
	}
	f := s.split()
	if i := s.index(n); i < len(f) {
		return f[i]
	}
	return ""
}

// read returns the raw text at p (the first repetition when p names none).
func (s *Segment) read(p Path) string {
	t := s.fieldRaw(p.Field)
	if t == "" || s.locked(p) {
		return t
	}
	d := s.d
	if strings.IndexByte(t, d.Repetition) >= 0 {
		t = pick(t, d.Repetition, max(p.Repetition, 1))
	} else if p.Repetition > 1 {
		return ""
	}
	if p.Component > 0 {
		t = pick(t, d.Component, p.Component)
		if p.Subcomponent > 0 {
			t = pick(t, d.Subcomponent, p.Subcomponent)
		}
	}
	return t
}

func (s *Segment) rawAt(p Path) string {
	if p.Component == 0 && p.Repetition == 0 {
		return s.fieldRaw(p.Field)
	}
	return s.read(p)
}

func (s *Segment) count(p Path) int {
	t := s.fieldRaw(p.Field)
	if t == "" {
		return 0
	}
	if s.locked(p) {
		return 1
	}
	return strings.Count(t, string(s.d.Repetition)) + 1
}

func (s *Segment) getAll(p Path) []string {
	n := s.count(p)
	out := make([]string, n)
	for r := 1; r <= n; r++ {
		q := p
		q.Repetition = r
		out[r-1] = Unescape(s.read(q), s.d)
	}
	return out
}

// write puts text (already encoded) at p; whole replaces the whole field.
func (s *Segment) write(p Path, text string, whole bool) error {
	if s.locked(p) {
		return ErrReadOnly
	}
	f := s.split()
	i := s.index(p.Field)
	if text == "" && i >= len(f) {
		return nil
	}
	for len(f) <= i {
		f = append(f, "")
	}
	field := f[i]
	if whole {
		field = text
	} else {
		d := s.d
		r := max(p.Repetition, 1)
		rep := pick(field, d.Repetition, r)
		if p.Component > 0 {
			comp := text
			if p.Subcomponent > 0 {
				comp = replace(pick(rep, d.Component, p.Component), d.Subcomponent, p.Subcomponent, text)
			}
			rep = replace(rep, d.Component, p.Component, comp)
		} else {
			rep = text
		}
		field = replace(field, d.Repetition, r, rep)
	}
	f[i] = field
	s.fields = f
	s.dirty = true
	return nil
}

// pick returns the n-th (1-based) piece of text split by sep, without
// splitting all of it.
func pick(text string, sep byte, n int) string {
	for ; n > 1; n-- {
		i := strings.IndexByte(text, sep)
		if i < 0 {
			return ""
		}
		text = text[i+1:]
	}
	if i := strings.IndexByte(text, sep); i >= 0 {
		return text[:i]
	}
	return text
}

// replace returns text with its n-th piece (split by sep) set to value,
// adding empty pieces up to n; an empty value drops trailing empty pieces.
func replace(text string, sep byte, n int, value string) string {
	parts := strings.Split(text, string(sep))
	for len(parts) < n {
		parts = append(parts, "")
	}
	parts[n-1] = value
	if value == "" {
		for len(parts) > 1 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
	}
	return strings.Join(parts, string(sep))
}

// checkRaw refuses raw text that would change the structure above path.
func checkRaw(text string, d Delimiters, p Path, whole bool) error {
	what := ""
	switch {
	case strings.ContainsAny(text, "\r\n"):
		what = "a segment end (CR or LF)"
	case strings.IndexByte(text, d.Field) >= 0:
		what = fmt.Sprintf("the field separator %q", d.Field)
	case !whole && strings.IndexByte(text, d.Repetition) >= 0:
		what = fmt.Sprintf("the repetition separator %q (only a whole field can hold repetitions)", d.Repetition)
	case p.Component > 0 && strings.IndexByte(text, d.Component) >= 0:
		what = fmt.Sprintf("the component separator %q", d.Component)
	case p.Subcomponent > 0 && strings.IndexByte(text, d.Subcomponent) >= 0:
		what = fmt.Sprintf("the subcomponent separator %q", d.Subcomponent)
	}
	if what != "" {
		return fmt.Errorf("hl7: raw text for %s cannot contain %s", p, what)
	}
	return nil
}

// segPath parses a path relative to s: "5.1" or "OBX-5.1".
func (s *Segment) segPath(path string) (Path, error) {
	p, err := ParsePath(path)
	if err != nil {
		return p, err
	}
	if p.Segment != "" && p.Segment != s.name {
		return p, &PathError{Path: path, Reason: fmt.Sprintf("it names %s but the segment is %s", p.Segment, s.name)}
	}
	if p.SegmentIndex != 0 {
		return p, &PathError{Path: path, Reason: "a segment's own path cannot pick a segment occurrence"}
	}
	return p, nil
}

// Get returns the value at path ("5.1", "5[2].1" or "OBX-5.1"), decoded, or
// "" when it is absent or path is invalid.
func (s *Segment) Get(path string) string {
	p, err := s.segPath(path)
	if err != nil {
		return ""
	}
	return Unescape(s.read(p), s.d)
}

// Raw returns the text at path as it stands.
func (s *Segment) Raw(path string) string {
	p, err := s.segPath(path)
	if err != nil {
		return ""
	}
	return s.rawAt(p)
}

// GetAll returns the value at path for every repetition of its field.
func (s *Segment) GetAll(path string) []string {
	p, err := s.segPath(path)
	if err != nil || p.Repetition != 0 {
		return nil
	}
	return s.getAll(p)
}

// Count returns the number of repetitions of the field at path.
func (s *Segment) Count(path string) int {
	p, err := s.segPath(path)
	if err != nil {
		return 0
	}
	return s.count(p)
}

// Set writes value at path as one literal value, escaped.
func (s *Segment) Set(path, value string) error {
	p, err := s.segPath(path)
	if err != nil {
		return err
	}
	return s.write(p, Escape(value, s.d), false)
}

// SetRaw writes HL7 text at path as it is (see Message.SetRaw).
func (s *Segment) SetRaw(path, text string) error {
	p, err := s.segPath(path)
	if err != nil {
		return err
	}
	whole := p.Component == 0 && p.Repetition == 0
	if err := checkRaw(text, s.d, p, whole); err != nil {
		return err
	}
	return s.write(p, text, whole)
}

// ErrNotInMessage is returned when a reference segment is not part of the
// message it is used with.
var ErrNotInMessage = errors.New("hl7: the segment is not in this message")

// newSegment builds a segment named name whose fields hold values, escaped.
func (m *Message) newSegment(name string, values []string) (*Segment, error) {
	if len(name) != 3 || !isAlnum(name[0]) || !isAlnum(name[1]) || !isAlnum(name[2]) {
		return nil, fmt.Errorf("hl7: a segment name has three letters or digits, such as \"ZPI\" (got %q)", name)
	}
	up := strings.ToUpper(name)
	if up == "MSH" {
		return nil, errors.New("hl7: a message has one MSH segment")
	}
	var b strings.Builder
	b.WriteString(up)
	for _, v := range values {
		b.WriteByte(m.d.Field)
		b.WriteString(Escape(v, m.d))
	}
	return &Segment{name: up, raw: b.String(), d: m.d}, nil
}

// Add appends a segment named name whose fields 1, 2, ... hold values, each
// one literal value (escaped).
func (m *Message) Add(name string, values ...string) (*Segment, error) {
	s, err := m.newSegment(name, values)
	if err != nil {
		return nil, err
	}
	m.segs = append(m.segs, s)
	return s, nil
}

// AddRaw appends a segment given as HL7 text in the message's delimiters,
// such as "ZPI|a^b|c", without a segment end.
func (m *Message) AddRaw(text string) (*Segment, error) {
	switch {
	case len(text) < 3 || !isAlnum(text[0]) || !isAlnum(text[1]) || !isAlnum(text[2]):
		return nil, fmt.Errorf("hl7: a segment starts with a three-character name, got %s", quoteStart(text))
	case len(text) > 3 && text[3] != m.d.Field:
		return nil, fmt.Errorf("hl7: segment %s is not followed by the field separator %q", text[:3], m.d.Field)
	case strings.ContainsAny(text, "\r\n"):
		return nil, errors.New("hl7: one segment cannot contain a segment end (CR or LF)")
	case strings.EqualFold(text[:3], "MSH"):
		return nil, errors.New("hl7: a message has one MSH segment")
	}
	s := &Segment{name: strings.ToUpper(text[:3]), raw: text, d: m.d}
	m.segs = append(m.segs, s)
	return s, nil
}

func (m *Message) indexOf(ref *Segment) int {
	for i, s := range m.segs {
		if s == ref {
			return i
		}
	}
	return -1
}

// InsertAfter adds a segment named name with values right after ref.
func (m *Message) InsertAfter(ref *Segment, name string, values ...string) (*Segment, error) {
	i := m.indexOf(ref)
	if i < 0 {
		return nil, ErrNotInMessage
	}
	s, err := m.newSegment(name, values)
	if err != nil {
		return nil, err
	}
	m.segs = append(m.segs[:i+1], append([]*Segment{s}, m.segs[i+1:]...)...)
	return s, nil
}

// InsertBefore adds a segment named name with values right before ref,
// which cannot be the MSH segment.
func (m *Message) InsertBefore(ref *Segment, name string, values ...string) (*Segment, error) {
	i := m.indexOf(ref)
	if i < 0 {
		return nil, ErrNotInMessage
	}
	if i == 0 {
		return nil, errors.New("hl7: nothing goes before MSH")
	}
	s, err := m.newSegment(name, values)
	if err != nil {
		return nil, err
	}
	m.segs = append(m.segs[:i], append([]*Segment{s}, m.segs[i:]...)...)
	return s, nil
}

// Remove takes s out of the message; the MSH segment cannot be removed.
func (m *Message) Remove(s *Segment) error {
	i := m.indexOf(s)
	if i < 0 {
		return ErrNotInMessage
	}
	if i == 0 {
		return errors.New("hl7: the MSH segment cannot be removed")
	}
	m.segs = append(m.segs[:i], m.segs[i+1:]...)
	return nil
}

// RemoveAll takes out every segment named name and returns how many.
func (m *Message) RemoveAll(name string) (int, error) {
	up := strings.ToUpper(name)
	if up == "MSH" {
		return 0, errors.New("hl7: the MSH segment cannot be removed")
	}
	kept := m.segs[:0]
	for _, s := range m.segs {
		if s.name != up {
			kept = append(kept, s)
		}
	}
	n := len(m.segs) - len(kept)
	clear(m.segs[len(kept):])
	m.segs = kept
	return n, nil
}

// Field returns field n's text as written (components, repetitions and
// escapes unresolved), or "" when the segment has no field n. For MSH,
// field 1 is the field separator and field 2 the encoding characters.
func (s *Segment) Field(n int) string { return s.fieldRaw(n) }
