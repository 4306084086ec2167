package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1MiB", want: 1 << 20},
		{in: "256KB", want: 256000},
		{in: "512 kib", want: 512 << 10},
		{in: "4096", want: 4096},
		{in: "2GiB", want: 2 << 30},
		{in: "10B", want: 10},
		{in: "1.5MiB", bad: true},
		{in: "1 MB2", bad: true},
		{in: "1TiB", bad: true},
		{in: "-1", bad: true},
		{in: "99999999999999999999", bad: true},
	}
	for _, tc := range cases {
		got, err := parseSize(tc.in)
		if tc.bad != (err != nil) || (!tc.bad && got != tc.want) {
			t.Errorf("parseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	keys := []string{"retry", "rate_limit", "save_output", "transform", "format"}
	cases := map[string]string{
		"retyr":      `(did you mean "retry"?)`,
		"ratelimit":  `(did you mean "rate_limit"?)`,
		"Transform":  `(did you mean "transform"?)`,
		"tranform":   `(did you mean "transform"?)`,
		"colour":     "",
		"x":          "",
		"saveoutput": `(did you mean "save_output"?)`,
	}
	for in, want := range cases {
		if got := strings.TrimSpace(didYouMean(in, keys)); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseKey(t *testing.T) {
	cases := []struct {
		path string
		f    Format
		ok   bool
	}{
		{"PID-3", FormatHL7v2, true},
		{"PID-3.1", FormatHL7v2, true},
		{"PID-3.1.2", FormatHL7v2, true},
		{"PID-3[2].1", FormatHL7v2, true},
		{"OBX[2]-5", FormatHL7v2, true},
		{"ZP1-1", FormatHL7v2, true},
		{"MSH-10", FormatHL7v2, true},
		{"PID-0", FormatHL7v2, false},
		{"PID-10000", FormatHL7v2, false},
		{"PID-9999.9999.9999", FormatHL7v2, true},
		{"3.1", FormatHL7v2, false},
		{"PID-3.1.2.3", FormatHL7v2, false},
		{"PID.3", FormatHL7v2, false},
		{"pid-3", FormatHL7v2, false},
		{"$.mrn", FormatHL7v2, false},
		{"$.patient.mrn", FormatJSON, true},
		{"$.ids[0]", FormatJSON, true},
		{`$["odd key"].x`, FormatJSON, true},
		{"$", FormatJSON, false},
		{"patient.mrn", FormatJSON, false},
		{"$.a..b", FormatJSON, false},
		{"$.mrn", FormatCSV, true},
		{`$["MRN no"]`, FormatCSV, true},
		{"$.a.b", FormatCSV, false},
		{"$[0]", FormatCSV, false},
		{"$.x", FormatText, false},
	}
	for _, tc := range cases {
		_, msg := parseKey(tc.path, tc.f)
		if (msg == "") != tc.ok {
			t.Errorf("parseKey(%q, %s): %q", tc.path, tc.f, msg)
		}
	}
}

func TestListenClashes(t *testing.T) {
	cases := []struct {
		a, b  string
		clash bool
	}{
		{"127.0.0.1:2575", "127.0.0.1:2575", true},
		{"localhost:2575", "127.0.0.1:2575", true},
		{":2575", "10.0.0.1:2575", true},
		{"0.0.0.0:2575", "[::1]:2575", true},
		{"10.0.0.1:2575", "10.0.0.2:2575", false},
		{"127.0.0.1:2575", "127.0.0.1:2576", false},
		{"127.0.0.1:0", "127.0.0.1:0", false},
	}
	for _, tc := range cases {
		a, m1 := parseListen(tc.a)
		b, m2 := parseListen(tc.b)
		if m1 != "" || m2 != "" {
			t.Fatalf("parseListen: %s %s", m1, m2)
		}
		if a.clashes(b) != tc.clash {
			t.Errorf("%s vs %s: clash = %v", tc.a, tc.b, !tc.clash)
		}
	}
}

func TestFileNameTemplate(t *testing.T) {
	f, msg, _ := compileFileName("/out", `{{.Interface}}-{{.Key}}-{{.ReceivedAt.Format "150405"}}.{{.Ext}}`, "json", "lab", "results")
	if msg != "" {
		t.Fatal(msg)
	}
	got, err := f.FileName(FileMessage{ID: "1", ReceivedAt: time.Date(2026, 1, 2, 13, 14, 15, 0, time.UTC), Key: "../../etc/passwd"})
	if err != nil || got != "lab-.._.._etc_passwd-131415.json" {
		t.Errorf("FileName = %q, %v", got, err)
	}
	if _, msg, _ := compileFileName("/out", "{{.ID", "hl7", "a", "b"); !strings.Contains(msg, "bad name template") {
		t.Errorf("unclosed action: %q", msg)
	}
	if _, msg, _ := compileFileName("/out", ".{{.ID}}", "hl7", "a", "b"); !strings.Contains(msg, "must not start with a dot") {
		t.Errorf("dot-file: %q", msg)
	}
	if _, _, warn := compileFileName("/out", "{{.Key}}.hl7", "hl7", "a", "b"); warn == "" {
		t.Errorf("a name without the ID should warn")
	}
}
