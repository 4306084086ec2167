package engine

import (
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/ductus/ductus/integration/charset"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/msgstore"
)

// Character sets at the engine's edges. Every source decodes what it
// receives to UTF-8 before the intake (so transforms, keys and the message
// browser only ever see UTF-8 text) and refuses bytes that do not decode
// before anything is stored or acknowledged: a message the engine cannot
// carry unchanged must never be answered AA or 202. The set a message
// arrived in, when it is not UTF-8, is kept in its meta as "charset"; each
// destination encodes its output back into its own charset, by default
// that one, so a message goes out byte for byte as it came in.

// metaCharset is the meta key holding the set a message arrived in (absent
// for UTF-8).
const metaCharset = "charset"

// decoded is a received message turned into UTF-8 text.
type decoded struct {
	text []byte
	cs   charset.Charset
}

// decodeError is a message refused because its bytes do not decode (or it
// names a character set the engine does not know). Offset is the byte
// offset of the first bad byte, or -1 when the set itself is the problem.
type decodeError struct {
	offset int64
	err    error
}

func (d *decodeError) Error() string { return d.err.Error() }
func (d *decodeError) Unwrap() error { return d.err }

// decodeIn decodes raw in the set chosen, in this order, by the
// interface's override, the transport's label (an HTTP Content-Type's
// charset, nil for none), for HL7 v2 MSH-18, else UTF-8.
func decodeIn(in *config.Interface, raw []byte, label *charset.Charset) (decoded, error) {
	cs := charset.UTF8
	switch {
	case in.Charset != nil:
		cs = *in.Charset
	case label != nil:
		cs = *label
	case in.Format == config.FormatHL7v2:
		c, err := charset.ForHL7(raw, nil)
		if err != nil {
			return decoded{}, &decodeError{offset: -1, err: err}
		}
		cs = c
	}
	text, err := cs.Decode(raw)
	if err != nil {
		var ce *charset.Error
		off := int64(-1)
		if errors.As(err, &ce) {
			off = int64(ce.Offset)
		}
		return decoded{}, &decodeError{offset: off, err: err}
	}
	return decoded{text: text, cs: cs}, nil
}

// undecoded reports whether text is raw itself: charset.Decode returns
// its input when there was nothing to convert (UTF-8, or ASCII in any
// set), so a parse of raw is a parse of text.
func undecoded(text, raw []byte) bool {
	return len(text) == len(raw) && (len(raw) == 0 || &text[0] == &raw[0])
}

// withCharset records the set a message arrived in in its meta (only when
// it is not UTF-8, so UTF-8 messages' meta is as it always was).
func withCharset(meta map[string]any, cs charset.Charset) map[string]any {
	if !cs.IsUTF8() {
		meta[metaCharset] = cs.Name()
	}
	return meta
}

// arrivedIn is the set a stored message arrived in. A name that no longer
// resolves cannot happen (it was resolved at intake); UTF-8 is the safe
// reading.
func arrivedIn(m *msgstore.Message) charset.Charset {
	name, _ := m.Meta[metaCharset].(string)
	cs, err := charset.Lookup(name)
	if err != nil {
		return charset.UTF8
	}
	return cs
}

// outputCharset is the set a destination sends in: JSON is UTF-8 by
// definition; otherwise the destination's charset, else the set the
// message arrived in.
func outputCharset(dest *config.Destination, arrived charset.Charset) charset.Charset {
	switch {
	case dest.Format == config.FormatJSON:
		return charset.UTF8
	case dest.Charset != nil:
		return *dest.Charset
	}
	return arrived
}

// errUnencodable marks output a destination's character set cannot hold:
// the delivery is quarantined (resending it would fail the same way).
var errUnencodable = errors.New("the output cannot be sent in the destination's character set")

// encodeOutput turns a transform's UTF-8 output into the bytes the
// destination sends, and names the set they are in. HL7 v2 output sent in
// another set than it arrived in gets MSH-18 rewritten to say so (kept when
// HL7 table 0211 has no code for the set, e.g. windows-1252: a receiver
// reading MSH-18 knows a table code and would refuse an IANA name).
func encodeOutput(dest *config.Destination, arrived charset.Charset, out []byte) ([]byte, charset.Charset, error) {
	target := outputCharset(dest, arrived)
	if dest.Format == config.FormatHL7v2 && !target.Equal(arrived) && target.HL7() != "" {
		if b, err := charset.SetMSH18(out, target.HL7()); err == nil {
			out = b
		}
		// Output that does not start with MSH is sent as it is: the
		// receiver refuses it, which says more than a rewrite error.
	}
	b, err := target.Encode(out)
	if err != nil {
		return nil, target, fmt.Errorf("%w (%s): %v", errUnencodable, target.Name(), err)
	}
	return b, target, nil
}

// mediaTypes are the Content-Types an HTTP source takes for each format
// ("application/*+json" is any JSON-based type such as
// application/fhir+json).
var mediaTypes = map[config.Format][]string{
	config.FormatHL7v2: {"x-application/hl7-v2+er7", "application/hl7-v2", "application/hl7-v2+er7", "text/plain"},
	config.FormatJSON:  {"application/json", "application/*+json"},
	config.FormatCSV:   {"text/csv", "text/plain"},
	config.FormatText:  {"text/plain"},
}

// errMediaType marks a Content-Type an HTTP source does not take (415).
var errMediaType = errors.New("unsupported media type")

// contentType checks a request's Content-Type against the interface's
// format and returns the character set its charset parameter names (nil
// when there is none). A missing Content-Type is taken as the format: many
// senders of HL7 over HTTP set none.
func contentType(f config.Format, header string) (*charset.Charset, error) {
	if strings.TrimSpace(header) == "" {
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		return nil, fmt.Errorf("%w: the Content-Type %q does not parse: %v", errMediaType, header, err)
	}
	if !mediaTypeFits(f, mt) {
		return nil, fmt.Errorf("%w: this interface reads %s; send it as %s, not %s", errMediaType, f, strings.Join(mediaTypes[f], ", "), mt)
	}
	name, ok := params["charset"]
	if !ok {
		return nil, nil
	}
	cs, err := charset.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: the Content-Type's charset: %v", errMediaType, err)
	}
	return &cs, nil
}

func mediaTypeFits(f config.Format, mt string) bool {
	for _, want := range mediaTypes[f] {
		if want == mt {
			return true
		}
		if suffix, ok := strings.CutPrefix(want, "application/*"); ok &&
			strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, suffix) && len(mt) > len("application/")+len(suffix) {
			return true
		}
	}
	return false
}

// mimeType is the Content-Type an HTTP destination sends output of format
// f in character set cs with: UTF-8 output keeps the types it always had,
// other sets are named in a charset parameter so the receiver can read them.
func mimeType(f config.Format, cs charset.Charset) string {
	base := contentTypes[f]
	if cs.IsUTF8() || f == config.FormatJSON { // JSON has no charset parameter (RFC 8259)
		return base
	}
	base, _, _ = strings.Cut(base, ";")
	return base + "; charset=" + cs.MIME()
}
