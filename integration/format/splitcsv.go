package format

import (
	"fmt"
	"io"
)

// The states of the CSV row scanner, which follows RFC 4180 as
// encoding/csv reads it: a quote opens a quoted field only at the start of
// a field, "" inside one is a quote, and a row ends at a line end outside
// quotes.
const (
	fieldStart = iota
	unquoted
	quoted
	quoteSeen // a quote inside a quoted field: its end, or the first of ""
)

// readRow reads the next CSV row into s.line (raw, with its line end): the
// number of fields and, for a row encoding/csv would refuse, why.
func (s *Splitter) readRow() (fields int, bad string, err error) {
	s.line, s.content, s.over = s.line[:0], 0, false
	s.lstart = s.src.off
	st, fields := fieldStart, 1
	cr := -1 // the state a '\r' outside quotes was seen in, until the next byte tells whether it ends the row
	started := false
	fail := func(why string) {
		if bad == "" {
			bad = why
		}
	}
	for {
		data, err := s.src.peek()
		if err == io.EOF && started {
			term := 0
			if cr >= 0 {
				term = 1 // encoding/csv drops a '\r' before the end of the file
			}
			if st == quoted {
				fail("a quoted field is not closed before the end of the file")
			}
			s.content, s.lend = max(len(s.line)-term, 0), s.src.off
			s.over = s.over || s.content > s.max
			return fields, bad, nil
		}
		if err != nil {
			return 0, "", err
		}
		started = true
		for i, c := range data {
			if cr >= 0 {
				was := cr
				cr = -1
				if c == '\n' {
					s.add(data[:i+1])
					s.src.advance(i + 1)
					s.content, s.lend = max(len(s.line)-2, 0), s.src.off
					s.over = s.over || s.content > s.max
					return fields, bad, nil
				}
				if was == quoteSeen {
					fail("text after the closing quote of a quoted field")
				}
				st = unquoted // the '\r' was data
			}
			switch st {
			case fieldStart, unquoted:
				switch c {
				case ',':
					fields++
					st = fieldStart
					continue
				case '\r':
					cr = st
					continue
				case '\n':
					s.add(data[:i+1])
					s.src.advance(i + 1)
					s.content, s.lend = max(len(s.line)-1, 0), s.src.off
					s.over = s.over || s.content > s.max
					return fields, bad, nil
				case '"':
					if st == fieldStart {
						st = quoted
						continue
					}
					fail(`a quote inside a field that does not start with one (quote the whole field and double the quote: "a""b")`)
				}
				st = unquoted
			case quoted:
				if c == '"' {
					st = quoteSeen
				}
			case quoteSeen:
				switch c {
				case '"':
					st = quoted
				case ',':
					fields++
					st = fieldStart
				case '\r':
					cr = quoteSeen
				case '\n':
					s.add(data[:i+1])
					s.src.advance(i + 1)
					s.content, s.lend = max(len(s.line)-1, 0), s.src.off
					s.over = s.over || s.content > s.max
					return fields, bad, nil
				default:
					fail("text after the closing quote of a quoted field")
					st = unquoted
				}
			}
		}
		s.add(data)
		s.src.advance(len(data))
	}
}

// readHeader reads the first non-empty row as the header; io.EOF means
// the file has none (it is empty or blank).
func (s *Splitter) readHeader() error {
	s.skipBOM()
	for {
		_, bad, err := s.readRow()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return err
		}
		if s.content == 0 && !s.over {
			continue
		}
		if s.over {
			return &CheckError{Format: CSV, Offset: s.lstart, Reason: fmt.Sprintf("the header row is longer than the limit of %d bytes", s.max)}
		}
		if bad != "" {
			return &CheckError{Format: CSV, Offset: s.lstart, Reason: "the header row: " + bad}
		}
		return s.setHeader(append([]byte(nil), s.line...))
	}
}

func (s *Splitter) setHeader(h []byte) error {
	check := h
	if s.notUTF8 {
		check = byteRunes(h)
	}
	names, _, err := parseCSV(check)
	if err != nil {
		return fmt.Errorf("format: the CSV header row: %w", err)
	}
	s.header, s.columns = h, len(names)
	return nil
}

func (s *Splitter) nextCSV() (Record, error) {
	if s.header == nil {
		if err := s.readHeader(); err != nil {
			return Record{}, err // io.EOF for an empty file: no records
		}
	}
	for {
		fields, bad, err := s.readRow()
		if err != nil {
			return Record{}, err
		}
		if s.content == 0 && !s.over {
			continue // an empty line
		}
		fail := func(reason string, tooLarge bool) (Record, error) {
			return Record{}, &RecordError{Start: s.lstart, End: s.lend, Reason: reason, TooLarge: tooLarge}
		}
		switch {
		case s.over || len(s.header)+len(s.line) > s.max:
			return fail(fmt.Sprintf("the row and its header are larger than the limit of %d bytes", s.max), true)
		case bad != "":
			return fail(bad, false)
		case fields != s.columns:
			return fail(fmt.Sprintf("the row has %d fields but the header has %d", fields, s.columns), false)
		}
		if i := invalidUTF8(s.line); i >= 0 && !s.notUTF8 {
			return fail(fmt.Sprintf("not valid UTF-8 at byte %d", s.lstart+int64(i)), false)
		}
		data := make([]byte, 0, len(s.header)+len(s.line))
		data = append(append(data, s.header...), s.line...)
		return Record{Data: data, Start: s.lstart, End: s.lend}, nil
	}
}

// byteRunes returns b with every byte of 0x80 and above written as the
// rune of that number (b read as Latin-1): valid UTF-8 that keeps b's CSV
// structure and tells apart every two names b tells apart, so a header in
// another character set can be checked before the caller decodes it.
func byteRunes(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/4)
	for _, c := range b {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = append(out, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return out
}
