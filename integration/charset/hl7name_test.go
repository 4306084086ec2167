package charset

import (
	"errors"
	"testing"
)

func TestHL7Name(t *testing.T) {
	cases := []struct{ in, hl7, mime string }{
		{"", "UNICODE UTF-8", "UTF-8"},
		{"utf-8", "UNICODE UTF-8", "UTF-8"},
		{"US-ASCII", "ASCII", "US-ASCII"},
		{"ISO IR100", "8859/1", "ISO-8859-1"},
		{"latin1", "8859/1", "ISO-8859-1"},
		{"8859/15", "8859/15", "ISO-8859-15"},
		{"BIG-5", "BIG-5", "Big5"},
		{"windows-1252", "", "windows-1252"}, // table 0211 has no code for it
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			cs := mustLookup(t, c.in)
			if got := cs.HL7(); got != c.hl7 {
				t.Errorf("Lookup(%q).HL7() = %q, want %q", c.in, got, c.hl7)
			}
			if got := cs.MIME(); got != c.mime {
				t.Errorf("Lookup(%q).MIME() = %q, want %q", c.in, got, c.mime)
			}
		})
	}
	if !mustLookup(t, "ISO-8859-1").Equal(mustLookup(t, "8859/1")) || UTF8.Equal(ASCII) {
		t.Fatal("Equal compares the sets, not the names given")
	}
}

func TestSetMSH18(t *testing.T) {
	cases := []struct {
		name, in, set, want string
		err                 error
	}{
		{"replace", "MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5|||||DE|8859/1\rPID|1\r", "UNICODE UTF-8",
			"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5|||||DE|UNICODE UTF-8\rPID|1\r", nil},
		{"replace with later fields and repetitions", "MSH|^~\\&|A|B|C|D|T||ADT^A01|1|P|2.5|||||DE|8859/1~ISO IR87|EN\rPID|1", "8859/15",
			"MSH|^~\\&|A|B|C|D|T||ADT^A01|1|P|2.5|||||DE|8859/15|EN\rPID|1", nil},
		{"add missing fields", "MSH|^~\\&|A|B|C|D|T||ADT^A01|1|P|2.5\rPID|1\r", "8859/1",
			"MSH|^~\\&|A|B|C|D|T||ADT^A01|1|P|2.5||||||8859/1\rPID|1\r", nil},
		{"other separator, no trailing segment", "MSH#^~\\&#A#B#C#D#T##ADT^A01#1#P#2.5", "ASCII",
			"MSH#^~\\&#A#B#C#D#T##ADT^A01#1#P#2.5######ASCII", nil},
		{"keeps a BOM and blank lines", "\xEF\xBB\xBF\r\nMSH|^~\\&|A\nPID|\xC3\xA9", "8859/1",
			"\xEF\xBB\xBF\r\nMSH|^~\\&|A|||||||||||||||8859/1\nPID|\xC3\xA9", nil},
		{"not HL7", "PID|1\r", "8859/1", "", ErrNoMSH},
		{"name with a delimiter", "MSH|^~\\&|A\r", "8859^1", "", errors.New("delimiters")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := SetMSH18([]byte(c.in), c.set)
			if c.err != nil {
				if err == nil {
					t.Fatalf("SetMSH18 = %q, want an error", got)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("SetMSH18 = %q, %v\nwant %q", got, err, c.want)
			}
			if c.set != "" && MSH18(got) != c.set {
				t.Fatalf("MSH18 of the result = %q, want %q", MSH18(got), c.set)
			}
		})
	}
}
