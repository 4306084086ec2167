package hl7

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want Path
		str  string
	}{
		{"PID-3", Path{Segment: "PID", Field: 3}, "PID-3"},
		{"PID-3.1", Path{Segment: "PID", Field: 3, Component: 1}, "PID-3.1"},
		{"PID-3.1.2", Path{Segment: "PID", Field: 3, Component: 1, Subcomponent: 2}, "PID-3.1.2"},
		{"PID-3[2].1", Path{Segment: "PID", Field: 3, Repetition: 2, Component: 1}, "PID-3[2].1"},
		{"OBX[2]-5", Path{Segment: "OBX", SegmentIndex: 2, Field: 5}, "OBX[2]-5"},
		{"obx[10]-5[3].2.1", Path{Segment: "OBX", SegmentIndex: 10, Field: 5, Repetition: 3, Component: 2, Subcomponent: 1}, "OBX[10]-5[3].2.1"},
		{"MSH-9.2", Path{Segment: "MSH", Field: 9, Component: 2}, "MSH-9.2"},
		{"ZP1-1", Path{Segment: "ZP1", Field: 1}, "ZP1-1"},
		{"5.1", Path{Field: 5, Component: 1}, "5.1"},
		{"9999", Path{Field: 9999}, "9999"},
	}
	for _, tt := range tests {
		got, err := ParsePath(tt.in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParsePath(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if got.String() != tt.str {
			t.Errorf("String() = %q, want %q", got.String(), tt.str)
		}
	}
}

func TestParsePathErrors(t *testing.T) {
	tests := []struct{ in, reason string }{
		{"", "field number is missing"},
		{"PID", "must be a number"},
		{"PID-", "field number is missing"},
		{"PID-0", "start at 1"},
		{"PID-3.0", "start at 1"},
		{"PID-3[0]", "start at 1"},
		{"OBX[0]-5", "start at 1"},
		{"PIDX-3", "not three letters"},
		{"P-3", "not three letters"},
		{"PI_-3", "not three letters"},
		{"PID-3.1.2.4", "after the subcomponent"},
		{"PID-3[2", "missing ]"},
		{"PID-3[a]", "must be a number"},
		{"PID-3[2]x", "unexpected"},
		{"PID-3..1", "component must be a number"},
		{"PID-3.x", "must be a number"},
		{"PID-10000", "larger than 9999"},
		{"PID-123456789012345678901", "larger than 9999"},
		{"OBX[1]x-5", "after the segment occurrence"},
		{"PID--3", "must be a number"},
		{"PID-3 ", "unexpected"},
	}
	for _, tt := range tests {
		_, err := ParsePath(tt.in)
		var pe *PathError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPath) {
			t.Errorf("ParsePath(%q) = %v, want a *PathError", tt.in, err)
			continue
		}
		if !strings.Contains(pe.Reason, tt.reason) || pe.Path != tt.in {
			t.Errorf("ParsePath(%q): %q, want it to say %q", tt.in, err, tt.reason)
		}
	}
}

// A Path built by hand is checked as a parsed one is.
func TestHandMadePaths(t *testing.T) {
	m, err := ParseString("MSH|^~\\&|A\rPID|1|x\r")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Path{
		{Segment: "MSH"},
		{Segment: "PID", Field: -1},
		{Segment: "PID", Field: 1, Repetition: -2},
		{Segment: "PID", Field: 1, Component: -1},
		{Segment: "PID", Field: 1, Subcomponent: 1},
		{Segment: "PID", Field: MaxPosition + 1},
	} {
		if got := m.GetPath(p); got != "" {
			t.Errorf("GetPath(%+v) = %q", p, got)
		}
		if err := m.SetPath(p, "v"); !errors.Is(err, ErrPath) {
			t.Errorf("SetPath(%+v) = %v", p, err)
		}
	}
	if m.String() != "MSH|^~\\&|A\rPID|1|x\r" {
		t.Errorf("message changed: %q", m.String())
	}
}
