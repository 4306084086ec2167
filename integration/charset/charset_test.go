package charset

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		in, want string
		err      string
	}{
		{"", "UNICODE UTF-8", ""},
		{"UNICODE UTF-8", "UNICODE UTF-8", ""},
		{"unicode  utf-8", "UNICODE UTF-8", ""},
		{"ASCII", "ASCII", ""},
		{"8859/1", "8859/1", ""},
		{"ISO IR100", "8859/1", ""},
		{"8859/15", "8859/15", ""},
		{"ISO-8859-1", "8859/1", ""},
		{"latin1", "8859/1", ""},
		{"windows-1252", "windows-1252", ""},
		{"US-ASCII", "ASCII", ""},
		{"utf-8", "UNICODE UTF-8", ""},
		{"GB 18030-2000", "GB 18030-2000", ""},
		{"BIG-5", "BIG-5", ""},
		{"UNICODE UTF-16", "", "single-byte delimiters"},
		{"UNICODE", "", "single-byte delimiters"},
		{"ISO IR87", "", "ISO 2022"},
		{"UTF-16LE", "", "does not keep ASCII"},
		{"IBM037", "", "does not keep ASCII"},
		{"klingon", "", "neither an HL7 table 0211 code nor an IANA name"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			cs, err := Lookup(c.in)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Lookup(%q) = %v, %v; want ErrUnsupported containing %q", c.in, cs, err, c.err)
				}
				return
			}
			if err != nil || cs.Name() != c.want {
				t.Fatalf("Lookup(%q) = %q, %v; want %q", c.in, cs.Name(), err, c.want)
			}
		})
	}
}

func mustLookup(t testing.TB, name string) Charset {
	t.Helper()
	c, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDecodeEncode(t *testing.T) {
	cases := []struct {
		set  string
		raw  []byte
		text string
	}{
		{"8859/1", []byte("PID|||1||M\xDCLLER^J\xD6RG"), "PID|||1||MÜLLER^JÖRG"},
		{"8859/15", []byte("OBX|1|ST|||\xA4 5"), "OBX|1|ST|||€ 5"},
		{"8859/2", []byte("PID|||1||\xA3\xF3d\xBC"), "PID|||1||Łódź"},
		{"8859/5", []byte("PID|||1||\xB8\xD2\xD0\xDD"), "PID|||1||Иван"},
		{"windows-1252", []byte("NTE|1||\x93quoted\x94 \x80"), "NTE|1||“quoted” €"},
		{"UNICODE UTF-8", []byte("PID|||1||MÜLLER"), "PID|||1||MÜLLER"},
		{"ASCII", []byte("PID|||1||MULLER"), "PID|||1||MULLER"},
		{"GB 18030-2000", []byte("PID|||1||\xd5\xc5\xc8\xfd"), "PID|||1||张三"},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			cs := mustLookup(t, c.set)
			text, err := cs.Decode(c.raw)
			if err != nil || string(text) != c.text {
				t.Fatalf("Decode = %q, %v; want %q", text, err, c.text)
			}
			back, err := cs.Encode(text)
			if err != nil || !bytes.Equal(back, c.raw) {
				t.Fatalf("Encode(Decode(raw)) = %q, %v; want the original %q", back, err, c.raw)
			}
		})
	}
}

