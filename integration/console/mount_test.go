package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/console"
)

// TestMountedInAPI checks the console as the engine mounts it
// (api.Config.Console): the API keeps /api/ (a JSON 404 for an unknown
// path, never index.html), and every other path is the console's, with
// its security headers.
func TestMountedInAPI(t *testing.T) {
	h, err := api.New(api.Config{Console: console.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	// The status with a built console, and with the placeholder (503: the
	// page saying how to build it).
	tests := []struct {
		path               string
		built, placeholder int
		typ                string // with a built console
		csp                bool
	}{
		{"/api/v1/no-such-operation", 404, 404, "application/json", false},
		{"/api/elsewhere", 404, 404, "application/json", false},
		{"/", 200, 503, "text/html", true},
		{"/messages/some-id", 200, 503, "text/html", true},
		{"/assets/missing-abc.js", 404, 503, "text/plain", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			want, typ := tt.built, tt.typ
			if !console.Built() {
				want = tt.placeholder
				if tt.csp {
					typ = "text/html"
				}
			}
			if rec.Code != want {
				t.Fatalf("%s: %d, want %d: %s", tt.path, rec.Code, want, rec.Body.String())
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, typ) {
				t.Errorf("%s: Content-Type %q, want %s", tt.path, got, typ)
			}
			if got := rec.Header().Get("Content-Security-Policy"); (got == console.CSP) != tt.csp {
				t.Errorf("%s: CSP %q (want the console's: %v)", tt.path, got, tt.csp)
			}
		})
	}
}
