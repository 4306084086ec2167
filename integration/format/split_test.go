package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/hl7"
)

// item is one Next answer: a record or a record error.
type item struct {
	data       string
	start, end int64
	err        string
}

func (i item) String() string {
	if i.err != "" {
		return fmt.Sprintf("err[%d-%d]%s", i.start, i.end, i.err)
	}
	return fmt.Sprintf("%q[%d-%d]", i.data, i.start, i.end)
}

// splitAll runs a splitter to io.EOF; a final error ends the list with
// "fatal: ...".
func splitAll(t testing.TB, r io.Reader, kind SplitKind, start int64, opts SplitOptions) []item {
	t.Helper()
	s, err := NewSplitter(r, kind, start, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []item
	for range 100000 {
		rec, err := s.Next()
		var re *RecordError
		switch {
		case err == io.EOF:
			return out
		case errors.As(err, &re):
			reason := "bad"
			if re.TooLarge {
				reason = "too large"
			}
			out = append(out, item{start: re.Start, end: re.End, err: reason})
		case err != nil:
			return append(out, item{err: "fatal: " + err.Error()})
		default:
			out = append(out, item{data: string(rec.Data), start: rec.Start, end: rec.End})
		}
	}
	t.Fatal("no io.EOF")
	return nil
}

// pieces returns each part of data in its own Read.
type pieces struct {
	data []byte
	size int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.data[:min(p.size, len(p.data))])
	p.data = p.data[n:]
	return n, nil
}

func join(items []item) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.String()
	}
	return strings.Join(s, " ")
}

func TestSplitHL7(t *testing.T) {
	m1 := "MSH|^~\\&|A|||||||1\rPID|1\r"
	m2 := "MSH|^~\\&|A|||||||2\rPID|2\rOBX|1\r"
	tests := []struct {
		name, file string
		want       []item
	}{
		{"CR", m1 + m2, []item{{data: m1, start: 0, end: 25}, {data: m2, start: 25, end: 56}}},
		{"LF", "MSH|1\nPID|1\nMSH|2\nPID|2\n", []item{{data: "MSH|1\nPID|1\n", end: 12}, {data: "MSH|2\nPID|2\n", start: 12, end: 24}}},
		{"CRLF, no final end", "MSH|1\r\nPID|1\r\nMSH|2\r\nPID|2", []item{{data: "MSH|1\r\nPID|1\r\n", end: 14}, {data: "MSH|2\r\nPID|2", start: 14, end: 26}}},
		{"blank lines", "\n\nMSH|1\r\n\r\nPID|1\r\n\r\n  \r\nMSH|2\n\n", []item{{data: "MSH|1\r\n\r\nPID|1\r\n", start: 2, end: 18}, {data: "MSH|2\n", start: 24, end: 30}}},
		{"BOM", bom + "MSH|1\rPID|1\r", []item{{data: "MSH|1\rPID|1\r", start: 3, end: 15}}},
		{"batch envelope", "FHS|^~\\&\rBHS|^~\\&\rMSH|1\rPID|1\rMSH|2\rBTS|2\rFTS|1\r", []item{{data: "MSH|1\rPID|1\r", start: 18, end: 30}, {data: "MSH|2\r", start: 30, end: 36}}},
		{"junk before the first MSH", "hello\rworld\rMSH|1\r", []item{{err: "bad", start: 0, end: 12}, {data: "MSH|1\r", start: 12, end: 18}}},
		{"junk after a trailer", "MSH|1\rBTS|1\rPID|x\r", []item{{data: "MSH|1\r", end: 6}, {err: "bad", start: 12, end: 18}}},
		{"only junk", "not hl7", []item{{err: "bad", start: 0, end: 7}}},
		{"empty", "", nil},
		{"MSH-like names are segments", "MSH|1\rMSHX\rMSH\r", []item{{data: "MSH|1\rMSHX\rMSH\r", end: 15}}},
		{"too large", "MSH|1\rPID|" + strings.Repeat("x", 60) + "\rMSH|2\r", []item{{err: "too large", start: 0, end: 71}, {data: "MSH|2\r", start: 71, end: 77}}},
		{"one long line", "MSH|" + strings.Repeat("y", 70) + "\nMSH|2", []item{{err: "too large", start: 0, end: 75}, {data: "MSH|2", start: 75, end: 80}}},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3, 16, 1 << 16} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, size), func(t *testing.T) {
				got := splitAll(t, &pieces{[]byte(tt.file), size}, SplitHL7, 0, SplitOptions{BufferSize: 16, MaxRecord: 64})
				if join(got) != join(tt.want) {
					t.Errorf("got  %s\nwant %s", join(got), join(tt.want))
				}
				for _, it := range got {
					if it.err == "" && tt.name != "BOM" && it.data != tt.file[it.start:it.end] {
						t.Errorf("data %q is not the file's bytes %d-%d", it.data, it.start, it.end)
					}
				}
			})
		}
	}
}

