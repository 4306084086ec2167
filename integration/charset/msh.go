package charset

import (
	"bytes"
	"fmt"
)

// MSH18 returns the first repetition of an HL7 v2 message's MSH-18 (the
// character set), read from its raw bytes before anything is decoded: the
// MSH segment up to MSH-18 is ASCII in every set Lookup accepts. It
// returns "" when the message does not start with MSH (after an optional
// UTF-8 byte order mark and blank lines) or has no MSH-18.
func MSH18(raw []byte) string {
	raw = bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF"))
	raw = bytes.TrimLeft(raw, "\r\n")
	if i := bytes.IndexAny(raw, "\r\n"); i >= 0 {
		raw = raw[:i]
	}
	if len(raw) < 4 || !bytes.HasPrefix(raw, []byte("MSH")) {
		return ""
	}
	sep := raw[3]
	fields := bytes.Split(raw, []byte{sep})
	// fields[0] is "MSH" and fields[1] is MSH-2, so MSH-n is fields[n-1].
	if len(fields) < 18 {
		return ""
	}
	v := fields[17]
	if enc := fields[1]; len(enc) >= 2 {
		if i := bytes.IndexByte(v, enc[1]); i >= 0 { // the repetition separator
			v = v[:i]
		}
		if i := bytes.IndexByte(v, enc[0]); i >= 0 { // the component separator
			v = v[:i]
		}
	}
	return string(bytes.TrimSpace(v))
}

// ForHL7 returns the character set of an HL7 v2 message: override when it
// is set (an interface's `charset:` for senders that mislabel their
// messages), else the one MSH-18 names, else UTF-8. HL7 reads an absent
// MSH-18 as ASCII; UTF-8 is taken instead because it is a superset, and
// senders that omit MSH-18 send UTF-8 far more often than they send
// anything else. An MSH-18 that names no supported set is an error naming
// the value.
func ForHL7(raw []byte, override *Charset) (Charset, error) {
	if override != nil {
		return *override, nil
	}
	name := MSH18(raw)
	c, err := Lookup(name)
	if err != nil {
		return Charset{}, fmt.Errorf("MSH-18: %w", err)
	}
	return c, nil
}
