package hl7

import (
	"errors"
	"strings"
	"testing"
)

const adt = "MSH|^~\\&|EPIC|GH|DUCTUS|ENGINE|20260105081500||ADT^A01^ADT_A01|MSG00001|P|2.5.1\r" +
	"EVN|A01|20260105081500\r" +
	"PID|1||1000123^^^GH^MR~A0001^^^GH^AN||O'BRIEN^MARY^J||19800214|F|||12 SMITH \\T\\ SONS RD^^SPRINGFIELD^IL^62704||(217)555-0101\r" +
	"PV1|1|I|4N^401^A^GH||||1234567^HOUSE^GREGORY^^^DR^MD\r" +
	"OBX|1|NM|6690-2^WBC^LN||7.5|10*3/uL|4.5-11.0|N\r" +
	"OBX|2|TX|NOTE^Note||line one\\.br\\line two \\F\\ pipe|||\r"

func mustParse(t *testing.T, text string) *Message {
	t.Helper()
	m, err := ParseString(text)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

func TestGet(t *testing.T) {
	m := mustParse(t, adt)
	tests := []struct{ path, want string }{
		{"MSH-1", "|"},
		{"MSH-2", "^~\\&"},
		{"MSH-3", "EPIC"},
		{"MSH-9", "ADT^A01^ADT_A01"},
		{"MSH-9.1", "ADT"},
		{"MSH-9.2", "A01"},
		{"MSH-9.3", "ADT_A01"},
		{"MSH-9.4", ""},
		{"MSH-10", "MSG00001"},
		{"MSH-12", "2.5.1"},
		{"MSH-13", ""},
		{"PID-3", "1000123^^^GH^MR"},
		{"PID-3.1", "1000123"},
		{"PID-3[1].1", "1000123"},
		{"PID-3[2].1", "A0001"},
		{"PID-3[2].5", "AN"},
		{"PID-3[3].1", ""},
		{"PID-5.1", "O'BRIEN"},
		{"pid-5.2", "MARY"},
		{"PID-11.1", "12 SMITH & SONS RD"},
		{"PID-11", "12 SMITH & SONS RD^^SPRINGFIELD^IL^62704"},
		{"PID-7[2]", ""},
		{"PV1-7.2", "HOUSE"},
		{"PV1-7.1.1", "1234567"},
		{"PV1-7.1.2", ""},
		{"OBX-5", "7.5"},
		{"OBX[1]-5", "7.5"},
		{"OBX[2]-5", "line one\\.br\\line two | pipe"},
		{"OBX[3]-5", ""},
		{"ZZZ-1", ""},
		{"PID-99", ""},
		{"bad path", ""},
		{"3.1", ""}, // a message path needs a segment
	}
	for _, tt := range tests {
		if got := m.Get(tt.path); got != tt.want {
			t.Errorf("Get(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got := m.Type(); got != "ADT^A01" {
		t.Errorf("Type() = %q", got)
	}
	if m.ControlID() != "MSG00001" || m.Version() != "2.5.1" {
		t.Errorf("ControlID %q Version %q", m.ControlID(), m.Version())
	}
}

func TestRoundTripByteIdentical(t *testing.T) {
	tests := []struct{ name, in string }{
		{"sample", adt},
		{"no final CR", strings.TrimSuffix(adt, "\r")},
		{"trailing separators", "MSH|^~\\&|A|B|||||||\rPID|||||\rZZZ|\\Zfoo\\|\\H\\bold\\N\\|\\\r"},
		{"odd delimiters", "MSH#*!@%#A#B\rPID#1#a*b!c#\r"},
		{"truncation char", "MSH|^~\\&#|A|B\rPID|1|x\\P\\y#\r"},
		{"lower-case segment", "MSH|^~\\&|A\rzpi|1\r"},
		{"segment name only", "MSH|^~\\&\rPID\rNTE\r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustParse(t, tt.in)
			m.Get("PID-3.1") // splitting a segment must not change its text
			if got := m.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
		})
	}
}

func TestSegmentEnds(t *testing.T) {
	cr := "MSH|^~\\&|A\rPID|1||42\rPV1|1|I\r"
	for name, in := range map[string]string{
		"CR":    cr,
		"LF":    strings.ReplaceAll(cr, "\r", "\n"),
		"CRLF":  strings.ReplaceAll(cr, "\r", "\r\n"),
		"mixed": "MSH|^~\\&|A\r\nPID|1||42\nPV1|1|I\r",
		"blank": "MSH|^~\\&|A\r\n\r\nPID|1||42\n\n\rPV1|1|I\r\n\r\n",
		"BOM":   bom + cr,
	} {
		m := mustParse(t, in)
		if got := m.String(); got != cr {
			t.Errorf("%s: String() = %q, want %q", name, got, cr)
		}
		if got := len(m.Segments("")); got != 3 {
			t.Errorf("%s: %d segments", name, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		segment  int
		offset   int
		reason   string
	}{
		{"empty", "", 0, 0, "the input is empty"},
		{"not HL7", `{"json": true}`, 0, 0, "must start with an MSH segment"},
		{"leading space", " MSH|^~\\&", 0, 0, "must start with an MSH segment"},
		{"too short", "MSH|^~\\", 1, 0, "too short"},
		{"letter separator", "MSHX^~\\&|", 1, 3, "MSH-1"},
		{"space separator", "MSH ^~\\&|", 1, 3, "MSH-1"},
		{"three encoding chars", "MSH|^~\\|A|B", 1, 4, "4 or 5 characters"},
		{"six encoding chars", "MSH|^~\\&#$|A", 1, 4, "4 or 5 characters"},
		{"encoding ends at CR", "MSH|^~\r\\&|A", 1, 4, "4 or 5 characters"},
		{"repeated delimiter", "MSH|^~^&|A", 1, 3, "repeat"},
		{"digit delimiter", "MSH|^~\\1|A", 1, 3, "punctuation"},
		{"bad segment name", "MSH|^~\\&|A\rP-D|1\r", 2, 11, "three-character name"},
		{"short segment", "MSH|^~\\&|A\rPI\r", 2, 11, "three-character name"},
		{"no separator after name", "MSH|^~\\&|A\rPID^1\r", 2, 14, "not followed by the field separator"},
		{"second MSH", "MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\r", 3, 17, "second MSH"},
		{"BOM offset", bom + "XYZ", 0, 3, "must start with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseString(tt.in)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Segment != tt.segment || pe.Offset != tt.offset || !strings.Contains(pe.Reason, tt.reason) {
				t.Errorf("got segment %d offset %d %q; want segment %d offset %d containing %q", pe.Segment, pe.Offset, pe.Reason, tt.segment, tt.offset, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "hl7: ") {
				t.Errorf("error text %q", err)
			}
		})
	}
}

func TestDelimitersFromMSH(t *testing.T) {
	m := mustParse(t, "MSH#*!@%#A#B\rPID#1#a*b!c*d@e@f\r")
	d := m.Delimiters()
	want := Delimiters{Field: '#', Component: '*', Repetition: '!', Escape: '@', Subcomponent: '%'}
	if d != want {
		t.Fatalf("delimiters %+v, want %+v", d, want)
	}
	for path, v := range map[string]string{"MSH-1": "#", "MSH-2": "*!@%", "MSH-3": "A", "PID-2.2": "b", "PID-2[2].2": "d@e@f", "PID-2[2].1": "c"} {
		if got := m.Get(path); got != v {
			t.Errorf("Get(%q) = %q, want %q", path, got, v)
		}
	}
	// @e@ is not an escape sequence it knows: kept as it stands.
	if got := m.Raw("PID-2[2]"); got != "c*d@e@f" {
		t.Errorf("Raw = %q", got)
	}
	if err := m.Set("PID-3", "x#y*z"); err != nil {
		t.Fatal(err)
	}
	if got := m.Raw("PID-3"); got != "x@F@y@S@z" {
		t.Errorf("escaped with the message's own delimiters: %q", got)
	}
}

func TestCountAndGetAll(t *testing.T) {
	m := mustParse(t, adt)
	for what, want := range map[string]int{"OBX": 2, "obx": 2, "PID": 1, "ZZZ": 0, "PID-3": 2, "PID-5": 1, "PID-4": 0, "MSH-1": 1, "MSH-2": 1, "OBX[2]-5": 1, "bad": 0} {
		if got := m.Count(what); got != want {
			t.Errorf("Count(%q) = %d, want %d", what, got, want)
		}
	}
	got := m.GetAll("PID-3.1")
	if strings.Join(got, ",") != "1000123,A0001" {
		t.Errorf("GetAll = %q", got)
	}
	if m.GetAll("PID-3[1]") != nil {
		t.Error("GetAll with a repetition should give nil")
	}
	if s := m.Segment("OBX", 2); s == nil || s.Get("1") != "2" || s.Get("OBX-3.2") != "Note" || s.Get("PID-3") != "" {
		t.Errorf("Segment(OBX, 2) = %v", s)
	}
	if m.Segment("OBX", 3) != nil || m.Segment("OBX", 0) != nil {
		t.Error("out-of-range segment occurrence")
	}
	if n := m.Segment("MSH", 1).Fields(); n != 12 {
		t.Errorf("MSH Fields() = %d", n)
	}
	if n := m.Segment("PV1", 1).Fields(); n != 7 {
		t.Errorf("PV1 Fields() = %d", n)
	}
}