func TestSplitCSV(t *testing.T) {
	h := "mrn,note\r\n"
	tests := []struct {
		name, file string
		want       []item
	}{
		{"rows", h + "1,a\r\n2,b\r\n", []item{{data: h + "1,a\r\n", start: 10, end: 15}, {data: h + "2,b\r\n", start: 15, end: 20}}},
		{"quoted line ends", h + "1,\"x\r\ny\"\r\n2,\"p\nq\"", []item{{data: h + "1,\"x\r\ny\"\r\n", start: 10, end: 20}, {data: h + "2,\"p\nq\"", start: 20, end: 27}}},
		{"quotes and commas", h + "1,\"a,\"\"b\"\"\"\n", []item{{data: h + "1,\"a,\"\"b\"\"\"\n", start: 10, end: 22}}},
		{"empty lines", "\n" + h + "\n\r\n1,a\n\n", []item{{data: h + "1,a\n", start: 14, end: 18}}},
		{"BOM", bom + h + "1,a\n", []item{{data: h + "1,a\n", start: 13, end: 17}}},
		{"header only", h, nil},
		{"empty", "", nil},
		{"wrong field count", h + "1\n1,2,3\n3,c\n", []item{{err: "bad", start: 10, end: 12}, {err: "bad", start: 12, end: 18}, {data: h + "3,c\n", start: 18, end: 22}}},
		{"bare quote", h + "1,a\"b\n2,c\n", []item{{err: "bad", start: 10, end: 16}, {data: h + "2,c\n", start: 16, end: 20}}},
		{"text after closing quote", h + "1,\"a\"b\n2,c\n", []item{{err: "bad", start: 10, end: 17}, {data: h + "2,c\n", start: 17, end: 21}}},
		{"unclosed quote", h + "1,\"a\n2,c\n", []item{{err: "bad", start: 10, end: 19}}},
		{"not UTF-8", h + "1,\xff\n2,c\n", []item{{err: "bad", start: 10, end: 14}, {data: h + "2,c\n", start: 14, end: 18}}},
		{"too large", h + "1," + strings.Repeat("z", 60) + "\n2,c\n", []item{{err: "too large", start: 10, end: 73}, {data: h + "2,c\n", start: 73, end: 77}}},
		{"lone CR is data, final CR ends", h + "1,a\rb\n2,c\r", []item{{data: h + "1,a\rb\n", start: 10, end: 16}, {data: h + "2,c\r", start: 16, end: 20}}},
		{"bad header", "a,a\n1,2\n", []item{{err: "fatal: format: the CSV header row: format: not valid csv: header columns 1 and 2 are both named \"a\""}}},
		{"header with bad quote", "a\"b,c\n1,2\n", []item{{err: "fatal: format: not valid csv: byte 0: the header row: a quote inside a field that does not start with one (quote the whole field and double the quote: \"a\"\"b\")"}}},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 5, 1 << 16} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, size), func(t *testing.T) {
				got := splitAll(t, &pieces{[]byte(tt.file), size}, SplitCSV, 0, SplitOptions{BufferSize: 16, MaxRecord: 64})
				if join(got) != join(tt.want) {
					t.Errorf("got  %s\nwant %s", join(got), join(tt.want))
				}
				for _, it := range got {
					if it.err != "" {
						continue
					}
					rows, err := ReadCSV([]byte(it.data))
					if err != nil || len(rows) != 1 {
						t.Errorf("record %q does not read as one row: %v", it.data, err)
					}
				}
			})
		}
	}
}

func TestSplitLines(t *testing.T) {
	file := "{\"a\":1}\n\r\n  \n{\"a\":2}\r\n{\"a\":3}\r{\"a\":4}"
	want := []item{{data: `{"a":1}`, end: 8}, {data: `{"a":2}`, start: 13, end: 22}, {data: `{"a":3}`, start: 22, end: 30}, {data: `{"a":4}`, start: 30, end: 37}}
	for _, size := range []int{1, 7, 1 << 16} {
		got := splitAll(t, &pieces{[]byte(file), size}, SplitLines, 0, SplitOptions{BufferSize: 16, MaxRecord: 16})
		if join(got) != join(want) {
			t.Errorf("size %d: got  %s\nwant %s", size, join(got), join(want))
		}
	}
	got := splitAll(t, strings.NewReader("short\n"+strings.Repeat("L", 17)+"\nok"), SplitLines, 0, SplitOptions{MaxRecord: 16})
	if join(got) != `"short"[0-6] err[6-24]too large "ok"[24-26]` {
		t.Errorf("limit: %s", join(got))
	}
	got = splitAll(t, strings.NewReader(strings.Repeat("L", 16)), SplitLines, 0, SplitOptions{MaxRecord: 16})
	if len(got) != 1 || got[0].err != "" {
		t.Errorf("exactly the limit: %s", join(got))
	}
}

