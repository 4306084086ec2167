package config

import "github.com/ductus/ductus/integration/charset"

// readCharset reads an optional charset: key (an HL7 table 0211 code or an
// IANA name) and returns nil when it is absent. A name charset.Lookup does
// not know or will not carry is reported with the value, so validate shows
// what was written and why it is refused.
func readCharset(o *obj, key string) *charset.Charset {
	t, ok := o.scalar(key)
	if !ok {
		return nil
	}
	if t.value == "" {
		o.problem(key, "want a character set such as 8859/1, UNICODE UTF-8 or windows-1252, got %s", t.shown)
		return nil
	}
	c, err := charset.Lookup(t.value)
	if err != nil {
		o.problem(key, "%s: %v", t.shown, err)
		return nil
	}
	return &c
}

// readInterfaceCharset reads an interface's charset:, the override for
// senders that mislabel their messages. Only sources that receive bytes from
// outside have one: a schedule builds its own JSON and an internal interface
// is filled with text by routes.
func readInterfaceCharset(o *obj, st SourceType) *charset.Charset {
	c := readCharset(o, "charset")
	if c != nil && (st == SourceSchedule || st == SourceInternal) {
		o.problem("charset", "a %s source receives no bytes from outside: charset (%s) applies to mllp, http and file sources", st, c.Name())
		return nil
	}
	return c
}

// readDestinationCharset reads a destination's charset:, the set its output
// is sent in. JSON is UTF-8 by definition (RFC 8259), and a route hands text
// to another interface, whose own destinations choose how to send it.
func readDestinationCharset(o *obj, d *Destination) *charset.Charset {
	c := readCharset(o, "charset")
	switch {
	case c == nil:
	case d.Type == DestInterface:
		o.problem("charset", "a route hands text to another interface: set charset (%s) on that interface's destinations", c.Name())
		return nil
	case d.Format == FormatJSON && !c.IsUTF8():
		o.problem("charset", "JSON output is always UTF-8: want UNICODE UTF-8 or no charset, got %s", c.Name())
		return nil
	}
	return c
}
