// Package charset turns the bytes an interface receives into the UTF-8 text
// the engine works in, and text back into the bytes a destination sends.
//
// # Why decoding is checked both ways
//
// Older hospital systems send ISO 8859 (MSH-18 "8859/1") or Windows code
// pages that mislabel themselves, and the engine must never answer AA for a
// message it cannot carry to its destinations unchanged. The decoders of
// golang.org/x/text replace a byte they do not know with U+FFFD and carry
// on, which would store a silently altered message. So Decode re-encodes
// what it decoded and refuses the input, naming the byte offset, unless the
// two are identical: a message that decodes is one whose bytes come back
// exactly when a destination encodes it in the same character set. That is
// the byte-exact round trip an MLLP-in, MLLP-out lane promises.
//
// # Names
//
// Lookup accepts the codes of HL7 table 0211 (ASCII, 8859/1 ... 8859/9,
// 8859/15, UNICODE UTF-8, GB 18030-2000, KS X 1001, BIG-5, and the DICOM-style
// ISO IR6 and ISO IR100 ... ISO IR148 for the same sets), and IANA names such
// as windows-1252, ISO-8859-1, UTF-8 or US-ASCII, case-insensitively. UTF-16
// and UTF-32 ("UNICODE", "UNICODE UTF-16", "UNICODE UTF-32") and the
// ISO 2022 sets (ISO IR14, ISO IR87, ISO IR159) are refused with a clear
// error: an HL7 message's delimiters are single bytes that those encodings do
// not keep, so such a message cannot be framed or parsed as bytes.
//
// Every set accepted is a superset of ASCII, so text that is all ASCII is
// passed through without copying in either direction.
package charset

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
)

// Charset is a character set a message's bytes are in. The zero value is
// UTF-8.
type Charset struct {
	name  string
	enc   encoding.Encoding // nil for UTF-8 and ASCII
	ascii bool
}

// UTF8 is UNICODE UTF-8, the engine's own text and the default when a
// message does not name its character set.
var UTF8 = Charset{}

// ASCII is 7-bit US-ASCII.
var ASCII = Charset{name: "ASCII", ascii: true}

// ErrUnsupported is returned by Lookup for a name it does not know or a
// character set the engine cannot carry; the error names which.
var ErrUnsupported = errors.New("unsupported character set")

// Name is the character set's name as Lookup was given it in canonical
// form: the HL7 table 0211 code where there is one ("8859/1", "UNICODE
// UTF-8"), else the IANA name ("windows-1252").
func (c Charset) Name() string {
	if c.name == "" {
		return "UNICODE UTF-8"
	}
	return c.name
}

// String returns Name.
func (c Charset) String() string { return c.Name() }

// IsUTF8 reports whether c is UTF-8, in which text and bytes are the same.
func (c Charset) IsUTF8() bool { return c.name == "" }

