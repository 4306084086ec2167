package format

import (
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/hl7"
)

func TestKey(t *testing.T) {
	msg := "MSH|^~\\&|A|B|C|D|20260101||ADT^A01|CTRL9|P|2.5\rPID|1||M123^^^GH^MR~A9^^^GH^AN||DOE^JO\rOBX|1|NM|x||1\rOBX|2|NM|y||2\r"
	doc := `{"patient":{"mrn":"M123","ids":[{"id":7},{"id":8.50}],"odd key":true,"n":null,"o":{}},"items":[{"id":"a"}],"top":1}`
	tests := []struct {
		f             Name
		payload, path string
		want, err     string
	}{
		{HL7v2, msg, "PID-3.1", "M123", ""},
		{HL7v2, msg, "PID-3[2].1", "A9", ""},
		{HL7v2, msg, "MSH-10", "CTRL9", ""},
		{HL7v2, msg, "OBX[2]-5", "2", ""},
		{HL7v2, msg, "PV1-19", "", ""},
		{HL7v2, "not hl7", "PID-3", "", "must start with an MSH segment"},
		{JSON, doc, "$.patient.mrn", "M123", ""},
		{JSON, doc, "patient.mrn", "M123", ""},
		{JSON, doc, "items[0].id", "a", ""},
		{JSON, doc, "$.patient.ids[1].id", "8.50", ""},
		{JSON, doc, "$.patient.ids[0].id", "7", ""},
		{JSON, doc, `$.patient["odd key"]`, "true", ""},
		{JSON, doc, `patient['odd key']`, "true", ""},
		{JSON, doc, "$.patient.n", "", ""},
		{JSON, doc, "$.patient.missing", "", ""},
		{JSON, doc, "$.items[5].id", "", ""},
		{JSON, doc, "$.top.deeper", "", ""},
		{JSON, doc, "$.patient[0]", "", ""},
		{JSON, doc, "$.items.id", "", ""},
		{JSON, doc, "$.patient.o", "", "object or array"},
		{JSON, `"whole"`, "$", "whole", ""},
		{JSON, `{"a":1}{"b":2}`, "a", "", "more data"},
		{JSON, `{"a":`, "a", "", "not JSON"},
		{CSV, "mrn,name\nM1,Ann\n", "mrn", "M1", ""},
		{CSV, "mrn,name\nM1,Ann\n", "$.name", "Ann", ""},
		{CSV, "mrn,name\nM1,Ann\n", "nope", "", ""},
		{CSV, "mrn,name\n", "mrn", "", ""},
		{CSV, "mrn,mrn\n1,2\n", "mrn", "", "both named"},
	}
	for _, tt := range tests {
		got, err := Key(tt.f, []byte(tt.payload), tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Key(%s, %q) = %q, %v; want error %q", tt.f, tt.path, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Key(%s, %q) = %q, %v; want %q", tt.f, tt.path, got, err, tt.want)
		}
		// The key read from a message parsed once at intake is the same.
		if tt.f == HL7v2 {
			m, err := hl7.Parse([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			k, _ := CompileKey(tt.f, tt.path)
			if got, err := k.ExtractParsed([]byte("not even hl7"), m); err != nil || got != tt.want {
				t.Errorf("ExtractParsed(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		}
	}
}

func TestCompileKeyErrors(t *testing.T) {
	for _, tt := range []struct {
		f          Name
		path, want string
	}{
		{HL7v2, "3.1", "starts with a segment name"},
		{HL7v2, "PID-0", "positions start at 1"},
		{HL7v2, "$.mrn", "bad path"},
		{JSON, "", "empty"},
		{JSON, "$.", `nothing after "$."`},
		{JSON, "$x", `"$" must be followed`},
		{JSON, ".a", `cannot start with "."`},
		{JSON, "a..b", "empty key between dots"},
		{JSON, "a.", "empty key between dots"},
		{JSON, "a[1", "missing ]"},
		{JSON, "a[-1]", "not an array index"},
		{JSON, "a[x]", "not an array index"},
		{JSON, `a["b]`, "not closed"},
		{JSON, `a]`, "has a bracket or quote"},
		{CSV, "a.b", "one column name"},
		{CSV, "[0]", "one column name"},
		{Text, "x", "text message has no fields"},
		{"xml", "x", "unknown format"},
	} {
		if _, err := CompileKey(tt.f, tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileKey(%s, %q) = %v, want %q", tt.f, tt.path, err, tt.want)
		}
	}
	k, err := CompileKey(JSON, "$.a")
	if err != nil || k.String() != "$.a" {
		t.Fatalf("%v %v", k, err)
	}
}

func TestFNV1a32(t *testing.T) {
	// Vectors from the FNV reference test suite (Landon Curt Noll).
	for in, want := range map[string]uint32{
		"":       0x811c9dc5,
		"a":      0xe40c292c,
		"b":      0xe70c2de5,
		"c":      0xe60c2c52,
		"d":      0xe10c2473,
		"e":      0xe00c22e0,
		"f":      0xe30c2799,
		"fo":     0x6222e842,
		"foo":    0xa9f37ed7,
		"foob":   0x3f5076ef,
		"fooba":  0x39aaa18a,
		"foobar": 0xbf9cf968,
	} {
		if got := FNV1a32(in); got != want {
			t.Errorf("FNV1a32(%q) = %#x, want %#x", in, got, want)
		}
	}
	for _, s := range []string{"M123", "1000123", "ÄÖÜ", "\x00\xff", strings.Repeat("x", 1000)} {
		h := fnv.New32a()
		h.Write([]byte(s))
		if got := FNV1a32(s); got != h.Sum32() {
			t.Errorf("FNV1a32(%q) = %#x, hash/fnv says %#x", s, got, h.Sum32())
		}
	}
}

func TestLane(t *testing.T) {
	// Fixed forever: a change here would move queued messages between lanes.
	for _, tt := range []struct {
		key        string
		partitions int
		want       int
	}{
		{"", 64, int(0x811c9dc5 % 64)},
		{"foobar", 64, int(0xbf9cf968 % 64)},
		{"a", 7, int(0xe40c292c % 7)},
		{"a", 1, 0},
		{"a", 0, 0},
		{"a", -5, 0},
	} {
		if got := Lane(tt.key, tt.partitions); got != tt.want {
			t.Errorf("Lane(%q, %d) = %d, want %d", tt.key, tt.partitions, got, tt.want)
		}
	}
	counts := make([]int, 64)
	for i := range 64_000 {
		l := Lane("MRN"+strconv.Itoa(1_000_000+i), 64)
		if l < 0 || l >= 64 {
			t.Fatalf("lane %d out of range", l)
		}
		counts[l]++
	}
	for l, n := range counts {
		if n < 700 || n > 1300 { // 1000 expected: a spread, not a speed
			t.Errorf("lane %d got %d of 64000 keys", l, n)
		}
	}
}
