package charset

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/text/encoding/ianaindex"
)

// HL7 is the character set's HL7 table 0211 code ("8859/1", "UNICODE
// UTF-8", "ASCII"), or "" for a set that table has no code for (the
// Windows code pages and other IANA-only sets). A destination writes it
// into MSH-18 when it sends a message in a set other than the one it
// arrived in.
func (c Charset) HL7() string {
	if hc, ok := hl7Sets[c.Name()]; ok && hc.Name() == c.Name() {
		return c.Name()
	}
	return ""
}

// Equal reports whether c and o encode text the same way. Lookup returns
// one canonical Charset per set, so comparing names is enough.
func (c Charset) Equal(o Charset) bool { return c.Name() == o.Name() }

// ErrNoMSH is returned by SetMSH18 for bytes that do not start with an MSH
// segment.
var ErrNoMSH = errors.New("the message does not start with an MSH segment")

// SetMSH18 returns raw with MSH-18 (every repetition) replaced by name,
// adding empty fields when the MSH segment ends before MSH-18. It works on
// the raw bytes (the MSH segment up to MSH-18 is ASCII in every set Lookup
// accepts), so it may be applied before or after encoding; what precedes
// the MSH segment (a byte order mark, blank lines) and every other segment
// are kept byte for byte. A name holding one of the message's delimiters
// is refused: it would change the message's structure.
func SetMSH18(raw []byte, name string) ([]byte, error) {
	start := 0
	if bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")) {
		start = 3
	}
	for start < len(raw) && (raw[start] == '\r' || raw[start] == '\n') {
		start++
	}
	seg := raw[start:]
	if len(seg) < 4 || !bytes.HasPrefix(seg, []byte("MSH")) {
		return nil, ErrNoMSH
	}
	end := len(seg)
	if i := bytes.IndexAny(seg, "\r\n"); i >= 0 {
		end = i
	}
	seg = seg[:end]
	sep := seg[3]
	delims := []byte{sep}
	fields := bytes.Split(seg, []byte{sep})
	if len(fields) > 1 {
		delims = append(delims, fields[1]...)
	}
	if bytes.ContainsAny([]byte(name), string(delims)+"\r\n") {
		return nil, fmt.Errorf("the character set name %q holds one of the message's delimiters %q", name, delims)
	}
	// fields[0] is "MSH" and fields[1] is MSH-2, so MSH-n is fields[n-1].
	for len(fields) < 18 {
		fields = append(fields, nil)
	}
	fields[17] = []byte(name)
	out := make([]byte, 0, len(raw)+len(name)+16)
	out = append(out, raw[:start]...)
	out = append(out, bytes.Join(fields, []byte{sep})...)
	out = append(out, raw[start+end:]...)
	return out, nil
}

// MIME is the character set's name for a Content-Type's charset parameter
// ("ISO-8859-1", "windows-1252", "UTF-8"): the IANA preferred MIME name
// where there is one, else its IANA name.
func (c Charset) MIME() string {
	switch {
	case c.IsUTF8():
		return "UTF-8"
	case c.ascii:
		return "US-ASCII"
	}
	if n, err := ianaindex.MIME.Name(c.enc); err == nil && n != "" {
		return n
	}
	if n, err := ianaindex.IANA.Name(c.enc); err == nil && n != "" {
		return n
	}
	return c.Name()
}
