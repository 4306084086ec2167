package hl7

import (
	"errors"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	base := "MSH|^~\\&|A|B|||||ADT^A01|1|P|2.5\rPID|1||123^^^GH^MR~456\r"
	tests := []struct {
		name, path, value string
		want              string // the PID (or named) segment's text afterwards
		seg               string
	}{
		{"replace field", "PID-1", "2", "PID|2||123^^^GH^MR~456", "PID"},
		{"component", "PID-3.4", "XX", "PID|1||123^^^XX^MR~456", "PID"},
		{"second repetition component", "PID-3[2].2", "b", "PID|1||123^^^GH^MR~456^b", "PID"},
		{"new repetition", "PID-3[4].1", "z", "PID|1||123^^^GH^MR~456~~z", "PID"},
		{"subcomponent", "PID-3.4.2", "s", "PID|1||123^^^GH&s^MR~456", "PID"},
		{"extend fields", "PID-5.1", "DOE", "PID|1||123^^^GH^MR~456||DOE", "PID"},
		{"escape delimiters", "PID-5", "A|B^C&D~E\\F", "PID|1||123^^^GH^MR~456||A\\F\\B\\S\\C\\T\\D\\R\\E\\E\\F", "PID"},
		{"escape segment end", "PID-5", "a\rb", "PID|1||123^^^GH^MR~456||a\\X0D\\b", "PID"},
		{"whole field replaces first repetition only", "PID-3", "9", "PID|1||9~456", "PID"},
		{"empty trims components", "PID-3.5", "", "PID|1||123^^^GH~456", "PID"},
		{"empty beyond end is a no-op", "PID-30", "", "PID|1||123^^^GH^MR~456", "PID"},
		{"empty repetition trims", "PID-3[2]", "", "PID|1||123^^^GH^MR", "PID"},
		{"new segment", "ZPI-2.1", "v", "ZPI||v", "ZPI"},
		{"MSH field", "MSH-10", "ID9", "MSH|^~\\&|A|B|||||ADT^A01|ID9|P|2.5", "MSH"},
		{"MSH-9.2", "MSH-9.2", "A08", "MSH|^~\\&|A|B|||||ADT^A08|1|P|2.5", "MSH"},
		{"MSH new field", "MSH-15", "AL", "MSH|^~\\&|A|B|||||ADT^A01|1|P|2.5|||AL", "MSH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustParse(t, base)
			if err := m.Set(tt.path, tt.value); err != nil {
				t.Fatal(err)
			}
			if got := m.Segment(tt.seg, 1).String(); got != tt.want {
				t.Errorf("segment = %q, want %q", got, tt.want)
			}
			if got := m.Get(tt.path); got != tt.value && !strings.HasPrefix(tt.name, "whole") {
				t.Errorf("Get after Set = %q, want %q", got, tt.value)
			}
			again := mustParse(t, m.String())
			if got := again.Segment(tt.seg, 1).String(); got != tt.want {
				t.Errorf("after re-parse %q", got)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	m := mustParse(t, "MSH|^~\\&|A\rOBX|1\r")
	for _, tt := range []struct {
		path string
		is   error
		text string
	}{
		{"MSH-1", ErrReadOnly, ""},
		{"MSH-2", ErrReadOnly, ""},
		{"MSH-2.1", ErrReadOnly, ""},
		{"PID-0", ErrPath, ""},
		{"3", ErrPath, "must start with a segment name"},
		{"OBX[3]-1", nil, "there are 1 OBX segments, so OBX[3] cannot be created"},
		{"MSH[2]-3", nil, "one MSH segment"},
	} {
		err := m.Set(tt.path, "x")
		if err == nil {
			t.Errorf("Set(%q): no error", tt.path)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("Set(%q) = %v, want %v", tt.path, err, tt.is)
		}
		if !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Set(%q) = %q, want it to say %q", tt.path, err, tt.text)
		}
	}
	if err := m.Set("OBX[2]-1", "2"); err != nil || m.Count("OBX") != 2 {
		t.Errorf("OBX[2] should be created after the first: %v", err)
	}
	if err := m.Set("NTE-1", ""); err != nil || m.Count("NTE") != 0 {
		t.Errorf("setting empty must not create a segment: %v", err)
	}
	if m.String() != "MSH|^~\\&|A\rOBX|1\rOBX|2\r" {
		t.Errorf("message %q", m.String())
	}
}

func TestSetRaw(t *testing.T) {
	m := mustParse(t, "MSH|^~\\&|A\rPID|1||123~456\r")
	if err := m.SetRaw("PID-3", "a^b~c"); err != nil {
		t.Fatal(err)
	}
	if m.Raw("PID-3") != "a^b~c" || m.Get("PID-3[2]") != "c" || m.Get("PID-3.2") != "b" {
		t.Errorf("after SetRaw: %q", m.String())
	}
	if err := m.SetRaw("PID-5", `\.br\x`); err != nil || m.Get("PID-5") != `\.br\x` {
		t.Errorf("raw escape kept: %v %q", err, m.Get("PID-5"))
	}
	for path, text := range map[string]string{"PID-3": "a|b", "PID-3[1]": "a~b", "PID-3.1": "a^b", "PID-3.1.1": "a&b", "PID-4": "a\rb", "MSH-2": "^~\\&"} {
		if err := m.SetRaw(path, text); err == nil {
			t.Errorf("SetRaw(%q, %q) accepted", path, text)
		}
	}
	s := m.Segment("PID", 1)
	if err := s.SetRaw("3.1", "z&y"); err != nil || s.Get("3.1.2") != "y" {
		t.Errorf("segment SetRaw: %v %q", err, s.String())
	}
}

func TestSegmentPaths(t *testing.T) {
	m := mustParse(t, adt)
	s := m.Segment("PID", 1)
	for path, want := range map[string]string{"3.1": "1000123", "PID-3[2].1": "A0001", "5": "O'BRIEN^MARY^J", "OBX-5": "", "PID[1]-3": ""} {
		if got := s.Get(path); got != want {
			t.Errorf("segment Get(%q) = %q, want %q", path, got, want)
		}
	}
	if err := s.Set("OBX-1", "x"); err == nil || !errors.Is(err, ErrPath) {
		t.Errorf("a path naming another segment: %v", err)
	}
	if s.Count("3") != 2 || s.Raw("3") != "1000123^^^GH^MR~A0001^^^GH^AN" || len(s.GetAll("3.5")) != 2 {
		t.Error("segment Count/Raw/GetAll")
	}
	msh := m.Segment("MSH", 1)
	if msh.Get("1") != "|" || msh.Get("2") != "^~\\&" || msh.Get("9.2") != "A01" {
		t.Error("MSH numbering on the segment")
	}
	if err := msh.Set("2", "x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("MSH-2 write: %v", err)
	}
}

func TestAddInsertRemove(t *testing.T) {
	m := mustParse(t, "MSH|^~\\&|A\rPID|1\rOBX|1\rOBX|2\r")
	pid := m.Segment("PID", 1)
	if _, err := m.InsertAfter(pid, "PV1", "1", "I"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.InsertBefore(pid, "EVN", "A01"); err != nil {
		t.Fatal(err)
	}
	z, err := m.Add("zpi", "a|b", "", "c")
	if err != nil {
		t.Fatal(err)
	}
	if z.Name() != "ZPI" || z.Get("1") != "a|b" || z.String() != "ZPI|a\\F\\b||c" {
		t.Errorf("added %q", z.String())
	}
	if _, err := m.AddRaw("NTE|1||x^y"); err != nil {
		t.Fatal(err)
	}
	want := "MSH|^~\\&|A\rEVN|A01\rPID|1\rPV1|1|I\rOBX|1\rOBX|2\rZPI|a\\F\\b||c\rNTE|1||x^y\r"
	if m.String() != want {
		t.Fatalf("message %q, want %q", m.String(), want)
	}
	if m.Get("NTE-3.2") != "y" {
		t.Error("raw segment not readable")
	}
	if n, err := m.RemoveAll("obx"); err != nil || n != 2 {
		t.Errorf("RemoveAll = %d, %v", n, err)
	}
	if err := m.Remove(z); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(z); !errors.Is(err, ErrNotInMessage) {
		t.Errorf("removing twice: %v", err)
	}
	if m.String() != "MSH|^~\\&|A\rEVN|A01\rPID|1\rPV1|1|I\rNTE|1||x^y\r" {
		t.Errorf("after remove %q", m.String())
	}
	msh := m.Segment("MSH", 1)
	bad := []func() error{
		func() error { return m.Remove(msh) },
		func() error { _, err := m.RemoveAll("MSH"); return err },
		func() error { _, err := m.InsertBefore(msh, "ZZZ"); return err },
		func() error { _, err := m.Add("MSH"); return err },
		func() error { _, err := m.Add("TOOLONG"); return err },
		func() error { _, err := m.AddRaw("msh|x"); return err },
		func() error { _, err := m.AddRaw("ZZ"); return err },
		func() error { _, err := m.AddRaw("ZZZ^1"); return err },
		func() error { _, err := m.AddRaw("ZZZ|1\rPID|2"); return err },
		func() error { _, err := m.InsertAfter(&Segment{}, "ZZZ"); return err },
	}
	for i, f := range bad {
		if err := f(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}
