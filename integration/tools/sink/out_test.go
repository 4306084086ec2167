package sink

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLineRoundTrip(t *testing.T) {
	cases := []struct {
		msg, line string
	}{
		{"", "\n"},
		{"MSH|^~\\&|A\rPID|1\r", "MSH|^~\\\\&|A\\rPID|1\\r\n"},
		{"a\nb\r\nc", "a\\nb\\r\\nc\n"},
		{"OBX|1|TX|||a \\F\\ b\\.br\\c", "OBX|1|TX|||a \\\\F\\\\ b\\\\.br\\\\c\n"},
		{"\\r literally", "\\\\r literally\n"},
	}
	for _, tc := range cases {
		line := EncodeLine([]byte(tc.msg))
		if string(line) != tc.line {
			t.Errorf("EncodeLine(%q) = %q, want %q", tc.msg, line, tc.line)
		}
		back, err := DecodeLine(line)
		if err != nil || string(back) != tc.msg {
			t.Errorf("DecodeLine(%q) = %q, %v; want %q", line, back, err, tc.msg)
		}
	}
}

func TestDecodeLineErrors(t *testing.T) {
	cases := map[string]string{
		"a\\":    "lone backslash",
		"a\\x":   "unknown escape",
		"a\rb":   "raw CR",
		"\\\\\\": "lone backslash",
	}
	for in, want := range cases {
		if _, err := DecodeLine([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeLine(%q): %v, want %q", in, err, want)
		}
	}
}

func TestReadOutErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"ok\nhalf":     "incomplete",
		"ok\nbad\\q\n": ":2:",
	}
	for content, want := range cases {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadOut(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadOut of %q: %v, want %q", content, err, want)
		}
	}
	if _, err := ReadOut(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file read fine")
	}
}

// FuzzLine: every message survives the out-file line exactly, and a line
// is one line.
func FuzzLine(f *testing.F) {
	f.Add([]byte("MSH|^~\\&|A\rPID|1\r"))
	f.Add([]byte("\\\\r\n\r"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		line := EncodeLine(msg)
		if bytes.Count(line, []byte("\n")) != 1 || bytes.IndexByte(line, '\r') >= 0 {
			t.Fatalf("EncodeLine(%q) = %q is not one line", msg, line)
		}
		back, err := DecodeLine(line)
		if err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("round trip of %q: %q, %v", msg, back, err)
		}
	})
}