// hl7Sets maps HL7 table 0211 codes (and the DICOM-style ISO IR names some
// senders put in MSH-18) to their canonical name and encoding.
var hl7Sets = map[string]Charset{
	"ASCII":         ASCII,
	"ISO IR6":       ASCII,
	"8859/1":        {name: "8859/1", enc: charmap.ISO8859_1},
	"ISO IR100":     {name: "8859/1", enc: charmap.ISO8859_1},
	"8859/2":        {name: "8859/2", enc: charmap.ISO8859_2},
	"ISO IR101":     {name: "8859/2", enc: charmap.ISO8859_2},
	"8859/3":        {name: "8859/3", enc: charmap.ISO8859_3},
	"ISO IR109":     {name: "8859/3", enc: charmap.ISO8859_3},
	"8859/4":        {name: "8859/4", enc: charmap.ISO8859_4},
	"ISO IR110":     {name: "8859/4", enc: charmap.ISO8859_4},
	"8859/5":        {name: "8859/5", enc: charmap.ISO8859_5},
	"ISO IR144":     {name: "8859/5", enc: charmap.ISO8859_5},
	"8859/6":        {name: "8859/6", enc: charmap.ISO8859_6},
	"ISO IR127":     {name: "8859/6", enc: charmap.ISO8859_6},
	"8859/7":        {name: "8859/7", enc: charmap.ISO8859_7},
	"ISO IR126":     {name: "8859/7", enc: charmap.ISO8859_7},
	"8859/8":        {name: "8859/8", enc: charmap.ISO8859_8},
	"ISO IR138":     {name: "8859/8", enc: charmap.ISO8859_8},
	"8859/9":        {name: "8859/9", enc: charmap.ISO8859_9},
	"ISO IR148":     {name: "8859/9", enc: charmap.ISO8859_9},
	"8859/15":       {name: "8859/15", enc: charmap.ISO8859_15},
	"UNICODE UTF-8": UTF8,
	"GB 18030-2000": {name: "GB 18030-2000", enc: simplifiedchinese.GB18030},
	"KS X 1001":     {name: "KS X 1001", enc: korean.EUCKR},
	"BIG-5":         {name: "BIG-5", enc: traditionalchinese.Big5},
}

// refused names the sets Lookup knows but will not carry, and why.
var refused = map[string]string{
	"UNICODE":        "UTF-16 and UTF-32 do not keep HL7's single-byte delimiters",
	"UNICODE UTF-16": "UTF-16 and UTF-32 do not keep HL7's single-byte delimiters",
	"UNICODE UTF-32": "UTF-16 and UTF-32 do not keep HL7's single-byte delimiters",
	"ISO IR14":       "ISO 2022 code extensions are not supported",
	"ISO IR87":       "ISO 2022 code extensions are not supported",
	"ISO IR159":      "ISO 2022 code extensions are not supported",
	"CNS 11643-1992": "no decoder for CNS 11643 is available",
}

// Lookup returns the character set named by an HL7 table 0211 code or an
// IANA name, case-insensitively. An empty name is UTF-8.
func Lookup(name string) (Charset, error) {
	key := strings.ToUpper(strings.Join(strings.Fields(name), " "))
	if key == "" {
		return UTF8, nil
	}
	if c, ok := hl7Sets[key]; ok {
		return c, nil
	}
	if why, ok := refused[key]; ok {
		return Charset{}, fmt.Errorf("%w: %q (%s)", ErrUnsupported, name, why)
	}
	enc, err := ianaindex.IANA.Encoding(name)
	if err != nil || enc == nil {
		return Charset{}, fmt.Errorf("%w: %q is neither an HL7 table 0211 code nor an IANA name", ErrUnsupported, name)
	}
	canon, _ := ianaindex.IANA.Name(enc)
	switch enc {
	case unicode.UTF8:
		return UTF8, nil
	case charmap.ISO8859_1:
		return hl7Sets["8859/1"], nil
	}
	if strings.EqualFold(canon, "US-ASCII") {
		return ASCII, nil
	}
	if !asciiCompatible(enc) {
		return Charset{}, fmt.Errorf("%w: %q does not keep ASCII's bytes, so HL7 delimiters and JSON cannot be read in it", ErrUnsupported, name)
	}
	return Charset{name: canon, enc: enc}, nil
}

// asciiCompatible reports whether enc writes every ASCII character as
// that one byte, which framing and parsing rely on (it rules out UTF-16,
// EBCDIC and the like).
func asciiCompatible(enc encoding.Encoding) bool {
	var ascii [128]byte
	for i := range ascii {
		ascii[i] = byte(i)
	}
	out, err := enc.NewEncoder().Bytes(ascii[:])
	return err == nil && bytes.Equal(out, ascii[:])
}

// Error is a byte sequence that does not decode, or a character that does
// not encode, in a character set.
type Error struct {
	Charset string
	// Offset is the byte offset of the problem: in the input bytes for a
	// decode, in the UTF-8 text for an encode.
	Offset int
	// Rune is the character that has no form in Charset (encode only).
	Rune rune
	// Byte is the first byte that does not decode (decode only).
	Byte   byte
	encode bool
}