// A real file, split in one go, then resumed at each record's end after a
// "crash": the records after it are the same, none lost or doubled.
func TestSplitResumeFromFile(t *testing.T) {
	dir := t.TempDir()
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	var hl7File bytes.Buffer
	for range 40 {
		hl7File.Write(bytes.ReplaceAll(g.Next().Bytes, []byte("\r"), []byte("\r\n")))
	}
	var csvFile bytes.Buffer
	csvFile.WriteString(bom + "mrn,name,note\r\n")
	for i := range 40 {
		fmt.Fprintf(&csvFile, "%d,\"Name, %d\",\"multi\r\nline %d\"\r\n", 1000+i, i, i)
	}
	var linesFile bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&linesFile, "{\"n\":%d}\n", i)
	}
	for _, tt := range []struct {
		kind SplitKind
		data []byte
	}{{SplitHL7, hl7File.Bytes()}, {SplitCSV, csvFile.Bytes()}, {SplitLines, linesFile.Bytes()}} {
		t.Run(string(tt.kind), func(t *testing.T) {
			path := filepath.Join(dir, string(tt.kind))
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			all := splitAll(t, f, tt.kind, 0, SplitOptions{BufferSize: 4096})
			if len(all) != 40 {
				t.Fatalf("%d records: %s", len(all), join(all))
			}
			for i, it := range all {
				if it.err != "" {
					t.Fatalf("record %d: %s", i, it)
				}
				if tt.kind == SplitHL7 {
					if _, err := hl7.ParseString(it.data); err != nil {
						t.Fatalf("record %d does not parse: %v", i, err)
					}
				}
			}
			var header []byte
			if tt.kind == SplitCSV {
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				if header, err = ReadCSVHeader(f, SplitOptions{}); err != nil || string(header) != "mrn,name,note\r\n" {
					t.Fatalf("header %q %v", header, err)
				}
			}
			for k := range all {
				if _, err := f.Seek(all[k].end, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				rest := splitAll(t, f, tt.kind, all[k].end, SplitOptions{BufferSize: 64, Header: header})
				if join(rest) != join(all[k+1:]) {
					t.Fatalf("resumed after record %d:\n%s\nwant\n%s", k, join(rest), join(all[k+1:]))
				}
			}
		})
	}
}

func TestSplitterOptions(t *testing.T) {
	r := strings.NewReader("")
	for _, tt := range []struct {
		kind  SplitKind
		start int64
		opts  SplitOptions
		err   string
	}{
		{"xml", 0, SplitOptions{}, "unknown split kind"},
		{SplitHL7, -1, SplitOptions{}, "negative"},
		{SplitCSV, 10, SplitOptions{}, "needs its header row"},
		{SplitCSV, 0, SplitOptions{Header: []byte("a,b")}, "only given to resume"},
		{SplitLines, 5, SplitOptions{Header: []byte("a,b")}, "only given to resume"},
		{SplitCSV, 5, SplitOptions{Header: []byte("a,a")}, "both named"},
	} {
		if _, err := NewSplitter(r, tt.kind, tt.start, tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s %d %+v: %v, want %q", tt.kind, tt.start, tt.opts, err, tt.err)
		}
	}
	s, err := NewSplitter(strings.NewReader("1,2\n"), SplitCSV, 4, SplitOptions{Header: []byte("a,b")})
	if err != nil || string(s.Header()) != "a,b\n" {
		t.Fatalf("%v %q", err, s.Header())
	}
	if _, err := ReadCSVHeader(strings.NewReader("\n\n"), SplitOptions{}); err == nil || !strings.Contains(err.Error(), "no header row") {
		t.Errorf("empty header: %v", err)
	}
	for f, want := range map[Name]SplitKind{HL7v2: SplitHL7, CSV: SplitCSV, JSON: SplitLines, Text: SplitLines} {
		if k, err := SplitKindOf(f); k != want || err != nil {
			t.Errorf("SplitKindOf(%s) = %s %v", f, k, err)
		}
	}
	if _, err := SplitKindOf("xml"); err == nil {
		t.Error("SplitKindOf(xml)")
	}
}

// A read error is final: Next returns it again.
func TestSplitReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	s, _ := NewSplitter(io.MultiReader(strings.NewReader("a\nb"), errReader{boom}), SplitLines, 0, SplitOptions{})
	if rec, err := s.Next(); err != nil || string(rec.Data) != "a" {
		t.Fatalf("%q %v", rec.Data, err)
	}
	for range 2 {
		if _, err := s.Next(); !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading the file at byte 3") {
			t.Fatalf("want the read error, got %v", err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// The splitter's memory is its buffer and one record, however big the
// file: a 40 MB stream of small records never grows either.
func TestSplitBoundedMemory(t *testing.T) {
	const records = 500_000
	line := []byte("MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5\rPID|1||12345^^^GH^MR\r")
	r := &repeat{line: line, left: records}
	s, err := NewSplitter(r, SplitHL7, 0, SplitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		rec, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.Data, line) {
			t.Fatalf("record %d: %q", n, rec.Data)
		}
		n++
		if len(s.src.buf) != DefaultSplitBuffer || cap(s.line) > 4096 {
			t.Fatalf("buffers grew: %d, %d", len(s.src.buf), cap(s.line))
		}
	}
	if n != records {
		t.Fatalf("%d records", n)
	}
}

type repeat struct {
	line []byte
	left int
	pos  int
}

func (r *repeat) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && r.left > 0 {
		c := copy(b[n:], r.line[r.pos:])
		n += c
		r.pos += c
		if r.pos == len(r.line) {
			r.pos = 0
			r.left--
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
