package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// SplitKind is how a file is cut into records.
type SplitKind string

// The ways to split a file.
const (
	// SplitHL7 gives one record per message: from an MSH segment up to the
	// next MSH (segments end in CR, LF or CRLF). Batch envelope segments
	// (FHS, BHS, BTS, FTS) end the message before them and are dropped.
	SplitHL7 SplitKind = "hl7"
	// SplitCSV gives one record per row, each with the header row in front,
	// so that every record is a CSV body of its own. Quoted fields may hold
	// line ends.
	SplitCSV SplitKind = "csv"
	// SplitLines gives one record per non-blank line (JSON lines, text),
	// without its line end (CR, LF or CRLF).
	SplitLines SplitKind = "lines"
)

// SplitKindOf returns how files of format f are split into records.
func SplitKindOf(f Name) (SplitKind, error) {
	switch f {
	case HL7v2:
		return SplitHL7, nil
	case CSV:
		return SplitCSV, nil
	case JSON, Text:
		return SplitLines, nil
	}
	_, err := ParseName(string(f))
	return "", err
}

// Defaults for SplitOptions.
const (
	DefaultSplitBuffer = 256 << 10
	DefaultMaxRecord   = 16 << 20
)

// SplitOptions tune a Splitter. The zero value uses the defaults.
type SplitOptions struct {
	// BufferSize is the read buffer (default 256 KiB, at least 16 bytes).
	// Memory in use is the buffer plus the record being built, never the
	// whole file.
	BufferSize int
	// MaxRecord is the largest record (default 16 MiB); a larger one is a
	// *RecordError and is skipped.
	MaxRecord int
	// Header is the CSV header row, needed to resume a CSV file at an
	// offset past it: from Splitter.Header of an earlier run, or
	// ReadCSVHeader on the file. Only for SplitCSV with a start offset > 0.
	Header []byte
	// NotUTF8 says the file is in another character set, which the caller
	// decodes (and checks) record by record: CSV rows are then cut without
	// the UTF-8 check. Cutting stays right, because every set the engine
	// reads (integration/charset) keeps ASCII's bytes and never uses a
	// delimiter, quote or line end byte inside a multi-byte character.
	NotUTF8 bool
}

// Record is one record of a file, with where it lies in the file.
type Record struct {
	// Data is the record: for HL7 the bytes of the file from Start to End;
	// for CSV the header row followed by those bytes; for lines the line
	// without its line end.
	Data []byte
	// Start and End are byte offsets in the file: the record's bytes are
	// [Start, End), End being past its line end. Reading from End resumes
	// with the next record.
	Start, End int64
}

// ErrRecord is matched (errors.Is) by every *RecordError.
var ErrRecord = errors.New("format: bad record")

// RecordError is one record that cannot be used: too large, a CSV row
// whose fields do not match the header, HL7 lines outside any message.
// Next may be called again: it carries on after the record. Other errors
// from Next are final.
type RecordError struct {
	Start, End int64
	Reason     string
	TooLarge   bool
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("format: the record at bytes %d-%d: %s", e.Start, e.End, e.Reason)
}

// Is makes errors.Is(err, ErrRecord) true.
func (e *RecordError) Is(target error) bool { return target == ErrRecord }

// Splitter cuts a stream into records. It is not safe for concurrent use.
type Splitter struct {
	kind SplitKind
	max  int
	src  source

	// the line or row just read: raw bytes including its end (up to max)
	line    []byte
	content int // length of line without its end
	lstart  int64
	lend    int64
	over    bool
	pending bool // line is read but not yet used (an MSH starting the next record)
	bomDone bool

	header  []byte
	columns int
	fatal   error
	notUTF8 bool // SplitOptions.NotUTF8
}