func (e *Error) Error() string {
	if e.encode {
		return fmt.Sprintf("the character %q (U+%04X) at byte %d has no form in %s", e.Rune, e.Rune, e.Offset, e.Charset)
	}
	return fmt.Sprintf("byte 0x%02X at offset %d is not valid %s", e.Byte, e.Offset, e.Charset)
}

// Decode returns b as UTF-8 text. It fails with an *Error naming the first
// byte that is not a character of c, or whose text would not encode back
// to exactly b. The result may share b's memory.
func (c Charset) Decode(b []byte) ([]byte, error) {
	switch {
	case c.IsUTF8():
		if !utf8.Valid(b) {
			return nil, c.decodeError(b, firstInvalidUTF8(b))
		}
		return b, nil
	case c.ascii:
		if i := firstNonASCII(b); i >= 0 {
			return nil, c.decodeError(b, i)
		}
		return b, nil
	}
	if firstNonASCII(b) < 0 {
		return b, nil
	}
	text, err := c.enc.NewDecoder().Bytes(b)
	if err != nil {
		return nil, c.decodeError(b, c.firstUndecoded(b, text))
	}
	back, err := c.enc.NewEncoder().Bytes(text)
	if err != nil || !bytes.Equal(back, b) {
		return nil, c.decodeError(b, c.firstUndecoded(b, text))
	}
	return text, nil
}

// firstUndecoded returns the offset in b of the first character of text
// that does not encode back to the bytes it came from (a byte the decoder
// replaced with U+FFFD, or one that maps to a character of several byte
// forms). It runs on the error path only, so encoding rune by rune is
// affordable; every set Lookup accepts encodes a rune without state.
func (c Charset) firstUndecoded(b, text []byte) int {
	enc := c.enc.NewEncoder()
	pos := 0
	for _, r := range string(text) {
		form, err := enc.String(string(r))
		if err != nil || !bytes.HasPrefix(b[pos:], []byte(form)) {
			return pos
		}
		pos += len(form)
	}
	return pos
}

// Encode returns UTF-8 text as bytes in c. It fails with an *Error naming
// the first character c has no form for (or the first byte of text that is
// not valid UTF-8). The result may share text's memory.
func (c Charset) Encode(text []byte) ([]byte, error) {
	if !utf8.Valid(text) {
		return nil, UTF8.decodeError(text, firstInvalidUTF8(text))
	}
	if c.IsUTF8() || firstNonASCII(text) < 0 {
		return text, nil
	}
	if c.ascii {
		return nil, c.encodeError(text)
	}
	out, err := c.enc.NewEncoder().Bytes(text)
	if err != nil {
		return nil, c.encodeError(text)
	}
	return out, nil
}

func (c Charset) decodeError(b []byte, at int) *Error {
	at = min(max(at, 0), len(b)-1) // callers pass a non-empty b
	return &Error{Charset: c.Name(), Offset: at, Byte: b[at]}
}

// encodeError finds the first character of text c cannot encode (the
// error path only, so encoding rune by rune is affordable).
func (c Charset) encodeError(text []byte) *Error {
	for i, r := range string(text) {
		if r < utf8.RuneSelf {
			continue
		}
		if c.ascii {
			return &Error{Charset: c.Name(), Offset: i, Rune: r, encode: true}
		}
		if _, err := c.enc.NewEncoder().String(string(r)); err != nil {
			return &Error{Charset: c.Name(), Offset: i, Rune: r, encode: true}
		}
	}
	// Every rune encodes alone: report the first non-ASCII one.
	i := firstNonASCII(text)
	r, _ := utf8.DecodeRune(text[max(i, 0):])
	return &Error{Charset: c.Name(), Offset: max(i, 0), Rune: r, encode: true}
}

func firstNonASCII(b []byte) int {
	for i, c := range b {
		if c >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
