package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/runtime/store"
)

// auditFails is an engine store for the fuzz target: every token is an
// admin with both permissions, no account exists, and an audit row cannot
// be written (so no action gets past its audit, as when the database does
// not answer). Its embedded nil Store panics on any other method, which
// the fuzz target would report.
type auditFails struct{ ixstore.Store }

func (auditFails) TokenByHash(context.Context, *ixstore.TokenByHashParams) (ixstore.Token, bool, error) {
	return ixstore.Token{ID: "tok_fuzz", Name: "fuzz", Role: "admin", Perms: "payloads,audit"}, true, nil
}

func (auditFails) UserGet(context.Context, *ixstore.UserGetParams) (ixstore.User, bool, error) {
	return ixstore.User{}, false, nil
}

func (auditFails) AuditInsert(context.Context, store.Tx, *ixstore.AuditInsertParams) error {
	return errors.New("fuzz: the audit log cannot be written")
}

// bodyOps are the document's operations that take a request body, as
// (method, path with its parameters filled in).
func bodyOps(t testing.TB) [][2]string {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			p := path
			for _, name := range []string{"{id}", "{name}", "{destination}"} {
				p = strings.ReplaceAll(p, name, "x")
			}
			out = append(out, [2]string{method, p})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	return out
}

// FuzzRequestBodies sends arbitrary bodies to every operation that takes
// one, through the whole handler (credentials, access, the document's
// validation, the generated decoding, the handler): nothing panics, and a
// refusal is a JSON error that says something.
func FuzzRequestBodies(f *testing.F) {
	ops := bodyOps(f)
	h, err := New(Config{Engine: nil, Access: access.New(auditFails{}, access.Policy{}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	for i := range ops {
		for _, seed := range []string{"", "{}", "null", `{"reason":"x"}`, `{"ids":["a","b"],"reason":"r"}`, `{"name":"a","password":"b"}`,
			`{"payload":"MSH|^~\\&|","reason":"x","destinations":["d"]}`, `{"role":"admin","permissions":["audit"],"disabled":true}`,
			`{"name":"x","role":"viewer","owner":"o"}`, `{"stop":true}`, `[1,2]`, `{"reason":` + strings.Repeat("[", 100)} {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		op := ops[int(which)%len(ops)]
		req := httptest.NewRequest(op[0], op[1], strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer dux_"+strings.Repeat("a", 52))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 400 {
			var e Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s with %q: %d without a JSON error: %q", op[0], op[1], body, rec.Code, rec.Body.String())
			}
		}
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s with %q: 500 %s", op[0], op[1], body, rec.Body.String())
		}
	})
}

// An action whose audit row cannot be written is refused with 503 and
// Retry-After, and never reaches the engine (the engine here is nil: a
// call would panic).
func TestActionRefusedWhenAuditFails(t *testing.T) {
	h, err := New(Config{Access: access.New(auditFails{}, access.Policy{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]string{
		{"POST", "/api/v1/drain", ""},
		{"POST", "/api/v1/messages/m1/resend", ""},
		{"GET", "/api/v1/messages/m1/payload", ""},
		{"POST", "/api/v1/messages/dismiss", `{"ids":["m1"],"reason":"r"}`},
		{"GET", "/api/v1/audit/export", ""},
	} {
		req := httptest.NewRequest(c[0], c[1], strings.NewReader(c[2]))
		if c[2] != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer dux_"+strings.Repeat("a", 52))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "audit") {
			t.Errorf("%s %s: %d %q (Retry-After %q)", c[0], c[1], rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
		}
	}
}
