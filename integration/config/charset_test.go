package config

import (
	"testing"

	"github.com/ductus/ductus/integration/charset"
)

func TestCharsetKeys(t *testing.T) {
	// Lines: baseFiles' interface.yaml has destinations.emr's keys on
	// lines 6-8, so a destination key added by mllpIface is line 9 and an
	// interface key after it line 10.
	cases := []struct {
		name     string
		files    map[string]string
		iface    string // the interface's charset's name when it loads, "" for none
		dest     string // emr's
		problems []want
	}{
		{name: "none", files: map[string]string{ifFile: mllpIface("", "")}},
		{name: "interface override and destination", files: map[string]string{ifFile: mllpIface("    charset: UNICODE UTF-8\n", "charset: windows-1252\n")},
			iface: "windows-1252", dest: "UNICODE UTF-8"},
		{name: "HL7 and IANA names are canonical", files: map[string]string{ifFile: mllpIface("    charset: ISO-8859-1\n", "charset: iso ir100\n")},
			iface: "8859/1", dest: "8859/1"},
		{name: "unknown interface charset", files: map[string]string{ifFile: mllpIface("", "charset: klingon\n")},
			problems: []want{{ifFile, 9, "charset", `"klingon": unsupported character set`}}},
		{name: "refused destination charset", files: map[string]string{ifFile: mllpIface("    charset: UNICODE UTF-16\n", "")},
			problems: []want{{ifFile, 9, "destinations.emr.charset", `"UNICODE UTF-16": unsupported character set`}}},
		{name: "empty charset", files: map[string]string{ifFile: mllpIface("    charset: \"\"\n", "")},
			problems: []want{{ifFile, 9, "destinations.emr.charset", `want a character set`}}},
		{name: "JSON output is UTF-8", files: map[string]string{ifFile: `format: json
source: { type: http, listen: 127.0.0.1:8080 }
destinations:
  out: { type: http, url: "http://127.0.0.1:1/x", charset: 8859/1 }
`}, problems: []want{{ifFile, 4, "destinations.out.charset", "JSON output is always UTF-8"}}},
		{name: "no charset on a schedule", files: map[string]string{ifFile: `source: { type: schedule, every: 1m }
charset: 8859/1
destinations:
  out: { type: file, path: out }
`}, problems: []want{{ifFile, 2, "charset", "receives no bytes from outside"}}},
		{name: "no charset on a route", files: map[string]string{
			ifFile:                            mllpIface("", "  hop: { type: interface, interface: inner, charset: 8859/1 }\n"),
			"interfaces/inner/interface.yaml": "format: hl7v2\nsource: { type: internal }\ndestinations:\n  out: { type: file, path: out }\n",
			"interfaces/inner/transform.js":   "function transform(m) { return m; }\n",
		}, problems: []want{{ifFile, 9, "destinations.hop.charset", "a route hands text to another interface"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeProject(t, c.files)
			if len(c.problems) > 0 {
				matchProblems(t, loadProblems(t, dir, env(nil)), c.problems)
				return
			}
			p, err := Load(dir, env(nil))
			if err != nil {
				t.Fatal(err)
			}
			in := p.Interface("adt")
			if got := charsetName(in.Charset); got != c.iface {
				t.Errorf("interface charset = %q, want %q", got, c.iface)
			}
			if got := charsetName(in.Destination("emr").Charset); got != c.dest {
				t.Errorf("destination charset = %q, want %q", got, c.dest)
			}
		})
	}
}

func charsetName(c *charset.Charset) string {
	if c == nil {
		return ""
	}
	return c.Name()
}
