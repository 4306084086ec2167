package hl7

import "testing"

func TestUnescape(t *testing.T) {
	d := DefaultDelimiters()
	tr := d
	tr.Truncation = '#'
	tests := []struct {
		in, want string
		d        Delimiters
	}{
		{"plain", "plain", d},
		{`a\F\b\S\c\T\d\R\e\E\f`, `a|b^c&d~e\f`, d},
		{`\X0D0A\`, "\r\n", d},
		{`\XC3A9\`, "é", d},
		{`\xe9\`, "é", d}, // not UTF-8: read as Latin-1
		{`\X41\\X\`, `A\X\`, d},
		{`\X4\`, `\X4\`, d},   // odd length: kept
		{`\XZZ\`, `\XZZ\`, d}, // not hex: kept
		{`a\.br\b`, `a\.br\b`, d},
		{`\H\bold\N\`, `\H\bold\N\`, d},
		{`\Zsite\`, `\Zsite\`, d},
		{`\.br\\F\`, `\.br\|`, d}, // an unknown sequence is kept whole; the next one still decodes
		{`C:\temp`, `C:\temp`, d}, // no closing escape: kept
		{`\\`, `\\`, d},           // an empty sequence is unknown
		{`\P\`, `\P\`, d},         // \P\ needs a truncation character
		{`\P\`, `#`, tr},
		{`x\`, `x\`, d},
	}
	for _, tt := range tests {
		if got := Unescape(tt.in, tt.d); got != tt.want {
			t.Errorf("Unescape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	d := DefaultDelimiters()
	tr := d
	tr.Truncation = '#'
	odd := Delimiters{Field: '#', Component: '*', Repetition: '!', Escape: '@', Subcomponent: '%'}
	values := []string{"", "plain", `a|b^c&d~e\f`, "line\r\nnext", `\.br\`, `\X41\`, "#hash", "é\xff", `\`, "@*!%#"}
	for _, dl := range []Delimiters{d, tr, odd} {
		for _, v := range values {
			e := Escape(v, dl)
			for _, c := range []byte{dl.Field, dl.Component, dl.Repetition, dl.Subcomponent, '\r', '\n'} {
				for i := 0; i < len(e); i++ {
					if e[i] == c {
						t.Errorf("Escape(%q) = %q still holds %q", v, e, c)
					}
				}
			}
			if got := Unescape(e, dl); got != v {
				t.Errorf("Unescape(Escape(%q)) = %q (escaped %q)", v, got, e)
			}
		}
	}
	if got := Escape(`a|b\c`, d); got != `a\F\b\E\c` {
		t.Errorf("Escape = %q", got)
	}
}
