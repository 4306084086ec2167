package hl7

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes the parser panic or hang, and that
// what it accepts survives serialising: parse → String → parse gives the
// same values at every path, an input already in the canonical form comes
// back byte-identical, and a value set is the value read back.
func FuzzParse(f *testing.F) {
	f.Add([]byte(adt))
	f.Add([]byte("MSH|^~\\&#|A\nPID|1||a~b^c&d\\P\\\r\nOBX|1\r\r"))
	f.Add([]byte("MSH#*!@%#A@X41@#@.br@\rZZZ#1"))
	f.Add([]byte("MSH|^~\\&|A\rMSA|AE|C1|text\rERR|||207^x^HL70357|E||||why\r"))
	f.Add([]byte("MSH|^~"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Offset < 0 || pe.Offset > len(data) {
				t.Fatalf("offset %d outside the input of %d bytes", pe.Offset, len(data))
			}
			_ = BuildRejectACK(data, err.Error(), ACKOptions{})
			return
		}
		out := m.String()
		canonical := !strings.ContainsAny(string(data), "\n") && !strings.Contains(string(data), "\r\r") && !strings.HasPrefix(string(data), bom)
		if canonical && out != string(data) {
			t.Fatalf("canonical input changed:\n%q\n%q", data, out)
		}
		m2, err := ParseString(out)
		if err != nil {
			t.Fatalf("serialised message does not parse: %v\n%q", err, out)
		}
		if m2.String() != out {
			t.Fatalf("second serialisation differs:\n%q\n%q", out, m2.String())
		}
		segs := m.Segments("")
		if len(segs) != len(m2.Segments("")) {
			t.Fatal("segment count changed")
		}
		seen := map[string]int{}
		for i, s := range segs {
			if i >= 16 {
				break
			}
			seen[s.Name()]++
			for field := 1; field <= min(s.Fields(), 10); field++ {
				for rep := 0; rep <= 2; rep++ {
					for comp := 0; comp <= 3; comp++ {
						for sub := 0; sub <= min(comp, 2); sub++ {
							p := Path{Segment: s.Name(), SegmentIndex: seen[s.Name()], Field: field, Repetition: rep, Component: comp, Subcomponent: sub}
							if a, b := m.GetPath(p), m2.GetPath(p); a != b {
								t.Fatalf("%s: %q before, %q after serialising", p, a, b)
							}
						}
					}
				}
			}
		}
		value := string(data[:min(len(data), 40)])
		if err := m2.Set("ZZZ-2[2].3.2", value); err != nil {
			t.Fatalf("Set: %v", err)
		}
		if got := m2.Get("ZZZ-2[2].3.2"); got != value {
			t.Fatalf("Get after Set = %q, want %q", got, value)
		}
		m3, err := ParseString(m2.String())
		if err != nil {
			t.Fatalf("message after Set does not parse: %v", err)
		}
		if got := m3.Get("ZZZ-2[2].3.2"); got != value {
			t.Fatalf("after re-parse %q, want %q", got, value)
		}
		if _, err := BuildACK(m, CodeFor(m, Errored), value, ACKOptions{}); err != nil {
			t.Fatalf("BuildACK: %v", err)
		}
	})
}
