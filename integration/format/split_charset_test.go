package format

import "testing"

// TestSplitCSVNotUTF8 cuts a file in another character set: the caller
// decodes each record, so neither header nor rows are refused for bytes
// that are not UTF-8, and names that differ only in such bytes stay apart.
func TestSplitCSVNotUTF8(t *testing.T) {
	tests := []struct {
		name, file string
		want       []item
	}{
		{"Latin-1 header and rows", "mrn,stra\xDFe\n1,M\xDCller\n2,b\n",
			[]item{{data: "mrn,stra\xDFe\n1,M\xDCller\n", start: 11, end: 20}, {data: "mrn,stra\xDFe\n2,b\n", start: 20, end: 24}}},
		{"names apart by a high byte", "a\xE4,a\xF6\n1,2\n", []item{{data: "a\xE4,a\xF6\n1,2\n", start: 6, end: 10}}},
		{"same names still refused", "a\xE4,a\xE4\n1,2\n", []item{{err: "fatal: format: the CSV header row: format: not valid csv: header columns 1 and 2 are both named \"a\u00e4\""}}},
		{"structure still checked", "a,b\n1\n2,\x80\n", []item{{err: "bad", start: 4, end: 6}, {data: "a,b\n2,\x80\n", start: 6, end: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitAll(t, &pieces{[]byte(tt.file), 3}, SplitCSV, 0, SplitOptions{BufferSize: 16, MaxRecord: 64, NotUTF8: true})
			if join(got) != join(tt.want) {
				t.Errorf("got  %s\nwant %s", join(got), join(tt.want))
			}
		})
	}
}
