package format

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzSplit checks that no file makes the splitter panic or hang, that its
// records do not depend on how the file arrives in reads, that each record
// is the file's bytes at its offsets, that a CSV record reads as one row,
// and that resuming at any record's end gives the same records after it.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("MSH|^~\\&|A\rPID|1\r\nMSH|2\n\nBTS|1\rjunk\rMSH|3"), uint16(3))
	f.Add([]byte(bom+"a,b\r\n1,\"x\r\ny\"\r\n2,\"q\"\"\"\n3\n4,\"open\n"), uint16(7))
	f.Add([]byte("{\"a\":1}\n\r\n  \r{\"b\":2}\r\n"+strings.Repeat("z", 80)), uint16(1))
	f.Add([]byte("h\n\xff,\"\r\"\r"), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		for _, kind := range []SplitKind{SplitHL7, SplitCSV, SplitLines} {
			opts := SplitOptions{BufferSize: 16, MaxRecord: 64}
			whole := splitAll(t, bytes.NewReader(data), kind, 0, opts)
			parts := splitAll(t, &pieces{data, 1 + int(cut)%13}, kind, 0, opts)
			if join(whole) != join(parts) {
				t.Fatalf("%s: records depend on the reads:\n%s\n%s", kind, join(whole), join(parts))
			}
			var header []byte
			if kind == SplitCSV {
				s, _ := NewSplitter(bytes.NewReader(data), kind, 0, opts)
				for s.Header() == nil {
					if _, err := s.Next(); err != nil && !errors.Is(err, ErrRecord) {
						break
					}
				}
				header = s.Header()
			}
			prev := int64(0)
			fatal := false
			for _, it := range whole {
				if strings.HasPrefix(it.err, "fatal") {
					fatal = true
					continue
				}
				if it.start < prev || it.end < it.start || it.end > int64(len(data)) {
					t.Fatalf("%s: offsets %d-%d after %d in %d bytes", kind, it.start, it.end, prev, len(data))
				}
				prev = it.end
				if it.err != "" {
					continue
				}
				raw := string(data[it.start:it.end])
				switch kind {
				case SplitHL7:
					if it.data != raw || !strings.HasPrefix(it.data, "MSH") {
						t.Fatalf("hl7 record %q is not the file's %q", it.data, raw)
					}
				case SplitCSV:
					if it.data != string(header)+raw {
						t.Fatalf("csv record %q is not the header %q and the file's %q", it.data, header, raw)
					}
					rows, err := ReadCSV([]byte(it.data))
					if err != nil || len(rows) != 1 {
						t.Fatalf("csv record %q does not read as one row: %v (%d rows)", it.data, err, len(rows))
					}
				case SplitLines:
					if strings.TrimRight(raw, "\r\n") != it.data || strings.ContainsAny(it.data, "\r\n") || isBlank([]byte(it.data)) {
						t.Fatalf("line record %q from %q", it.data, raw)
					}
				}
				if len(it.data) > opts.MaxRecord+len(header) {
					t.Fatalf("%s: a record of %d bytes passed the limit", kind, len(it.data))
				}
			}
			if fatal || len(whole) == 0 {
				continue
			}
			k := int(cut) % len(whole)
			o := opts
			if kind == SplitCSV {
				o.Header = header
			}
			rest := splitAll(t, bytes.NewReader(data[whole[k].end:]), kind, whole[k].end, o)
			if join(rest) != join(whole[k+1:]) {
				t.Fatalf("%s: resumed at %d:\n%s\nwant\n%s", kind, whole[k].end, join(rest), join(whole[k+1:]))
			}
		}
	})
}
