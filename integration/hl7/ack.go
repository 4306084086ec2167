package hl7

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Acknowledgement codes (HL7 table 0008). AA, AE and AR are original mode;
// CA, CE and CR enhanced mode's accept acknowledgements.
const (
	CodeAA = "AA" // accepted
	CodeAE = "AE" // error: the sender should retry
	CodeAR = "AR" // rejected: retrying will not help
	CodeCA = "CA" // commit accept
	CodeCE = "CE" // commit error
	CodeCR = "CR" // commit reject
)

// Outcome is what the receiver decided about a message, independent of the
// acknowledgement mode that words it.
type Outcome int

// The outcomes of receiving a message.
const (
	// Accepted: the message is stored (AA / CA).
	Accepted Outcome = iota
	// Errored: it could not be stored now; the sender should retry (AE / CE).
	Errored
	// Rejected: it is refused and a retry will not help (AR / CR).
	Rejected
)

// AckMode is original or enhanced acknowledgement.
type AckMode int

// The two acknowledgement modes.
const (
	// Original mode: one application acknowledgement, AA, AE or AR.
	Original AckMode = iota
	// Enhanced mode: an accept acknowledgement, CA, CE or CR, sent when
	// MSH-15 asks for one.
	Enhanced
)

// ModeOf returns Enhanced when MSH-15 (accept acknowledgment type) holds
// one of AL, ER, SU or NE, and Original otherwise: an empty or unknown
// MSH-15 means the sender did not ask for enhanced mode.
func ModeOf(m *Message) AckMode {
	switch acceptType(m) {
	case "AL", "ER", "SU", "NE":
		return Enhanced
	}
	return Original
}

func acceptType(m *Message) string {
	return strings.ToUpper(strings.TrimSpace(m.Get("MSH-15")))
}

// Code returns the acknowledgement code for an outcome in mode.
func (mode AckMode) Code(o Outcome) string {
	codes := [2][3]string{{CodeAA, CodeAE, CodeAR}, {CodeCA, CodeCE, CodeCR}}
	if mode != Enhanced {
		mode = Original
	}
	if o < Accepted || o > Rejected {
		o = Rejected
	}
	return codes[mode][o]
}

// CodeFor returns the acknowledgement code for an outcome in m's mode.
func CodeFor(m *Message, o Outcome) string { return ModeOf(m).Code(o) }

// AckWanted reports whether the sender of m asked for an acknowledgement
// of this outcome. In original mode it always does. In enhanced mode MSH-15
// decides: AL always, NE never, ER only for errors and rejections, SU only
// for success. A listener that keeps one connection per sender usually
// answers anyway, since a sender waiting on a socket cannot tell "none
// wanted" from "lost".
func AckWanted(m *Message, o Outcome) bool {
	switch acceptType(m) {
	case "NE":
		return false
	case "ER":
		return o != Accepted
	case "SU":
		return o == Accepted
	}
	return true
}

// ACKOptions tune BuildACK. The zero value is ready to use.
type ACKOptions struct {
	// ControlID returns the ACK's MSH-10; nil uses NewControlID.
	ControlID func() string
	// Now returns the time for MSH-7; nil uses time.Now.
	Now func() time.Time
	// ErrorCode is the HL7 error code (table 0357) put in the ERR segment of
	// an AE/AR/CE/CR that has a text; "" means 207, application internal
	// error.
	ErrorCode string
}

// errorName is table 0357's description of code, written next to it.
func errorName(code string) string {
	switch code {
	case "0":
		return "Message accepted"
	case "100":
		return "Segment sequence error"
	case "101":
		return "Required field missing"
	case "102":
		return "Data type error"
	case "103":
		return "Table value not found"
	case "104":
		return "Value too long"
	case "200":
		return "Unsupported message type"
	case "201":
		return "Unsupported event code"
	case "202":
		return "Unsupported processing id"
	case "203":
		return "Unsupported version id"
	case "204":
		return "Unknown key identifier"
	case "205":
		return "Duplicate key identifier"
	case "206":
		return "Application record locked"
	case "207":
		return "Application internal error"
	}
	return ""
}

