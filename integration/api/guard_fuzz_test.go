package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzGuard is the guard over the real document (no access store: the
// fuzz targets call validate, which runs after authentication).
func fuzzGuard(f *testing.F) *guard {
	doc, err := Document()
	if err != nil {
		f.Fatal(err)
	}
	g, err := newGuard(doc, nil, 1<<16)
	if err != nil {
		f.Fatal(err)
	}
	return g
}

// checkRefusal: validation either passes or is a refusal the API answers
// as a 400 or 413, never anything else (and never a panic).
func checkRefusal(t *testing.T, err error) {
	var br *badRequest
	var tooBig *http.MaxBytesError
	if err != nil && !errors.As(err, &br) && !errors.As(err, &tooBig) {
		t.Fatalf("validation failed with %T %v; want a badRequest", err, err)
	}
	if br != nil && br.msg == "" {
		t.Fatal("a refusal that says nothing")
	}
}

// FuzzCreateTokenBody: any bytes as the body of the one operation that
// takes one.
func FuzzCreateTokenBody(f *testing.F) {
	g := fuzzGuard(f)
	op := g.ops["POST /api/v1/tokens"]
	for _, s := range []string{`{"name":"x","role":"viewer"}`, `{"name":"x","role":"admin","perms":["payloads"]}`,
		`{"name":7}`, `{`, `[]`, `null`, "\xff\xfe", `{"name":"x","role":"viewer","colour":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/api/v1/tokens", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		checkRefusal(t, g.validate(httptest.NewRecorder(), r, op))
	})
}

// FuzzListMessagesQuery: any query string and interface name on a paged
// listing.
func FuzzListMessagesQuery(f *testing.F) {
	g := fuzzGuard(f)
	op := g.ops["GET /api/v1/interfaces/{name}/messages"]
	f.Add("adt", "limit=10&before=abc")
	f.Add("adt", "limit=0")
	f.Add("x%00", "limit=ten&limit=2")
	f.Fuzz(func(t *testing.T, name, query string) {
		r := httptest.NewRequest("GET", "/api/v1/interfaces/x/messages", nil)
		r.URL.RawQuery = query
		r.SetPathValue("name", name)
		if _, err := url.ParseQuery(query); err != nil {
			return // the server's own parsing answers these
		}
		checkRefusal(t, g.validate(httptest.NewRecorder(), r, op))
	})
}
