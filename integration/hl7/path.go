package hl7

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxPosition is the largest number a path may use for a segment
// occurrence, field, repetition, component or subcomponent. No HL7 structure
// comes near it; the cap keeps a mistyped Set("PID-3000000") from building a
// segment of three million separators.
const MaxPosition = 9999

// Path points into a message: Segment[SegmentIndex]-Field[Repetition].Component.Subcomponent.
// A zero number means "not given": a zero SegmentIndex or Repetition means the
// first; a zero Component means the whole repetition; a zero Subcomponent the
// whole component.
type Path struct {
	// Segment is the upper-cased segment name, or "" in a path relative to
	// one segment ("5.1").
	Segment      string
	SegmentIndex int
	Field        int
	Repetition   int
	Component    int
	Subcomponent int
}

// PathError says why a path could not be read.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("hl7: bad path %q: %s", e.Path, e.Reason)
}

// ErrPath is matched by every *PathError (errors.Is(err, hl7.ErrPath)).
var ErrPath = errors.New("hl7: bad path")

// Is makes errors.Is(err, ErrPath) true for every path error.
func (e *PathError) Is(target error) bool { return target == ErrPath }

// ParsePath reads a path such as "PID-3", "PID-3[2].1", "OBX[2]-5.1.2", or
// a field path relative to a segment such as "5.1".
func ParsePath(s string) (Path, error) {
	var p Path
	bad := func(reason string) (Path, error) {
		return Path{}, &PathError{Path: s, Reason: reason + ` (expected SEG[n]-field[rep].component.subcomponent, such as "PID-3[2].1")`}
	}
	rest := s
	if dash := strings.IndexByte(rest, '-'); dash >= 0 {
		head := rest[:dash]
		rest = rest[dash+1:]
		name := head
		if b := strings.IndexByte(head, '['); b >= 0 {
			name = head[:b]
			n, tail, err := bracket(head[b:])
			if err != "" {
				return bad("segment occurrence: " + err)
			}
			if tail != "" {
				return bad(fmt.Sprintf("unexpected %q after the segment occurrence", tail))
			}
			p.SegmentIndex = n
		}
		if len(name) != 3 || !isAlnum(name[0]) || !isAlnum(name[1]) || !isAlnum(name[2]) {
			return bad(fmt.Sprintf("segment name %q is not three letters or digits", name))
		}
		p.Segment = strings.ToUpper(name)
	}
	n, rest, err := number(rest, "field")
	if err != "" {
		return bad(err)
	}
	p.Field = n
	if strings.HasPrefix(rest, "[") {
		var tail string
		p.Repetition, tail, err = bracket(rest)
		if err != "" {
			return bad("repetition: " + err)
		}
		rest = tail
	}
	for i, what := range []string{"component", "subcomponent"} {
		if rest == "" {
			break
		}
		if rest[0] != '.' {
			return bad(fmt.Sprintf("unexpected %q", rest))
		}
		n, rest, err = number(rest[1:], what)
		if err != "" {
			return bad(err)
		}
		if i == 0 {
			p.Component = n
		} else {
			p.Subcomponent = n
		}
	}
	if rest != "" {
		return bad(fmt.Sprintf("unexpected %q after the subcomponent", rest))
	}
	return p, nil
}

// number reads a 1-based position at the start of s.
func number(s, what string) (int, string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		if s == "" {
			return 0, "", "the " + what + " number is missing"
		}
		return 0, "", fmt.Sprintf("the %s must be a number, got %q", what, s)
	}
	if i > 5 {
		return 0, "", fmt.Sprintf("the %s %s is larger than %d", what, s[:i], MaxPosition)
	}
	n, _ := strconv.Atoi(s[:i])
	if n == 0 {
		return 0, "", "positions start at 1, not 0"
	}
	if n > MaxPosition {
		return 0, "", fmt.Sprintf("the %s %d is larger than %d", what, n, MaxPosition)
	}
	return n, s[i:], ""
}

// bracket reads "[n]" at the start of s.
func bracket(s string) (int, string, string) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, "", "missing ]"
	}
	n, tail, err := number(s[1:end], "number in brackets")
	if err != "" {
		return 0, "", err
	}
	if tail != "" {
		return 0, "", fmt.Sprintf("%q in brackets is not a number", s[1:end])
	}
	return n, s[end+1:], ""
}

// check refuses a Path built by hand with numbers ParsePath would refuse.
func (p Path) check() error {
	if p.Field < 1 {
		return &PathError{Path: p.String(), Reason: "positions start at 1, not 0"}
	}
	for _, n := range []int{p.SegmentIndex, p.Field, p.Repetition, p.Component, p.Subcomponent} {
		if n < 0 || n > MaxPosition {
			return &PathError{Path: p.String(), Reason: fmt.Sprintf("position %d is outside 1 to %d", n, MaxPosition)}
		}
	}
	if p.Subcomponent > 0 && p.Component == 0 {
		return &PathError{Path: p.String(), Reason: "a subcomponent needs a component"}
	}
	return nil
}

// String writes the path back in its shortest form.
func (p Path) String() string {
	var b strings.Builder
	if p.Segment != "" {
		b.WriteString(p.Segment)
		if p.SegmentIndex > 0 {
			fmt.Fprintf(&b, "[%d]", p.SegmentIndex)
		}
		b.WriteByte('-')
	}
	b.WriteString(strconv.Itoa(p.Field))
	if p.Repetition > 0 {
		fmt.Fprintf(&b, "[%d]", p.Repetition)
	}
	if p.Component > 0 {
		fmt.Fprintf(&b, ".%d", p.Component)
		if p.Subcomponent > 0 {
			fmt.Fprintf(&b, ".%d", p.Subcomponent)
		}
	}
	return b.String()
}
