package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

const builtIndex = `<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body></body></html>`

func builtFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":              {Data: []byte(builtIndex)},
		"not-built.txt":           {Data: []byte("placeholder")},
		"favicon.svg":             {Data: []byte("<svg xmlns='http://www.w3.org/2000/svg'/>")},
		"assets/index-abc123.js":  {Data: []byte("console.log(1)")},
		"assets/index-def456.css": {Data: []byte("body{}")},
	}
}

func TestHandler(t *testing.T) {
	const immutable = "public, max-age=31536000, immutable"
	built := newHandler(builtFS())
	placeholder := newHandler(fstest.MapFS{"not-built.txt": {Data: []byte("placeholder")}})
	tests := []struct {
		name      string
		h         http.Handler
		method    string
		path      string
		status    int
		cache     string
		typ       string // a prefix of Content-Type
		body      string // a substring of the body
		noBodyHas string
	}{
		{"root is index.html", built, "GET", "/", 200, "no-cache", "text/html", "/assets/index-abc123.js", ""},
		{"index.html itself", built, "GET", "/index.html", 200, "no-cache", "text/html", "/assets/index-abc123.js", ""},
		{"client route falls back", built, "GET", "/messages/msg_123", 200, "no-cache", "text/html", "<!doctype html>", ""},
		{"deep client route with query", built, "GET", "/interfaces/adt/messages?before=x", 200, "no-cache", "text/html", "<!doctype html>", ""},
		{"hashed script is immutable", built, "GET", "/assets/index-abc123.js", 200, immutable, "text/javascript", "console.log(1)", ""},
		{"hashed style is immutable", built, "GET", "/assets/index-def456.css", 200, immutable, "text/css", "body{}", ""},
		{"missing asset is 404, not index", built, "GET", "/assets/index-gone.js", 404, "", "text/plain", "not found", "<!doctype"},
		{"assets directory is 404", built, "GET", "/assets/", 404, "", "text/plain", "not found", "<!doctype"},
		{"other file is no-cache", built, "GET", "/favicon.svg", 200, "no-cache", "image/svg+xml", "<svg", ""},
		{"dot-dot stays inside", built, "GET", "/../../etc/passwd", 200, "no-cache", "text/html", "<!doctype html>", ""},
		{"HEAD has no body", built, "HEAD", "/", 200, "no-cache", "text/html", "", "<!doctype"},
		{"POST is refused", built, "POST", "/", 405, "", "text/plain", "method not allowed", ""},
		{"not built: a page saying how", placeholder, "GET", "/", 503, "no-cache", "text/html", "the console is not built", ""},
		{"not built: any route", placeholder, "GET", "/messages/x", 503, "no-cache", "text/html", "run <code>make console</code>", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://console.test"+tt.path, nil)
			if strings.Contains(tt.path, "..") {
				req.URL.Path = tt.path
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			res := rec.Result()
			body := rec.Body.String()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %q", res.StatusCode, tt.status, body)
			}
			if got := res.Header.Get("Cache-Control"); got != tt.cache {
				t.Errorf("Cache-Control %q, want %q", got, tt.cache)
			}
			if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, tt.typ) {
				t.Errorf("Content-Type %q, want %q...", got, tt.typ)
			}
			if !strings.Contains(strings.ToLower(body), strings.ToLower(tt.body)) {
				t.Errorf("body %q does not contain %q", body, tt.body)
			}
			if tt.noBodyHas != "" && strings.Contains(body, tt.noBodyHas) {
				t.Errorf("body %q contains %q", body, tt.noBodyHas)
			}
			for h, want := range map[string]string{
				"Content-Security-Policy": CSP,
				"X-Frame-Options":         "DENY",
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
			} {
				if got := res.Header.Get(h); got != want {
					t.Errorf("%s %q, want %q", h, got, want)
				}
			}
		})
	}
}

// TestCSPIsStrict pins the policy's parts that matter: nothing inline,
// no other origin, no framing.
func TestCSPIsStrict(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(CSP, want) {
			t.Errorf("CSP %q lacks %q", CSP, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("CSP %q allows %q", CSP, bad)
		}
	}
}

// TestEmbeddedHandler checks the real embedded files: the placeholder
// page without a build, index.html with one.
func TestEmbeddedHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/some/route", nil))
	if Built() {
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "/assets/") {
			t.Fatalf("built console: %d %q", rec.Code, rec.Body.String())
		}
		return
	}
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "make console") {
		t.Fatalf("placeholder: %d %q", rec.Code, rec.Body.String())
	}
}