// TestSingleByteRoundTrip decodes every byte of every single-byte set on
// its own: each either decodes and encodes back to itself, or is refused
// with its offset.
func TestSingleByteRoundTrip(t *testing.T) {
	for _, name := range []string{"8859/1", "8859/2", "8859/3", "8859/4", "8859/5", "8859/6", "8859/7", "8859/8", "8859/9", "8859/15", "windows-1252", "ASCII"} {
		cs := mustLookup(t, name)
		refused := 0
		for b := 0; b < 256; b++ {
			raw := []byte{'x', 'y', byte(b)}
			text, err := cs.Decode(raw)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Offset != 2 || e.Byte != byte(b) {
					t.Fatalf("%s: byte 0x%02X: error %v; want an *Error at offset 2", name, b, err)
				}
				refused++
				continue
			}
			if !utf8.Valid(text) {
				t.Fatalf("%s: byte 0x%02X decoded to invalid UTF-8 %q", name, b, text)
			}
			back, err := cs.Encode(text)
			if err != nil || !bytes.Equal(back, raw) {
				t.Fatalf("%s: byte 0x%02X: round trip %q, %v", name, b, back, err)
			}
		}
		// Latin-1 defines every byte; ASCII only the lower half; 8859/3
		// leaves a few holes, which must be refused rather than replaced.
		switch name {
		case "8859/1":
			if refused != 0 {
				t.Errorf("8859/1 refused %d bytes; it defines all 256", refused)
			}
		case "ASCII":
			if refused != 128 {
				t.Errorf("ASCII refused %d bytes; want 128", refused)
			}
		case "8859/3":
			if refused == 0 {
				t.Errorf("8859/3 refused no byte; it leaves 0xA5 undefined")
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		set    string
		raw    string
		offset int
		msg    string
	}{
		{"UNICODE UTF-8", "PID|||M\xDCLLER", 7, "byte 0xDC at offset 7 is not valid UNICODE UTF-8"},
		{"ASCII", "PID|||M\xDCLLER", 7, "byte 0xDC at offset 7 is not valid ASCII"},
		{"8859/3", "abc\xA5", 3, "byte 0xA5 at offset 3 is not valid 8859/3"},
		{"windows-1252", "ab\x81", 2, "not valid windows-1252"},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			_, err := mustLookup(t, c.set).Decode([]byte(c.raw))
			var e *Error
			if !errors.As(err, &e) || e.Offset != c.offset || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Decode(%q) = %v; want an *Error at %d saying %q", c.raw, err, c.offset, c.msg)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		set, text string
		offset    int
		r         rune
	}{
		{"8859/1", "PID|||Łukasz", 6, 'Ł'},
		{"ASCII", "PID|||Müller", 7, 'ü'},
		{"8859/15", "ok € then ¤", 12, '¤'},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			_, err := mustLookup(t, c.set).Encode([]byte(c.text))
			var e *Error
			if !errors.As(err, &e) || e.Offset != c.offset || e.Rune != c.r || !strings.Contains(err.Error(), "has no form in "+c.set) {
				t.Fatalf("Encode(%q) = %v; want %q at byte %d", c.text, err, c.r, c.offset)
			}
		})
	}
	if _, err := UTF8.Encode([]byte("bad \xff")); err == nil {
		t.Fatal("Encode accepted text that is not UTF-8")
	}
}

func TestMSH18(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5|||||8859/1\rPID|||1", ""},
		{"MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5|||||DE|8859/1\rPID|||1", "8859/1"},
		{"MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5||||||UNICODE UTF-8~8859/1|x\r", "UNICODE UTF-8"},
		{"\xEF\xBB\xBF\r\nMSH#^~\\&#A#B#C#D#20260101##ADT^A01#1#P#2.5######8859/15\n", "8859/15"},
		{"MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5", ""},
		{"PID|||1", ""},
		{"MSH", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := MSH18([]byte(c.raw)); got != c.want {
			t.Errorf("MSH18(%q) = %q; want %q", c.raw, got, c.want)
		}
	}
}

func TestForHL7(t *testing.T) {
	latin := []byte("MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5||||||8859/1\rPID|||1||M\xDCLLER")
	cs, err := ForHL7(latin, nil)
	if err != nil || cs.Name() != "8859/1" {
		t.Fatalf("ForHL7 = %v, %v; want 8859/1", cs, err)
	}
	w := mustLookup(t, "windows-1252")
	if cs, _ := ForHL7(latin, &w); cs.Name() != "windows-1252" {
		t.Fatalf("the override was not used: %v", cs)
	}
	if cs, err := ForHL7([]byte("MSH|^~\\&|A\rPID|"), nil); err != nil || !cs.IsUTF8() {
		t.Fatalf("no MSH-18: %v, %v; want UTF-8", cs, err)
	}
	_, err = ForHL7([]byte("MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5||||||UNICODE UTF-16\r"), nil)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "MSH-18") {
		t.Fatalf("UTF-16 in MSH-18: %v; want ErrUnsupported naming MSH-18", err)
	}
}
