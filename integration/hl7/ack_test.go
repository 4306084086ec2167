package hl7

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func fixed() ACKOptions {
	return ACKOptions{
		ControlID: func() string { return "ACK0001" },
		Now:       func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) },
	}
}

func TestBuildACK(t *testing.T) {
	msg := mustParse(t, adt)
	tests := []struct {
		name, code, text string
		want             string
	}{
		{"AA", CodeAA, "", "MSH|^~\\&|DUCTUS|ENGINE|EPIC|GH|20260304050607+0000||ACK^A01^ACK|ACK0001|P|2.5.1\rMSA|AA|MSG00001\r"},
		{"AA with text has no ERR", CodeAA, "stored", "MSH|^~\\&|DUCTUS|ENGINE|EPIC|GH|20260304050607+0000||ACK^A01^ACK|ACK0001|P|2.5.1\rMSA|AA|MSG00001|stored\r"},
		{"AE", CodeAE, "database down | retry", "MSH|^~\\&|DUCTUS|ENGINE|EPIC|GH|20260304050607+0000||ACK^A01^ACK|ACK0001|P|2.5.1\r" +
			"MSA|AE|MSG00001|database down \\F\\ retry\rERR|||207^Application internal error^HL70357|E||||database down \\F\\ retry\r"},
		{"AR without text", CodeAR, "", "MSH|^~\\&|DUCTUS|ENGINE|EPIC|GH|20260304050607+0000||ACK^A01^ACK|ACK0001|P|2.5.1\rMSA|AR|MSG00001\r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ack, err := BuildACK(msg, tt.code, tt.text, fixed())
			if err != nil {
				t.Fatal(err)
			}
			if got := ack.String(); got != tt.want {
				t.Errorf("ACK\n%q\nwant\n%q", got, tt.want)
			}
			code, id, text, err := ParseACK(ack.Bytes())
			if err != nil || code != tt.code || id != "MSG00001" || text != tt.text {
				t.Errorf("ParseACK = %q %q %q %v", code, id, text, err)
			}
		})
	}
	if _, err := BuildACK(msg, "OK", "", fixed()); err == nil {
		t.Error("a bad code was accepted")
	}
}

func TestBuildACKKeepsDelimitersAndVersion(t *testing.T) {
	msg := mustParse(t, "MSH#*!@%#SND*X#SF#RCV#RF#20260101##ORU*R01#C1#T#2.3*USA\rPID#1\r")
	o := fixed()
	o.ErrorCode = "101"
	ack, err := BuildACK(msg, CodeAE, "PID-3 missing", o)
	if err != nil {
		t.Fatal(err)
	}
	want := "MSH#*!@%#RCV#RF#SND*X#SF#20260304050607+0000##ACK*R01*ACK#ACK0001#T#2.3*USA\rMSA#AE#C1#PID-3 missing\rERR#***101%Required field missing%HL70357\r"
	if ack.String() != want {
		t.Errorf("ACK\n%q\nwant\n%q", ack.String(), want)
	}
	if ack.Get("MSH-5.2") != "X" {
		t.Error("components of a swapped field are kept")
	}
}

