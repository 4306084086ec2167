package hl7

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestGeneratorDeterministic(t *testing.T) {
	a, err := NewGenerator(GeneratorOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewGenerator(GeneratorOptions{Seed: 7})
	c, _ := NewGenerator(GeneratorOptions{Seed: 8})
	same := true
	for range 50 {
		x, y, z := a.Next(), b.Next(), c.Next()
		if !bytes.Equal(x.Bytes, y.Bytes) {
			t.Fatalf("same seed, different messages:\n%q\n%q", x.Bytes, y.Bytes)
		}
		same = same && bytes.Equal(x.Bytes, z.Bytes)
	}
	if same {
		t.Error("different seeds gave the same messages")
	}
}

func TestGeneratedMessages(t *testing.T) {
	g, err := NewGenerator(GeneratorOptions{Seed: 1, Patients: 5, ControlIDPrefix: "RUN42-"})
	if err != nil {
		t.Fatal(err)
	}
	pool := map[string]bool{}
	for _, mrn := range g.MRNs() {
		pool[mrn] = true
	}
	if len(pool) != 5 {
		t.Fatalf("MRN pool %v", g.MRNs())
	}
	ids := map[string]bool{}
	types := map[string]int{}
	perMRN := map[string]int{}
	last := time.Time{}
	for i := 1; i <= 400; i++ {
		s := g.Next()
		m, err := Parse(s.Bytes)
		if err != nil {
			t.Fatalf("message %d does not parse: %v\n%q", i, err, s.Bytes)
		}
		if s.Seq != i || m.ControlID() != s.ControlID || !strings.HasPrefix(s.ControlID, "RUN42-") || len(s.ControlID) > 20 || ids[s.ControlID] {
			t.Fatalf("message %d: seq %d control ID %q", i, s.Seq, s.ControlID)
		}
		ids[s.ControlID] = true
		if m.Get("PID-3.1") != s.MRN || !pool[s.MRN] || m.Get("PID-3.5") != "MR" {
			t.Fatalf("MRN %q / %q not from the pool", m.Get("PID-3.1"), s.MRN)
		}
		perMRN[s.MRN]++
		if m.Type() != s.Type || m.Get("MSH-9.3") == "" || m.Version() != "2.5.1" || m.Get("MSH-3") != "DUCTUS_SEND" {
			t.Fatalf("header %q", m.Segment("MSH", 1))
		}
		when, err := time.Parse("20060102150405", m.Get("MSH-7"))
		if err != nil || !when.After(last) {
			t.Fatalf("MSH-7 %q not after %v", m.Get("MSH-7"), last)
		}
		last = when
		if m.Get("PID-5.1") == "" || len(m.Get("PID-7")) != 8 || m.Get("PID-11.3") == "" || m.Get("PV1-2") == "" || m.Get("PV1-44") == "" {
			t.Fatalf("patient data missing: %q", m.String())
		}
		types[s.Type]++
		switch s.Type {
		case "ORU^R01":
			if m.Count("OBX") != 5 || m.Get("OBR-25") != "F" || m.Get("OBR-16.2") == "" || m.Get("OBX[5]-5") == "" || m.Get("OBX-3.3") != "LN" || m.Get("OBX-11") != "F" {
				t.Fatalf("ORU structure: %q", m.String())
			}
			for _, obx := range m.Segments("OBX") {
				if f := obx.Get("8"); f != "N" && f != "H" && f != "L" {
					t.Fatalf("abnormal flag %q", f)
				}
			}
		default:
			if m.Get("EVN-1") != s.Type[4:] || m.Count("PID") != 1 || m.Count("PV1") != 1 {
				t.Fatalf("ADT structure: %q", m.String())
			}
		}
		if !bytes.Equal(m.Bytes(), s.Bytes) {
			t.Fatal("generated message does not re-serialise byte-identical")
		}
		ack, err := BuildACK(m, CodeFor(m, Accepted), "", ACKOptions{})
		if err != nil || ack.Get("MSA-1") != "AA" || ack.Get("MSA-2") != s.ControlID {
			t.Fatalf("ACK %v %v", ack, err)
		}
	}
	if len(types) != 4 {
		t.Errorf("types %v", types)
	}
	for mrn, n := range perMRN {
		if n < 20 {
			t.Errorf("MRN %s had only %d messages", mrn, n)
		}
	}
}

func TestGeneratorOptions(t *testing.T) {
	g, err := NewGenerator(GeneratorOptions{Types: []string{"ORU^R01"}, Enhanced: true, Version: "2.3"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(g.Next().Bytes)
	if err != nil || m.Type() != "ORU^R01" || ModeOf(m) != Enhanced || m.Version() != "2.3" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := g.NextOf("ADT^A99"); err == nil {
		t.Error("unknown type accepted by NextOf")
	}
	for _, o := range []GeneratorOptions{
		{Types: []string{"SIU^S12"}},
		{Patients: -1},
		{ControlIDPrefix: "TWELVE_CHARS"},
	} {
		if _, err := NewGenerator(o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
