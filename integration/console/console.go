package console

import (
	"bytes"
	"embed"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// CSP is the Content-Security-Policy of every response: the console's own
// scripts, styles, images and fonts only, API calls to its own origin,
// nothing inline, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// notBuilt is the page served when the console was not built.
const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ductus console not built</title></head>
<body><h1>Ductus</h1><p>The console is not built: run <code>make console</code> (it needs node and npm), then build the engine again.</p>
<p>The operator API is under <a href="/api/v1/openapi.json">/api/v1/</a>.</p></body></html>
`

// Handler serves the embedded console: a file that exists as it is, any
// other path outside /assets/ as index.html (the application's own
// routes, so every page has a permalink), and a 404 for a missing asset.
// Without a built console it serves a page saying how to build it.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return newHandler(sub)
}

// Built reports whether the embedded console was built (has index.html).
func Built() bool {
	_, err := fs.Stat(dist, "dist/index.html")
	return err == nil
}

// handler serves files from a built console's directory.
type handler struct {
	files fs.FS
	index []byte // nil when the console is not built
}

func newHandler(files fs.FS) http.Handler {
	h := &handler{files: files}
	if b, err := fs.ReadFile(files, "index.html"); err == nil {
		h.index = b
	}
	return h
}

// setSecurityHeaders sets the headers every response carries.
func setSecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	setSecurityHeaders(hd)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.index == nil {
		hd.Set("Cache-Control", "no-cache")
		hd.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(notBuilt))
		}
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "assets" || strings.HasPrefix(name, "assets/") {
		// Vite names every file under assets/ by its content's hash, so
		// a name never changes meaning: cache it for good.
		if !h.serveFile(w, r, name, "public, max-age=31536000, immutable") {
			hd.Del("Cache-Control")
			http.NotFound(w, r)
		}
		return
	}
	if name != "" && name != "index.html" && h.serveFile(w, r, name, "no-cache") {
		return
	}
	// The application's own routes (and /): index.html, revalidated on
	// every load so that a new engine's console is picked up at once.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.index)
	}
}

// serveFile serves the regular file name with the Cache-Control given,
// and reports whether there was one.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, name, cache string) bool {
	f, err := h.files.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return false
	}
	w.Header().Set("Cache-Control", cache)
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return false
		}
		rs = bytes.NewReader(b)
	}
	http.ServeContent(w, r, name, st.ModTime(), rs)
	return true
}
