package hl7

import (
	"strings"
	"unicode/utf8"
)

// Escape encodes a literal value so that none of its characters can be read
// as a delimiter. Segment ends inside the value become \X0D\ and \X0A\, so a
// multi-line value cannot break the message into segments.
func Escape(value string, d Delimiters) string {
	if !needsEscape(value, d) {
		return value
	}
	var b strings.Builder
	b.Grow(len(value) + 8)
	for i := 0; i < len(value); i++ {
		c := value[i]
		var seq string
		switch {
		case c == d.Escape:
			seq = "E"
		case c == d.Field:
			seq = "F"
		case c == d.Component:
			seq = "S"
		case c == d.Subcomponent:
			seq = "T"
		case c == d.Repetition:
			seq = "R"
		case d.Truncation != 0 && c == d.Truncation:
			seq = "P"
		case c == '\r':
			seq = "X0D"
		case c == '\n':
			seq = "X0A"
		default:
			b.WriteByte(c)
			continue
		}
		b.WriteByte(d.Escape)
		b.WriteString(seq)
		b.WriteByte(d.Escape)
	}
	return b.String()
}

func needsEscape(value string, d Delimiters) bool {
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case d.Escape, d.Field, d.Component, d.Subcomponent, d.Repetition, '\r', '\n':
			return true
		default:
			if d.Truncation != 0 && c == d.Truncation {
				return true
			}
		}
	}
	return false
}

// Unescape decodes the escape sequences of text: \F\ \S\ \T\ \R\ \E\, \P\
// (when the message has a truncation character) and \Xhh..\ (hex bytes,
// read as UTF-8 when they are valid UTF-8 and as Latin-1 otherwise). Other
// sequences, such as the formatting commands \.br\ and \H\ or site-defined
// \Z..\, are kept as they stand, and so is an escape character without a
// closing one.
func Unescape(text string, d Delimiters) string {
	esc := d.Escape
	first := strings.IndexByte(text, esc)
	if first < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	b.WriteString(text[:first])
	i := first
	for i < len(text) {
		if text[i] != esc {
			j := strings.IndexByte(text[i:], esc)
			if j < 0 {
				b.WriteString(text[i:])
				break
			}
			b.WriteString(text[i : i+j])
			i += j
			continue
		}
		j := strings.IndexByte(text[i+1:], esc)
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		seq := text[i+1 : i+1+j]
		next := i + 2 + j
		if rep, ok := decodeSequence(seq, d); ok {
			b.WriteString(rep)
		} else {
			b.WriteString(text[i:next])
		}
		i = next
	}
	return b.String()
}

func decodeSequence(seq string, d Delimiters) (string, bool) {
	switch seq {
	case "F":
		return string(d.Field), true
	case "S":
		return string(d.Component), true
	case "T":
		return string(d.Subcomponent), true
	case "R":
		return string(d.Repetition), true
	case "E":
		return string(d.Escape), true
	case "P":
		if d.Truncation != 0 {
			return string(d.Truncation), true
		}
		return "", false
	}
	if len(seq) > 1 && (seq[0] == 'X' || seq[0] == 'x') {
		return decodeHex(seq[1:])
	}
	return "", false
}

func decodeHex(hex string) (string, bool) {
	if len(hex)%2 != 0 {
		return "", false
	}
	out := make([]byte, len(hex)/2)
	for i := range out {
		hi, ok1 := hexDigit(hex[2*i])
		lo, ok2 := hexDigit(hex[2*i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		out[i] = hi<<4 | lo
	}
	if utf8.Valid(out) {
		return string(out), true
	}
	// Latin-1 was the common 8-bit character set of v2 systems; reading the
	// bytes as it keeps the text readable instead of inventing U+FFFD.
	r := make([]rune, len(out))
	for i, c := range out {
		r[i] = rune(c)
	}
	return string(r), true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
