package charset

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// FuzzDecode checks the promise Decode makes for bytes from the network:
// whatever the input, a set either refuses it or decodes it to valid UTF-8
// that encodes back to exactly the input; and MSH18 never panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("MSH|^~\\&|A|B|C|D|20260101||ADT^A01|1|P|2.5||||||8859/1\rPID|||1||M\xDCLLER"), uint8(1))
	f.Add([]byte("\xd5\xc5\xc8\xfd\x81\x30"), uint8(9))
	f.Add([]byte("\xff\xfe"), uint8(0))
	sets := []string{"UNICODE UTF-8", "8859/1", "ASCII", "8859/3", "8859/7", "8859/15", "windows-1252", "KS X 1001", "GB 18030-2000", "BIG-5"}
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		cs := mustLookup(t, sets[int(which)%len(sets)])
		_ = MSH18(raw)
		text, err := cs.Decode(raw)
		if err != nil {
			return
		}
		if !utf8.Valid(text) {
			t.Fatalf("%s decoded %q to invalid UTF-8 %q", cs, raw, text)
		}
		back, err := cs.Encode(text)
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%s: %q decoded to %q, which encodes to %q, %v", cs, raw, text, back, err)
		}
	})
}
