// Package format knows the message formats an interface reads and writes
// (hl7v2, json, csv and text): their names, whether a body is of a format,
// how a file of many records is split into messages, and how an ordering
// or dedupe key is read from a message.
//
// Everything here is pure: bytes in, answers out, no database and no
// engine state, so that a source (MLLP, HTTP, file), a destination and
// `ductus validate` all give the same answer for the same input.
package format

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ductus/ductus/integration/hl7"
)

// Name is a message format.
type Name string

// The formats.
const (
	HL7v2 Name = "hl7v2"
	JSON  Name = "json"
	CSV   Name = "csv"
	Text  Name = "text"
)

// Names returns every format, in the order the documentation lists them.
func Names() []Name { return []Name{HL7v2, JSON, CSV, Text} }

// ParseName checks a format name as written in a configuration file.
// Names are exact and lower-case; a near miss ("HL7", "hl7") gets a hint.
func ParseName(s string) (Name, error) {
	switch n := Name(s); n {
	case HL7v2, JSON, CSV, Text:
		return n, nil
	}
	hint := ""
	switch low := strings.ToLower(strings.TrimSpace(s)); low {
	case "hl7", "hl7v2", "hl7 v2", "hl7-v2", "v2", "er7":
		hint = ` (did you mean "hl7v2"?)`
	case "json", "csv", "text":
		hint = fmt.Sprintf(" (did you mean %q?)", low)
	case "txt", "plain", "string":
		hint = ` (did you mean "text"?)`
	}
	if s == "" {
		return "", errors.New("format: the format is missing (want hl7v2, json, csv or text)")
	}
	return "", fmt.Errorf("format: unknown format %q%s (want hl7v2, json, csv or text)", s, hint)
}

// ErrWrongFormat is matched (errors.Is) by every *CheckError.
var ErrWrongFormat = errors.New("format: the body is not of the expected format")

// CheckError says why a body is not of its format (an HTTP source answers
// it with 415, a file source leaves the file with it).
type CheckError struct {
	Format Name
	// Offset is the byte offset of the problem, or -1 when unknown.
	Offset int64
	Reason string
	Err    error // the underlying parser's error, if any
}

func (e *CheckError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("format: not valid %s: byte %d: %s", e.Format, e.Offset, e.Reason)
	}
	return fmt.Sprintf("format: not valid %s: %s", e.Format, e.Reason)
}

// Unwrap returns the underlying parser's error.
func (e *CheckError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrWrongFormat) true.
func (e *CheckError) Is(target error) bool { return target == ErrWrongFormat }

// Check reports whether body is of format f: HL7 must parse, JSON must be
// one valid JSON value in valid UTF-8, CSV must be valid UTF-8 with a header row (unique,
// non-empty names) and every row as wide as the header, text must be valid
// UTF-8.
func Check(f Name, body []byte) error {
	switch f {
	case HL7v2:
		if _, err := hl7.Parse(body); err != nil {
			var pe *hl7.ParseError
			off := int64(-1)
			reason := err.Error()
			if errors.As(err, &pe) {
				off, reason = int64(pe.Offset), strings.TrimPrefix(pe.Error(), "hl7: ")
			}
			return &CheckError{Format: f, Offset: off, Reason: reason, Err: err}
		}
		return nil
	case JSON:
		return checkJSON(body)
	case CSV:
		_, err := ReadCSV(body)
		return err
	case Text:
		if i := invalidUTF8(body); i >= 0 {
			return &CheckError{Format: f, Offset: int64(i), Reason: "not valid UTF-8"}
		}
		return nil
	}
	_, err := ParseName(string(f))
	return err
}

func checkJSON(body []byte) error {
	// JSON text is UTF-8 (RFC 8259), and encoding/json would quietly turn a
	// bad byte inside a string into U+FFFD, so a transform would see (and
	// deliver) text the sender never sent: refuse it with its offset.
	if i := invalidUTF8(body); i >= 0 {
		return &CheckError{Format: JSON, Offset: int64(i), Reason: "not valid UTF-8"}
	}
	if json.Valid(body) {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return &CheckError{Format: JSON, Offset: -1, Reason: "the body is empty"}
	}
	d := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	err := d.Decode(&v)
	if err == nil {
		off := d.InputOffset()
		if _, err2 := d.Token(); err2 == io.EOF {
			// Valid JSON that json.Valid refused cannot happen; be safe.
			return &CheckError{Format: JSON, Offset: -1, Reason: "not valid JSON"}
		}
		return &CheckError{Format: JSON, Offset: off, Reason: "more data after the JSON value"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &CheckError{Format: JSON, Offset: se.Offset, Reason: se.Error(), Err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &CheckError{Format: JSON, Offset: int64(len(body)), Reason: "the JSON value is cut short", Err: err}
	}
	return &CheckError{Format: JSON, Offset: -1, Reason: err.Error(), Err: err}
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8,
// or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

const bom = "\xef\xbb\xbf"

// Row is one CSV row keyed by the header, in header order.
type Row struct {
	Header []string
	Values []string
}

// Get returns the value of column name.
func (r Row) Get(name string) (string, bool) {
	for i, h := range r.Header {
		if h == name {
			return r.Values[i], true
		}
	}
	return "", false
}

// Map returns the row as a map from column name to value.
func (r Row) Map() map[string]string {
	m := make(map[string]string, len(r.Header))
	for i, h := range r.Header {
		m[h] = r.Values[i]
	}
	return m
}

// MarshalJSON writes the row as a JSON object whose keys keep the header's
// order and whose values are strings.
func (r Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, h := range r.Header {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(h)
		v, _ := json.Marshal(r.Values[i])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ReadCSV reads a CSV body: a header row, then records. It is what the
// file splitter's records and an HTTP source's CSV bodies are read with.
// A UTF-8 byte order mark before the header is ignored; empty lines are
// skipped; quoted fields may hold commas, quotes ("") and line ends.
func ReadCSV(body []byte) ([]Row, error) {
	_, rows, err := parseCSV(body)
	return rows, err
}

// parseCSV reads a CSV body and returns its header too, which a body
// without rows has all the same.
func parseCSV(body []byte) ([]string, []Row, error) {
	if i := invalidUTF8(body); i >= 0 {
		return nil, nil, &CheckError{Format: CSV, Offset: int64(i), Reason: "not valid UTF-8"}
	}
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(body, []byte(bom))))
	cr.FieldsPerRecord = 0
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, &CheckError{Format: CSV, Offset: -1, Reason: "there is no header row (the body is empty)"}
	}
	if err != nil {
		return nil, nil, csvError(err)
	}
	if err := checkHeader(header); err != nil {
		return nil, nil, err
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return header, rows, nil
		}
		if err != nil {
			return nil, nil, csvError(err)
		}
		rows = append(rows, Row{Header: header, Values: rec})
	}
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		reason := fmt.Sprintf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			reason = fmt.Sprintf("line %d: the row does not have as many fields as the header", pe.Line)
		}
		return &CheckError{Format: CSV, Offset: -1, Reason: reason, Err: err}
	}
	return &CheckError{Format: CSV, Offset: -1, Reason: err.Error(), Err: err}
}

func checkHeader(header []string) error {
	seen := make(map[string]int, len(header))
	for i, h := range header {
		if h == "" {
			return &CheckError{Format: CSV, Offset: -1, Reason: fmt.Sprintf("header column %d has no name", i+1)}
		}
		if j, ok := seen[h]; ok {
			return &CheckError{Format: CSV, Offset: -1, Reason: fmt.Sprintf("header columns %d and %d are both named %q", j+1, i+1, h)}
		}
		seen[h] = i
	}
	return nil
}
