package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// postAs posts body with a Content-Type ("" sends none) and returns the
// status and the answer.
func postAs(t *testing.T, url, contentType string, body []byte) (int, httpAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	} else {
		req.Header["Content-Type"] = nil // the client would not add one, but be explicit
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a httpAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a
}

func TestHTTPSourceContentTypesAndCharsets(t *testing.T) {
	hl7Latin1 := charsetMsg("H1", "8859/1", "M\xDCLLER^J\xD6RG")
	hl7Bad := charsetMsg("H2", "UNICODE UTF-8", "M\xDCLLER")
	cases := []struct {
		name, path, ct string
		body           []byte
		code           int
		offset         int64  // for 400: the offset answered
		errText        string // in the answer's error
		stored         string // for 202: the stored payload holds this UTF-8 text
		meta           string // for 202: the stored meta's charset
	}{
		{name: "hl7 er7", path: "/hl7", ct: "x-application/hl7-v2+er7", body: charsetMsg("H3", "", "DOE"), code: 202, stored: "DOE"},
		{name: "hl7 application/hl7-v2", path: "/hl7", ct: "application/hl7-v2", body: charsetMsg("H4", "", "DOE"), code: 202, stored: "DOE"},
		{name: "hl7 application/hl7-v2+er7", path: "/hl7", ct: "application/hl7-v2+er7", body: charsetMsg("H5", "", "DOE"), code: 202, stored: "DOE"},
		{name: "hl7 text/plain", path: "/hl7", ct: "text/plain", body: charsetMsg("H6", "", "DOE"), code: 202, stored: "DOE"},
		{name: "hl7 no content type", path: "/hl7", body: charsetMsg("H7", "", "DOE"), code: 202, stored: "DOE"},
		{name: "hl7 MSH-18", path: "/hl7", ct: "x-application/hl7-v2+er7", body: hl7Latin1, code: 202, stored: "MÜLLER^JÖRG", meta: "8859/1"},
		{name: "hl7 charset parameter", path: "/hl7", ct: "text/plain; charset=ISO-8859-1", body: charsetMsg("H8", "", "M\xDCLLER"), code: 202, stored: "MÜLLER", meta: "8859/1"},
		{name: "hl7 sent as json", path: "/hl7", ct: "application/json", body: charsetMsg("H9", "", "DOE"), code: 415, errText: "this interface reads hl7v2"},
		{name: "hl7 invalid UTF-8", path: "/hl7", ct: "x-application/hl7-v2+er7", body: hl7Bad, code: 400, offset: int64(bytes.IndexByte(hl7Bad, 0xDC)), errText: "not valid UNICODE UTF-8"},
		{name: "hl7 unknown MSH-18", path: "/hl7", ct: "x-application/hl7-v2+er7", body: charsetMsg("H10", "KLINGON", "DOE"), code: 400, offset: -1, errText: `"KLINGON"`},

		{name: "json", path: "/json", ct: "application/json", body: []byte(`{"name":"MÜLLER"}`), code: 202, stored: "MÜLLER"},
		{name: "json suffix type", path: "/json", ct: "application/fhir+json", body: []byte(`{"resourceType":"Patient"}`), code: 202, stored: "Patient"},
		{name: "json no content type", path: "/json", body: []byte(`{"a":1}`), code: 202, stored: `"a"`},
		{name: "json charset parameter", path: "/json", ct: "application/json; charset=ISO-8859-1", body: []byte("{\"name\":\"M\xDCLLER\"}"), code: 202, stored: "MÜLLER", meta: "8859/1"},
		{name: "json sent as xml", path: "/json", ct: "application/xml", body: []byte(`{"a":1}`), code: 415, errText: "not application/xml"},
		{name: "json sent as text", path: "/json", ct: "text/plain", body: []byte(`{"a":1}`), code: 415},
		{name: "json bare +json", path: "/json", ct: "application/+json", body: []byte(`{"a":1}`), code: 415},
		{name: "json unknown charset", path: "/json", ct: "application/json; charset=klingon", body: []byte(`{"a":1}`), code: 415, errText: "klingon"},
		{name: "json bad content type", path: "/json", ct: "application/json; charset", body: []byte(`{"a":1}`), code: 415, errText: "does not parse"},
		{name: "json invalid UTF-8", path: "/json", ct: "application/json", body: []byte("{\"name\":\"M\xDCLLER\"}"), code: 400, offset: 10, errText: "byte 0xDC at offset 10"},

		{name: "csv", path: "/csv", ct: "text/csv", body: []byte("mrn,name\n1,Müller\n"), code: 202, stored: "Müller"},
		{name: "csv as text/plain", path: "/csv", ct: "text/plain; charset=windows-1252", body: []byte("mrn,name\n1,\x80\n"), code: 202, stored: "€", meta: "windows-1252"},
		{name: "csv sent as json", path: "/csv", ct: "application/json", body: []byte("mrn\n1\n"), code: 415},

		{name: "text", path: "/text", ct: "text/plain; charset=utf-8", body: []byte("hello wörld"), code: 202, stored: "wörld"},
		{name: "text sent as csv", path: "/text", ct: "text/csv", body: []byte("hello"), code: 415},
		{name: "text invalid UTF-8", path: "/text", ct: "text/plain", body: []byte("ab\xFF"), code: 400, offset: 2},
	}
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		listen := map[string]string{} // by path: one listener per interface
		files := map[string]string{"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n"}
		for _, f := range []string{"hl7v2", "json", "csv", "text"} {
			name := strings.TrimSuffix(f, "v2")
			listen["/"+name] = testutil.FreePort(t)
			files["interfaces/"+name+"/interface.yaml"] = fmt.Sprintf(
				"format: %s\nsource: { type: http, listen: %q, path: /%s }\ndestinations:\n  out: { type: file, path: out/%s }\n", f, listen["/"+name], name, name)
			files["interfaces/"+name+"/transform.js"] = "function transform(m) { return m; }\n"
		}
		e := running(t, project(t, files), be)
		accepted := map[string]int{}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				code, a := postAs(t, "http://"+listen[c.path]+c.path, c.ct, c.body)
				if code != c.code || !strings.Contains(a.Error, c.errText) {
					t.Fatalf("%d %+v, want %d with %q", code, a, c.code, c.errText)
				}
				switch code {
				case http.StatusBadRequest:
					if got := int64(-1); a.Offset != nil {
						got = *a.Offset
						if got != c.offset {
							t.Fatalf("offset %d, want %d (%s)", got, c.offset, a.Error)
						}
					} else if c.offset >= 0 {
						t.Fatalf("no offset in %+v, want %d", a, c.offset)
					}
				case http.StatusAccepted:
					accepted[c.path]++
					m, err := e.Store().Get(context.Background(), a.ID)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Contains(m.Payload, []byte(c.stored)) {
						t.Fatalf("stored %q, want it to hold %q", m.Payload, c.stored)
					}
					if got, _ := m.Meta["charset"].(string); got != c.meta {
						t.Fatalf("meta charset %q, want %q", got, c.meta)
					}
				}
			})
		}
		// Only what was answered 202 was stored.
		for _, path := range []string{"/hl7", "/json", "/csv", "/text"} {
			got, err := e.Store().List(context.Background(), strings.TrimPrefix(path, "/"), "", 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != accepted[path] {
				t.Errorf("%s: %d messages stored, want the %d answered 202", path, len(got), accepted[path])
			}
		}
	})
}
