package format

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, n := range Names() {
		got, err := ParseName(string(n))
		if err != nil || got != n {
			t.Errorf("ParseName(%q) = %q, %v", n, got, err)
		}
	}
	for in, hint := range map[string]string{
		"HL7":   `did you mean "hl7v2"`,
		"hl7":   `did you mean "hl7v2"`,
		"JSON":  `did you mean "json"`,
		"txt":   `did you mean "text"`,
		"xml":   "want hl7v2, json, csv or text",
		"":      "the format is missing",
		"csv ":  `did you mean "csv"`,
		"fhir":  `unknown format "fhir"`,
		"Text":  `did you mean "text"`,
		"hl7v3": `unknown format "hl7v3"`,
	} {
		_, err := ParseName(in)
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("ParseName(%q) = %v, want it to say %q", in, err, hint)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		f      Name
		body   string
		ok     bool
		offset int64
		reason string
	}{
		{HL7v2, "MSH|^~\\&|A\rPID|1\r", true, 0, ""},
		{HL7v2, "MSH|^~\\&|A\nPID|1\n", true, 0, ""},
		{HL7v2, `{"a":1}`, false, 0, "must start with an MSH segment"},
		{HL7v2, "MSH|^~\\&|A\rP D|1\r", false, 11, "segment 2"},
		{JSON, `{"a":[1,2,{"b":null}]}`, true, 0, ""},
		{JSON, ` "just a string" `, true, 0, ""},
		{JSON, `{"a":1,}`, false, 8, "invalid character"},
		{JSON, `{"a":1} {"b":2}`, false, 7, "more data after the JSON value"},
		{JSON, `{"a":`, false, 5, "cut short"},
		{JSON, "", false, -1, "empty"},
		{JSON, "  \n", false, -1, "empty"},
		{JSON, `{"a":NaN}`, false, 6, "invalid character"},
		{JSON, "{\"name\":\"M\xDCLLER\"}", false, 10, "not valid UTF-8"},
		{JSON, "{\"name\":\"MÜLLER\"}", true, 0, ""},
		{CSV, "mrn,name\n1,Ann\n2,\"Bo, b\"\n", true, 0, ""},
		{CSV, "mrn,name\n", true, 0, ""},
		{CSV, bom + "mrn,name\r\n1,Ann\r\n", true, 0, ""},
		{CSV, "mrn,note\n1,\"two\nlines\"\n", true, 0, ""},
		{CSV, "", false, -1, "no header row"},
		{CSV, "mrn,name\n1\n", false, -1, "line 2: the row does not have as many fields as the header"},
		{CSV, "mrn,mrn\n1,2\n", false, -1, `both named "mrn"`},
		{CSV, "mrn,,x\n1,2,3\n", false, -1, "header column 2 has no name"},
		{CSV, "a,b\n1,x\"y\n", false, -1, "bare \""},
		{CSV, "a,b\n1,\xff\n", false, 6, "not valid UTF-8"},
		{Text, "hello\nwörld", true, 0, ""},
		{Text, "ok\xc3", false, 2, "not valid UTF-8"},
	}
	for _, tt := range tests {
		err := Check(tt.f, []byte(tt.body))
		if tt.ok {
			if err != nil {
				t.Errorf("Check(%s, %q) = %v", tt.f, tt.body, err)
			}
			continue
		}
		var ce *CheckError
		if !errors.As(err, &ce) || !errors.Is(err, ErrWrongFormat) {
			t.Errorf("Check(%s, %q) = %v, want a *CheckError", tt.f, tt.body, err)
			continue
		}
		if ce.Format != tt.f || ce.Offset != tt.offset || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("Check(%s, %q) = %q (offset %d), want offset %d and %q", tt.f, tt.body, err, ce.Offset, tt.offset, tt.reason)
		}
	}
	if err := Check("xml", []byte("<a/>")); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestReadCSVAndRows(t *testing.T) {
	rows, err := ReadCSV([]byte("mrn,name,note\n1,Ann,\"a \"\"quote\"\"\"\n\n2,Bo,\"x\r\ny\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if v, ok := rows[0].Get("note"); !ok || v != `a "quote"` {
		t.Errorf("note = %q", v)
	}
	if _, ok := rows[0].Get("nope"); ok {
		t.Error("a missing column was found")
	}
	if m := rows[1].Map(); m["name"] != "Bo" || m["note"] != "x\ny" {
		t.Errorf("map %v", m)
	}
	b, _ := json.Marshal(rows)
	if string(b) != `[{"mrn":"1","name":"Ann","note":"a \"quote\""},{"mrn":"2","name":"Bo","note":"x\ny"}]` {
		t.Errorf("JSON %s", b)
	}
}

func TestCSVFromJSON(t *testing.T) {
	tests := []struct {
		in     string
		header []string
		want   string
		err    string
	}{
		{`{"mrn":"1","name":"Ann, B"}`, nil, "mrn,name\n1,\"Ann, B\"\n", ""},
		{`[{"b":2,"a":true},{"a":null,"b":1.50},{"b":{"x":[1, 2]}}]`, nil, "b,a\n2,true\n1.50,\n\"{\"\"x\"\":[1,2]}\",\n", ""},
		{`[{"b":1}]`, []string{"a", "b"}, "a,b\n,1\n", ""},
		{`{"a":1,"a":2}`, nil, "a\n2\n", ""},
		{`[]`, []string{"a"}, "a\n", ""},
		{`{"a":"line\nbreak"}`, nil, "a\n\"line\nbreak\"\n", ""},
		{`[]`, nil, "", "empty array has no header"},
		{`[{"a":1},{"c":2}]`, nil, "", `row 2 has the key "c", which is not a column (a)`},
		{`[1]`, nil, "", "item 1 of the array is not an object"},
		{`"text"`, nil, "", "must be an object or an array of objects"},
		{`{"a":1} x`, nil, "", "more data"},
		{`{"a":`, nil, "", "format: csv output"},
		{`nope`, nil, "", "not JSON"},
		{`{"a":1}`, []string{"a", "a"}, "", "both named"},
	}
	for _, tt := range tests {
		got, err := CSVFromJSON([]byte(tt.in), tt.header)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CSVFromJSON(%s) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("CSVFromJSON(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
			continue
		}
		if _, err := ReadCSV(got); err != nil {
			t.Errorf("output does not read back: %v", err)
		}
	}
}
