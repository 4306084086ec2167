package hl7

import "testing"

func TestTypeOf(t *testing.T) {
	for raw, want := range map[string]string{
		"MSH|^~\\&|A|B|C|D|20260101||ADT^A01^ADT_A01|1|P|2.5\rPID|1": "ADT^A01",
		"MSH|$~\\&|A|B|C|D|20260101||ORU$R01|1|P|2.5\r":              "ORU^R01",
		"MSH|^~\\&|A|B|C|D|20260101||ACK|1|P|2.5":                    "ACK",
		"\ufeffMSH|^~\\&|A|B|C|D|20260101||ADT^A08|1|P|2.5\n":        "ADT^A08",
		"PID|1||x":     "",
		"":             "",
		"{\"json\":1}": "",
	} {
		if got := TypeOf([]byte(raw)); got != want {
			t.Errorf("TypeOf(%q) = %q, want %q", raw, got, want)
		}
	}
}