// NewControlID returns a fresh message control ID: 20 upper-case hex
// characters (80 random bits), the most MSH-10 holds before v2.7.
func NewControlID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

func validCode(code string) bool {
	switch code {
	case CodeAA, CodeAE, CodeAR, CodeCA, CodeCE, CodeCR:
		return true
	}
	return false
}

// BuildACK answers msg by the HL7 rules: the MSH's sending and receiving
// application and facility swapped (MSH-3/4 with MSH-5/6), MSH-7 now, a
// fresh MSH-10, MSH-9 "ACK^<MSH-9.2>^ACK", MSH-11 and MSH-12 copied, then
// MSA with code, msg's MSH-10 and text, and for a code other than AA/CA
// with a text an ERR segment carrying it. The ACK uses msg's delimiters and
// ends every segment with CR. Use CodeFor to pick the code in msg's mode.
//
// MSH-7 is written as YYYYMMDDHHMMSS±ZZZZ. MSH-15 and MSH-16 stay empty (an
// acknowledgement is never acknowledged), and so does MSH-18 (character
// set): the ACK's own text is what the caller gives, not the sender's.
func BuildACK(msg *Message, code, text string, opts ACKOptions) (*Message, error) {
	if !validCode(code) {
		return nil, fmt.Errorf("hl7: %q is not an acknowledgement code (AA, AE, AR, CA, CE or CR)", code)
	}
	h := header{
		d:          msg.d,
		sendApp:    msg.Raw("MSH-5"),
		sendFac:    msg.Raw("MSH-6"),
		recvApp:    msg.Raw("MSH-3"),
		recvFac:    msg.Raw("MSH-4"),
		trigger:    msg.Raw("MSH-9.2"),
		processing: msg.Raw("MSH-11"),
		version:    msg.Raw("MSH-12"),
		ackOf:      msg.Raw("MSH-10"),
	}
	return h.build(code, text, opts)
}

// BuildRejectACK answers input that could not be parsed as a message: a
// minimal ACK with code AR (CR when a readable MSH asked for enhanced mode)
// and text as the reason, and error code 100 unless opts say otherwise.
// What can be read of the input's MSH segment
// (applications, facilities, control ID, version) is used; otherwise the
// ACK has the default delimiters and version 2.5.
func BuildRejectACK(raw []byte, text string, opts ACKOptions) *Message {
	h := header{d: DefaultDelimiters(), processing: "P", version: "2.5"}
	code := CodeAR
	if m := salvageMSH(raw); m != nil {
		h = header{
			d: m.d, sendApp: m.Raw("MSH-5"), sendFac: m.Raw("MSH-6"), recvApp: m.Raw("MSH-3"), recvFac: m.Raw("MSH-4"),
			trigger: m.Raw("MSH-9.2"), processing: m.Raw("MSH-11"), version: m.Raw("MSH-12"), ackOf: m.Raw("MSH-10"),
		}
		code = CodeFor(m, Rejected)
	}
	if opts.ErrorCode == "" {
		opts.ErrorCode = "100"
	}
	ack, err := h.build(code, text, opts)
	if err != nil {
		panic("hl7: BuildRejectACK: " + err.Error()) // the code is always valid
	}
	return ack
}

// salvageMSH parses the first line of raw alone, when it is an MSH segment.
func salvageMSH(raw []byte) *Message {
	text := string(raw)
	text = strings.TrimPrefix(text, bom)
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i]
	}
	m, err := ParseString(text)
	if err != nil {
		return nil
	}
	return m
}

type header struct {
	d                                  Delimiters
	sendApp, sendFac, recvApp, recvFac string
	trigger, processing, version       string
	ackOf                              string
}