// NewSplitter returns a Splitter reading r, which is positioned at byte
// start of the file (0, or the End of the last record committed). Offsets
// in records count from the file's beginning. A UTF-8 byte order mark at
// offset 0 is skipped.
func NewSplitter(r io.Reader, kind SplitKind, start int64, opts SplitOptions) (*Splitter, error) {
	switch kind {
	case SplitHL7, SplitCSV, SplitLines:
	default:
		return nil, fmt.Errorf("format: unknown split kind %q (want hl7, csv or lines)", kind)
	}
	if start < 0 {
		return nil, fmt.Errorf("format: a negative start offset %d", start)
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultSplitBuffer
	}
	opts.BufferSize = max(opts.BufferSize, 16)
	if opts.MaxRecord <= 0 {
		opts.MaxRecord = DefaultMaxRecord
	}
	s := &Splitter{kind: kind, max: opts.MaxRecord, src: source{r: r, buf: make([]byte, opts.BufferSize), off: start}, notUTF8: opts.NotUTF8}
	switch {
	case opts.Header != nil && (kind != SplitCSV || start == 0):
		return nil, errors.New("format: a header is only given to resume a CSV file at an offset past it")
	case kind == SplitCSV && start > 0 && opts.Header == nil:
		return nil, errors.New("format: resuming a CSV file needs its header row (SplitOptions.Header; see ReadCSVHeader)")
	case opts.Header != nil:
		h := append([]byte(nil), opts.Header...)
		if !bytes.HasSuffix(h, []byte("\n")) {
			h = append(h, '\n')
		}
		if err := s.setHeader(h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Header returns the CSV header row (with its line end) once it is known:
// after the first Next of a file read from its start, or as given.
func (s *Splitter) Header() []byte { return s.header }

// ReadCSVHeader reads the header row of a CSV file from its start, for
// resuming the file later at a saved offset.
func ReadCSVHeader(r io.Reader, opts SplitOptions) ([]byte, error) {
	opts.Header = nil
	s, err := NewSplitter(r, SplitCSV, 0, opts)
	if err != nil {
		return nil, err
	}
	if err := s.readHeader(); err == io.EOF {
		return nil, &CheckError{Format: CSV, Offset: -1, Reason: "there is no header row (the file is empty)"}
	} else if err != nil {
		return nil, err
	}
	return s.header, nil
}

// Next returns the next record, or io.EOF after the last one.
func (s *Splitter) Next() (Record, error) {
	if s.fatal != nil {
		return Record{}, s.fatal
	}
	s.skipBOM()
	var rec Record
	var err error
	switch s.kind {
	case SplitHL7:
		rec, err = s.nextHL7()
	case SplitCSV:
		rec, err = s.nextCSV()
	default:
		rec, err = s.nextLine()
	}
	if err != nil && err != io.EOF && !errors.Is(err, ErrRecord) {
		s.fatal = err
	}
	return rec, err
}

// skipBOM steps over a UTF-8 byte order mark at the start of the file, so
// that it is neither part of the first record nor read as data.
func (s *Splitter) skipBOM() {
	if s.bomDone {
		return
	}
	s.bomDone = true
	if s.src.off != 0 {
		return
	}
	s.src.fillTo(len(bom))
	if bytes.HasPrefix(s.src.buf[s.src.pos:s.src.n], []byte(bom)) {
		s.src.advance(len(bom))
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

func (s *Splitter) nextLine() (Record, error) {
	for {
		if err := s.readLine(); err != nil {
			return Record{}, err
		}
		text := s.line[:s.content]
		if isBlank(text) && !s.over {
			continue
		}
		if s.over {
			return Record{}, &RecordError{Start: s.lstart, End: s.lend, Reason: fmt.Sprintf("the line is longer than the limit of %d bytes", s.max), TooLarge: true}
		}
		return Record{Data: append([]byte(nil), text...), Start: s.lstart, End: s.lend}, nil
	}
}

type hl7Line int

const (
	hl7Blank hl7Line = iota
	hl7Header
	hl7Batch
	hl7Segment
)

func classifyHL7(text []byte) hl7Line {
	if isBlank(text) {
		return hl7Blank
	}
	if len(text) >= 4 && !isAlnum(text[3]) && text[3] > ' ' && text[3] < 0x7f {
		switch string(text[:3]) {
		case "MSH":
			return hl7Header
		case "FHS", "BHS", "BTS", "FTS":
			return hl7Batch
		}
	}
	if len(text) == 3 {
		switch string(text) {
		case "BTS", "FTS":
			return hl7Batch
		}
	}
	return hl7Segment
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func (s *Splitter) nextHL7() (Record, error) {
	var data []byte
	start, keepEnd, keepLen := int64(-1), int64(0), 0
	over := false
	junkStart, junkEnd := int64(-1), int64(0)
	finish := func() (Record, error) {
		if over {
			return Record{}, &RecordError{Start: start, End: keepEnd, Reason: fmt.Sprintf("the message is larger than the limit of %d bytes", s.max), TooLarge: true}
		}
		return Record{Data: data[:keepLen], Start: start, End: keepEnd}, nil
	}
	junk := func() error {
		return &RecordError{Start: junkStart, End: junkEnd, Reason: "lines outside any message (a message starts with an MSH segment)"}
	}
	for {
		if !s.pending {
			if err := s.readLine(); err == io.EOF {
				switch {
				case junkStart >= 0:
					return Record{}, junk()
				case start >= 0:
					return finish()
				}
				return Record{}, io.EOF
			} else if err != nil {
				return Record{}, err
			}
		}
		s.pending = false
		kind := classifyHL7(s.line[:s.content])
		switch {
		case kind == hl7Blank:
			if start >= 0 && !over {
				data = append(data, s.line...)
			}
			continue
		case kind == hl7Segment && start < 0:
			if junkStart < 0 {
				junkStart = s.lstart
			}
			junkEnd = s.lend
			continue
		case junkStart >= 0:
			s.pending = true
			return Record{}, junk()
		case kind == hl7Batch:
			if start >= 0 {
				return finish()
			}
			continue
		case kind == hl7Header && start >= 0:
			s.pending = true
			return finish()
		case kind == hl7Header:
			start = s.lstart
		}
		// The line belongs to the message.
		if over || s.over || len(data)+len(s.line) > s.max {
			over = true
		} else {
			data = append(data, s.line...)
			keepLen = len(data)
		}
		keepEnd = s.lend
	}
}

// readLine reads the next line (CR, LF or CRLF) into s.line.
func (s *Splitter) readLine() error {
	s.line, s.content, s.over = s.line[:0], 0, false
	s.lstart = s.src.off
	started := false
	for {
		data, err := s.src.peek()
		if err != nil {
			if err == io.EOF && started {
				s.content, s.lend = len(s.line), s.src.off
				s.over = s.over || s.content > s.max
				return nil
			}
			return err
		}
		started = true
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			s.add(data)
			s.src.advance(len(data))
			continue
		}
		s.add(data[:i])
		s.content = len(s.line)
		s.add(data[i : i+1])
		s.src.advance(i + 1)
		if data[i] == '\r' {
			if next, err := s.src.peek(); err == nil && next[0] == '\n' {
				s.add(next[:1])
				s.src.advance(1)
			} else if err != nil && err != io.EOF {
				return err
			}
		}
		s.lend = s.src.off
		s.over = s.over || s.content > s.max
		return nil
	}
}

// add appends b to the line, up to the record limit plus room for a line
// end; over is set when bytes are dropped.
func (s *Splitter) add(b []byte) {
	if room := s.max + 2 - len(s.line); len(b) > room {
		b = b[:max(room, 0)]
		s.over = true
	}
	s.line = append(s.line, b...)
}

// source is a read buffer over the file that counts offsets.
type source struct {
	r      io.Reader
	buf    []byte
	pos, n int
	off    int64 // file offset of buf[pos]
	err    error
}

// peek returns the buffered bytes, reading more when there are none; it
// returns the reader's error (io.EOF at the end) only when the buffer is
// empty.
func (b *source) peek() ([]byte, error) {
	for b.pos == b.n {
		if b.err != nil {
			return nil, b.err
		}
		n, err := b.r.Read(b.buf)
		if n < 0 || n > len(b.buf) {
			return nil, fmt.Errorf("format: the reader returned %d bytes for a buffer of %d", n, len(b.buf))
		}
		b.pos, b.n = 0, n
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("format: reading the file at byte %d: %w", b.off+int64(n), err)
			}
			b.err = err
		}
	}
	return b.buf[b.pos:b.n], nil
}

// fillTo reads until k bytes are buffered or the reader has no more.
func (b *source) fillTo(k int) {
	for b.n-b.pos < k && b.err == nil {
		if b.pos > 0 {
			b.n = copy(b.buf, b.buf[b.pos:b.n])
			b.pos = 0
		}
		n, err := b.r.Read(b.buf[b.n:])
		if n < 0 || n > len(b.buf)-b.n {
			b.err = fmt.Errorf("format: the reader returned %d bytes for a buffer of %d", n, len(b.buf)-b.n)
			return
		}
		b.n += n
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("format: reading the file at byte %d: %w", b.off+int64(b.n-b.pos), err)
			}
			b.err = err
		}
	}
}

func (b *source) advance(k int) {
	b.pos += k
	b.off += int64(k)
}