func TestDefaultControlIDsAreUnique(t *testing.T) {
	msg := mustParse(t, adt)
	seen := map[string]bool{}
	for range 1000 {
		ack, err := BuildACK(msg, CodeAA, "", ACKOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := ack.ControlID()
		if len(id) != 20 || seen[id] {
			t.Fatalf("control ID %q (len %d, seen %v)", id, len(id), seen[id])
		}
		seen[id] = true
		if len(ack.Get("MSH-7")) != len("20060102150405-0700") {
			t.Fatalf("MSH-7 %q", ack.Get("MSH-7"))
		}
	}
}

func TestAckMode(t *testing.T) {
	tests := []struct {
		msh15  string
		mode   AckMode
		codes  [3]string
		wanted [3]bool
	}{
		{"", Original, [3]string{"AA", "AE", "AR"}, [3]bool{true, true, true}},
		{"AL", Enhanced, [3]string{"CA", "CE", "CR"}, [3]bool{true, true, true}},
		{"al", Enhanced, [3]string{"CA", "CE", "CR"}, [3]bool{true, true, true}},
		{"NE", Enhanced, [3]string{"CA", "CE", "CR"}, [3]bool{false, false, false}},
		{"ER", Enhanced, [3]string{"CA", "CE", "CR"}, [3]bool{false, true, true}},
		{"SU", Enhanced, [3]string{"CA", "CE", "CR"}, [3]bool{true, false, false}},
		{"XX", Original, [3]string{"AA", "AE", "AR"}, [3]bool{true, true, true}},
	}
	for _, tt := range tests {
		m := mustParse(t, "MSH|^~\\&|A|B|C|D|20260101||ADT^A01|9|P|2.5|||"+tt.msh15+"|AL\r")
		if ModeOf(m) != tt.mode {
			t.Errorf("MSH-15 %q: mode %v", tt.msh15, ModeOf(m))
		}
		for o := Accepted; o <= Rejected; o++ {
			if got := CodeFor(m, o); got != tt.codes[o] {
				t.Errorf("MSH-15 %q outcome %d: %q", tt.msh15, o, got)
			}
			if got := AckWanted(m, o); got != tt.wanted[o] {
				t.Errorf("MSH-15 %q outcome %d: wanted %v", tt.msh15, o, got)
			}
		}
	}
}

func TestBuildRejectACK(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not HL7", "GET / HTTP/1.1\r\n", "MSH|^~\\&|||||20260304050607+0000||ACK|ACK0001|P|2.5\rMSA|AR||not HL7\rERR|||100^Segment sequence error^HL70357|E||||not HL7\r"},
		{"readable MSH, bad segment", "MSH|^~\\&|S|SF|R|RF|x||ORU^R01|C7|P|2.4|||AL\rP?D|1\r",
			"MSH|^~\\&|R|RF|S|SF|20260304050607+0000||ACK^R01^ACK|ACK0001|P|2.4\rMSA|CR|C7|not HL7\rERR|^^^100&Segment sequence error&HL70357\r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildRejectACK([]byte(tt.in), "not HL7", fixed()).String()
			if got != tt.want {
				t.Errorf("ACK\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseACK(t *testing.T) {
	tests := []struct {
		name, in       string
		code, id, text string
		err            error
		errText        string
	}{
		{"AA", "MSH|^~\\&|A|B|C|D|x||ACK^A01^ACK|9|P|2.5\rMSA|AA|C1\r", "AA", "C1", "", nil, ""},
		{"lower-case code, LF", "MSH|^~\\&|A\nMSA|ae|C1|busy\n", "AE", "C1", "busy", nil, ""},
		{"text from ERR-8", "MSH|^~\\&|A\rMSA|AR|C1\rERR|||207^Internal^HL70357|E||||bad PID\r", "AR", "C1", "bad PID", nil, ""},
		{"text from ERR-3.2", "MSH|^~\\&|A\rMSA|AR|C1\rERR|||207^Internal^HL70357|E\r", "AR", "C1", "Internal", nil, ""},
		{"text from ERR-1", "MSH|^~\\&|A\rMSA|CE|C1\rERR|^^^207&Internal&HL70357\r", "CE", "C1", "Internal", nil, ""},
		{"no MSA", "MSH|^~\\&|A|B|C|D|x||ADT^A01|9\rPID|1\r", "", "", "", ErrNotACK, "no MSA"},
		{"bad code", "MSH|^~\\&|A\rMSA|OK|C1\r", "", "", "", ErrNotACK, `MSA-1 is "OK"`},
		{"not HL7", "garbage", "", "", "", nil, "must start with an MSH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, id, text, err := ParseACK([]byte(tt.in))
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) || tt.err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.errText)
				}
				return
			}
			if err != nil || code != tt.code || id != tt.id || text != tt.text {
				t.Errorf("got %q %q %q %v", code, id, text, err)
			}
		})
	}
}