func (h header) build(code, text string, opts ACKOptions) (*Message, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	id := NewControlID
	if opts.ControlID != nil {
		id = opts.ControlID
	}
	d := h.d
	fs := string(d.Field)
	typ := "ACK"
	if h.trigger != "" {
		typ = "ACK" + string(d.Component) + h.trigger + string(d.Component) + "ACK"
	}
	msh := strings.Join([]string{"MSH", d.Encoding(), h.sendApp, h.sendFac, h.recvApp, h.recvFac,
		now().Format("20060102150405-0700"), "", typ, Escape(id(), d), h.processing, h.version}, fs)
	msa := "MSA" + fs + code + fs + h.ackOf
	if text != "" {
		msa += fs + Escape(text, d)
	}
	lines := []string{msh, msa}
	if text != "" && code != CodeAA && code != CodeCA {
		lines = append(lines, h.errSegment(text, opts.ErrorCode))
	}
	m, err := ParseString(strings.Join(lines, "\r") + "\r")
	if err != nil {
		return nil, fmt.Errorf("hl7: building the ACK: %w", err)
	}
	return m, nil
}

// errSegment words the error as the message's version expects: v2.5 and
// later have ERR-3 (code), ERR-4 (severity) and ERR-8 (user message); older
// versions have only ERR-1, whose fourth component is the code.
func (h header) errSegment(text, code string) string {
	if code == "" {
		code = "207"
	}
	d := h.d
	fs, cs, ss := string(d.Field), string(d.Component), string(d.Subcomponent)
	name := errorName(code)
	if versionAtLeast(Unescape(pick(h.version, d.Component, 1), d), 2, 5) {
		cwe := Escape(code, d) + cs + Escape(name, d) + cs + "HL70357"
		return strings.Join([]string{"ERR", "", "", cwe, "E", "", "", "", Escape(text, d)}, fs)
	}
	return "ERR" + fs + cs + cs + cs + Escape(code, d) + ss + Escape(name, d) + ss + "HL70357"
}

// versionAtLeast compares "2.5.1" with major.minor; an unreadable version
// counts as new (the ERR layout of current versions).
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return true
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return a > major || a == major && b >= minor
}

// ErrNotACK is matched by the error ParseACK returns for a message that is
// HL7 but not an acknowledgement.
var ErrNotACK = errors.New("hl7: not an acknowledgement")

// ParseACK reads an acknowledgement: MSA-1 (the code, upper-cased), MSA-2
// (the control ID it acknowledges) and the text: MSA-3, or when that is
// empty the ERR segment's user message (ERR-8), error code text (ERR-3.2)
// or ERR-1's code text.
func ParseACK(raw []byte) (code, controlID, text string, err error) {
	m, err := Parse(raw)
	if err != nil {
		return "", "", "", err
	}
	msa := m.Segment("MSA", 1)
	if msa == nil {
		return "", "", "", fmt.Errorf("%w: the message (%s) has no MSA segment", ErrNotACK, m.Type())
	}
	code = strings.ToUpper(strings.TrimSpace(msa.Get("1")))
	if !validCode(code) {
		return "", "", "", fmt.Errorf("%w: MSA-1 is %q, not AA, AE, AR, CA, CE or CR", ErrNotACK, msa.Get("1"))
	}
	controlID = msa.Get("2")
	text = msa.Get("3")
	if text == "" {
		if e := m.Segment("ERR", 1); e != nil {
			for _, p := range []string{"8", "3.2", "1.4.2"} {
				if text = e.Get(p); text != "" {
					break
				}
			}
		}
	}
	return code, controlID, text, nil
}

// TypeOf is the message type of raw's header (MSH-9.1 and MSH-9.2 joined
// by "^" whatever the message's component separator, e.g. "ADT^A01"),
// read from its first segment alone, or "" when raw does not start with
// an MSH segment. It costs a parse of one line: the intake reads it for
// every message it has not parsed whole.
func TypeOf(raw []byte) string {
	m := salvageMSH(raw)
	if m == nil {
		return ""
	}
	return SearchType(m)
}

// SearchType is m's type as TypeOf writes it.
func SearchType(m *Message) string {
	t, e := m.Get("MSH-9.1"), m.Get("MSH-9.2")
	if e == "" {
		return t
	}
	return t + "^" + e
}
