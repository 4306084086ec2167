package hl7

import (
	"fmt"
	"strings"
)

// Delimiters are a message's separators, read from MSH-1 and MSH-2.
type Delimiters struct {
	Field        byte
	Component    byte
	Repetition   byte
	Escape       byte
	Subcomponent byte
	// Truncation is the v2.7 truncation character, or 0 when MSH-2 has only
	// the four classic encoding characters.
	Truncation byte
}

// DefaultDelimiters are the delimiters nearly every sender uses: |^~\&.
func DefaultDelimiters() Delimiters {
	return Delimiters{Field: '|', Component: '^', Repetition: '~', Escape: '\\', Subcomponent: '&'}
}

// Encoding returns the MSH-2 text for d, such as `^~\&`.
func (d Delimiters) Encoding() string {
	b := []byte{d.Component, d.Repetition, d.Escape, d.Subcomponent}
	if d.Truncation != 0 {
		b = append(b, d.Truncation)
	}
	return string(b)
}

// Validate reports whether d could stand in an MSH segment: every
// delimiter a distinct ASCII punctuation character.
func (d Delimiters) Validate() error {
	all := string(d.Field) + d.Encoding()
	for i := 0; i < len(all); i++ {
		if !isDelimiter(all[i]) {
			return fmt.Errorf("hl7: delimiter %q is not an ASCII punctuation character", all[i])
		}
		if strings.IndexByte(all[:i], all[i]) >= 0 {
			return fmt.Errorf("hl7: the delimiters %q repeat the character %q", all, all[i])
		}
	}
	return nil
}

// isDelimiter is stricter than the standard, which allows any character the
// message does not otherwise use: letters, digits, spaces and segment ends
// as delimiters are always a sign that the input is not HL7 at all.
func isDelimiter(c byte) bool {
	return c > ' ' && c < 0x7f && !isAlnum(c)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// readDelimiters reads MSH-1 and MSH-2 from text, which starts with "MSH".
func readDelimiters(text string, base int) (Delimiters, error) {
	var d Delimiters
	if len(text) < 8 {
		return d, &ParseError{Segment: 1, Offset: base, Reason: fmt.Sprintf("the MSH segment is too short (%d bytes): it needs at least MSH, the field separator and 4 encoding characters", len(text))}
	}
	fs := text[3]
	if !isDelimiter(fs) {
		return d, &ParseError{Segment: 1, Offset: base + 3, Reason: fmt.Sprintf("MSH-1 (the field separator) must be an ASCII punctuation character, got %q", fs)}
	}
	end := len(text)
	if i := strings.IndexByte(text[4:], fs); i >= 0 {
		end = 4 + i
	}
	if i := strings.IndexAny(text[4:end], "\r\n"); i >= 0 {
		end = 4 + i
	}
	enc := text[4:end]
	if len(enc) < 4 || len(enc) > 5 {
		return d, &ParseError{Segment: 1, Offset: base + 4, Reason: fmt.Sprintf("MSH-2 (the encoding characters) must have 4 or 5 characters, got %q", enc)}
	}
	d = Delimiters{Field: fs, Component: enc[0], Repetition: enc[1], Escape: enc[2], Subcomponent: enc[3]}
	if len(enc) == 5 {
		d.Truncation = enc[4]
	}
	if err := d.Validate(); err != nil {
		return Delimiters{}, &ParseError{Segment: 1, Offset: base + 3, Reason: "bad delimiters in MSH-1 and MSH-2: " + strings.TrimPrefix(err.Error(), "hl7: ")}
	}
	return d, nil
}
