package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// apiEngine runs an engine with its operator API on a free port: an ADT
// feed over MLLP to a file archive (saving its output) and to an EMR
// that never answers, whose deliveries are quarantined after two
// attempts.
func apiEngine(t *testing.T, be ixstore.Backend) (e *Engine, base, mllpAddr string) {
	t.Helper()
	mllpAddr, dead := testutil.FreePort(t), testutil.FreePort(t)
	host, port, _ := strings.Cut(dead, ":")
	proj := project(t, map[string]string{
		"ductus.yaml": "partitions: 4\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
		"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
destinations:
  archive: { type: file, path: out/archive, name: "{{.ID}}.hl7", save_output: true }
  emr:
    type: mllp
    host: %s
    port: %s
    ack_timeout: 1s
    retry: { initial: 10ms, max: 20ms, max_attempts: 2 }
`, mllpAddr, host, port),
		"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
	})
	e = running(t, proj, be)
	testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
	return e, "http://" + e.APIAddr(), mllpAddr
}

// call makes one API request; token "" sends no credentials.
func call(t *testing.T, base, token, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, nil // a stream (GET /events) never ends: its status is the answer
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// callJSON is call expecting want and decoding the body into v.
func callJSON(t *testing.T, base, token, method, path, body string, want int, v any) {
	t.Helper()
	st, b := call(t, base, token, method, path, body)
	if st != want {
		t.Fatalf("%s %s: %d %s; want %d", method, path, st, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// newToken creates a token directly in the engine's store.
func newToken(t *testing.T, e *Engine, name string, role access.Role, perms ...access.Perm) (id, secret string) {
	t.Helper()
	by := &access.Principal{Name: "test", Via: access.ViaCLI, Role: access.Admin}
	tok, secret, err := e.Access().CreateToken(context.Background(), by, access.NewToken{Name: name, Role: role, Perms: perms})
	if err != nil {
		t.Fatal(err)
	}
	return tok.ID, secret
}

// testPassword is the password the tests' accounts are made with.
const testPassword = "correct horse battery"

// newUser creates an account directly in the engine's store, its
// password testPassword and not to be changed.
func newUser(t *testing.T, e *Engine, name string, role access.Role, perms ...access.Perm) {
	t.Helper()
	by := &access.Principal{Name: "test", Via: access.ViaCLI, Role: access.Admin}
	if _, err := e.Access().CreateUser(context.Background(), by, access.NewUser{Name: name, Password: testPassword, Role: role, Perms: perms}); err != nil {
		t.Fatal(err)
	}
}

// storedMessage sends one ADT message and returns its stored ID.
func storedMessage(t *testing.T, e *Engine, base, mllpAddr, token string) string {
	t.Helper()
	if ack := sendOne(t, mllpAddr, hl7With("API1", "MRN7", "")); ack.Code != "AA" {
		t.Fatalf("ACK %s", ack.Code)
	}
	var page api.MessagePage
	callJSON(t, base, token, "GET", "/api/v1/interfaces/adt/messages", "", 200, &page)
	if len(page.Messages) != 1 {
		t.Fatalf("messages: %+v", page)
	}
	return page.Messages[0].Id
}

// Every operation of the access table, called as anonymous, viewer,
// operator, admin and an admin with both permissions: each refusal is 401
// or 403 with a JSON error, and each allowed call succeeds.
func TestAPIAccessByRole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr := apiEngine(t, be)
		_, full := newToken(t, e, "full", access.Admin, access.Payloads, access.Audit)
		msgID := storedMessage(t, e, base, mllpAddr, full)
		newUser(t, e, "target", access.Viewer)
		made := 0
		callers := []struct {
			name  string
			role  access.Role
			perms access.Perms
		}{
			{"anonymous", access.RoleNone, nil},
			{"viewer", access.Viewer, nil},
			{"operator", access.Operator, nil},
			{"admin", access.Admin, nil},
			{"admin+payloads+audit", access.Admin, access.AllPerms},
		}
		// The request each operation is called with; a fresh token to
		// revoke each time.
		requests := map[string]func() (method, path, body string){
			"getHealth":         func() (string, string, string) { return "GET", "/api/v1/health", "" },
			"getOpenAPI":        func() (string, string, string) { return "GET", "/api/v1/openapi.json", "" },
			"getEngine":         func() (string, string, string) { return "GET", "/api/v1/engine", "" },
			"whoAmI":            func() (string, string, string) { return "GET", "/api/v1/me", "" },
			"listInterfaces":    func() (string, string, string) { return "GET", "/api/v1/interfaces", "" },
			"listMessages":      func() (string, string, string) { return "GET", "/api/v1/interfaces/adt/messages?limit=5", "" },
			"getHotspots":       func() (string, string, string) { return "GET", "/api/v1/interfaces/adt/hotspots", "" },
			"getMessage":        func() (string, string, string) { return "GET", "/api/v1/messages/" + msgID, "" },
			"listQuarantine":    func() (string, string, string) { return "GET", "/api/v1/quarantine", "" },
			"getMessagePayload": func() (string, string, string) { return "GET", "/api/v1/messages/" + msgID + "/payload", "" },
			"getMetrics":        func() (string, string, string) { return "GET", "/metrics", "" },
			// An action may find nothing quarantined (409): that answer,
			// too, comes only after the access check passed.
			"resendMessage": func() (string, string, string) { return "POST", "/api/v1/messages/" + msgID + "/resend", "" },
			// Each pause is undone by the next resume, so both find
			// work in turn or answer 409 after the access check.
			"pauseDestination": func() (string, string, string) {
				return "POST", "/api/v1/interfaces/adt/destinations/archive/pause", `{"reason":"access test"}`
			},
			"resumeDestination": func() (string, string, string) {
				return "DELETE", "/api/v1/interfaces/adt/destinations/archive/pause", ""
			},
			"getDrain":   func() (string, string, string) { return "GET", "/api/v1/drain", "" },
			"getEvents":  func() (string, string, string) { return "GET", "/api/v1/events", "" },
			"startDrain": func() (string, string, string) { return "POST", "/api/v1/drain", "" },
			"stopDrain":  func() (string, string, string) { return "DELETE", "/api/v1/drain", "" },
			"bulkResend": func() (string, string, string) {
				return "POST", "/api/v1/messages/resend", `{"ids":["` + msgID + `"]}`
			},
			"bulkDismiss": func() (string, string, string) {
				return "POST", "/api/v1/messages/dismiss", `{"ids":["` + msgID + `"],"reason":"access test"}`
			},
			"editMessage": func() (string, string, string) {
				return "POST", "/api/v1/messages/" + msgID + "/edit", `{"reason":"access test","payload":` + string(mustJSON(string(hl7With("API1", "MRN8", "")))) + `}`
			},
			"dismissMessage": func() (string, string, string) {
				return "POST", "/api/v1/messages/" + msgID + "/dismiss", `{"reason":"access test"}`
			},
			"listAudit":   func() (string, string, string) { return "GET", "/api/v1/audit", "" },
			"exportAudit": func() (string, string, string) { return "GET", "/api/v1/audit/export?action=createToken", "" },
			"listTokens":  func() (string, string, string) { return "GET", "/api/v1/tokens", "" },
			"createToken": func() (string, string, string) {
				return "POST", "/api/v1/tokens", `{"name":"made","role":"viewer","permissions":["payloads"]}`
			},
			"revokeToken": func() (string, string, string) {
				id, _ := newToken(t, e, "doomed", access.Viewer)
				return "DELETE", "/api/v1/tokens/" + id, ""
			},
			// Sign-in is public and succeeds for anyone with the password;
			// the session operations answer a token 409 (it has no
			// session) once the access check has passed.
			"createSession": func() (string, string, string) {
				return "POST", "/api/v1/session", `{"name":"target","password":"` + testPassword + `"}`
			},
			"deleteSession":       func() (string, string, string) { return "DELETE", "/api/v1/session", "" },
			"deleteOtherSessions": func() (string, string, string) { return "DELETE", "/api/v1/me/sessions", "" },
			"changePassword": func() (string, string, string) {
				return "POST", "/api/v1/me/password", `{"current":"` + testPassword + `","new":"another password 1"}`
			},
			"listUsers": func() (string, string, string) { return "GET", "/api/v1/users", "" },
			"createUser": func() (string, string, string) {
				made++
				return "POST", "/api/v1/users", fmt.Sprintf(`{"name":"made%d","password":"%s","role":"viewer"}`, made, testPassword)
			},
			"updateUser": func() (string, string, string) {
				return "PATCH", "/api/v1/users/target", `{"permissions":["payloads"]}`
			},
			"resetPassword": func() (string, string, string) {
				return "PUT", "/api/v1/users/target/password", `{"password":"` + testPassword + `"}`
			},
		}
		for op := range access.Table {
			if requests[op] == nil {
				t.Fatalf("operation %s is in the access table but this test does not call it", op)
			}
		}
		for _, c := range callers {
			token := ""
			if c.role != access.RoleNone {
				_, token = newToken(t, e, c.name, c.role, c.perms...)
			}
			for op, rule := range access.Table {
				method, path, body := requests[op]()
				st, b := call(t, base, token, method, path, body)
				want := "ok"
				switch {
				case rule.Public:
				case c.role == access.RoleNone:
					want = "401"
				case c.role < rule.Role || (rule.Perm != "" && !c.perms.Has(rule.Perm)):
					want = "403"
				}
				got := "ok"
				if st == 401 || st == 403 {
					got = fmt.Sprint(st)
					var e api.Error
					if json.Unmarshal(b, &e) != nil || e.Error == "" {
						t.Errorf("%s as %s: %d without a JSON error: %s", op, c.name, st, b)
					}
				} else if st >= 300 && !(st == http.StatusConflict && (rule.Role == access.Operator || rule.DuringPasswordChange || op == "deleteOtherSessions")) {
					got = fmt.Sprintf("%d %s", st, b)
				}
				if got != want {
					t.Errorf("%s (%s %s) as %s: got %s, want %s", op, method, path, c.name, got, want)
				}
			}
		}
	})
}

// What the API shows of a message and its deliveries, the payload read
// audited before it is answered, a revoked token refused on its next call,
// and the counts and metrics moving.
func TestAPIMessagesAuditAndRevocation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, mllpAddr := apiEngine(t, be)
		_, full := newToken(t, e, "full", access.Admin, access.Payloads, access.Audit)
		id := storedMessage(t, e, base, mllpAddr, full)

		var m api.Message
		testutil.Eventually(t, 20*time.Second, "archive sent and emr quarantined", func() bool {
			callJSON(t, base, full, "GET", "/api/v1/messages/"+id, "", 200, &m)
			st := map[string]api.DeliveryStatus{}
			for _, d := range m.Deliveries {
				st[d.Destination] = d.Status
			}
			return st["archive"] == "sent" && st["emr"] == "quarantined"
		})
		if m.Settled != "quarantined" || m.Message.OrderingKey == nil || *m.Message.OrderingKey != "MRN7" {
			t.Fatalf("message: %+v", m)
		}
		var list api.InterfaceList
		callJSON(t, base, full, "GET", "/api/v1/interfaces", "", 200, &list)
		counts := map[string][2]int64{}
		for _, d := range list.Interfaces[0].Destinations {
			counts[d.Name] = [2]int64{d.Pending, d.Quarantined}
		}
		if list.Interfaces[0].State != "running" || counts["archive"] != [2]int64{0, 0} || counts["emr"] != [2]int64{0, 1} {
			t.Fatalf("interfaces: %+v (pending, quarantined by destination: %v)", list, counts)
		}
		// Since this engine started: archive sent one (with its latency),
		// emr quarantined one and sent none.
		for _, d := range list.Interfaces[0].Destinations {
			ss := d.SinceStart
			switch {
			case ss == nil:
				t.Fatalf("%s: no since_start", d.Name)
			case d.Name == "archive" && (ss.Sent != 1 || ss.Quarantined != 0 || ss.LatencyP50Ms == nil || *ss.LatencyP50Ms <= 0 || *ss.LatencyP95Ms < *ss.LatencyP50Ms):
				t.Fatalf("archive since start: %+v", *ss)
			case d.Name == "emr" && (ss.Sent != 0 || ss.Quarantined != 1 || ss.LatencyP50Ms != nil):
				t.Fatalf("emr since start: %+v", *ss)
			}
		}

		var p api.MessagePayload
		callJSON(t, base, full, "GET", "/api/v1/messages/"+id+"/payload", "", 200, &p)
		if p.Encoding != "utf-8" || !strings.Contains(p.Payload, "MRN7") || p.Segments == nil || len(p.Outputs) != 1 || p.Outputs[0].Destination != "archive" {
			t.Fatalf("payload: %+v", p)
		}
		var pid5 string
		for _, s := range *p.Segments {
			for _, f := range s.Fields {
				if f.Position == "PID-5" {
					pid5 = f.Value
				}
			}
		}
		if pid5 != "Doe^Jane" {
			t.Fatalf("parsed view: PID-5 = %q in %+v", pid5, *p.Segments)
		}
		var audit api.AuditPage
		callJSON(t, base, full, "GET", "/api/v1/audit?action=getMessagePayload", "", 200, &audit)
		if len(audit.Entries) != 1 || audit.Entries[0].Actor != "full" || audit.Entries[0].Via != "token" || *audit.Entries[0].Target != id {
			t.Fatalf("audit: %+v", audit)
		}

		// The export: every row oldest first, one JSON object a line, its
		// own row included; filtered by action and time.
		st, raw := call(t, base, full, "GET", "/api/v1/audit/export", "")
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		var first, last api.AuditEntry
		if st != 200 || len(lines) < 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil {
			t.Fatalf("export: %d %q", st, raw)
		}
		if first.Id >= last.Id || last.Action != "exportAudit" || last.Actor != "full" {
			t.Fatalf("export: first %+v, last %+v", first, last)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if st, raw := call(t, base, full, "GET", "/api/v1/audit/export?action=getMessagePayload&since="+future, ""); st != 200 || len(raw) != 0 {
			t.Fatalf("an export of the future: %d %q", st, raw)
		}
		if st, raw := call(t, base, full, "GET", "/api/v1/audit/export?action=getMessagePayload&until="+future, ""); st != 200 || strings.Count(string(raw), "\n") != 1 {
			t.Fatalf("an export of the payload reads: %d %q", st, raw)
		}

		// A token made through the API works at once and stops at once.
		var made api.CreatedToken
		callJSON(t, base, full, "POST", "/api/v1/tokens", `{"name":"ci","role":"viewer"}`, 201, &made)
		var me api.Principal
		callJSON(t, base, made.Secret, "GET", "/api/v1/me", "", 200, &me)
		if me.Name != "ci" || me.Role != "viewer" || me.Via != "token" {
			t.Fatalf("me: %+v", me)
		}
		callJSON(t, base, full, "DELETE", "/api/v1/tokens/"+made.Token.Id, "", 204, nil)
		if st, b := call(t, base, made.Secret, "GET", "/api/v1/me", ""); st != 401 || !bytes.Contains(b, []byte("revoked")) {
			t.Fatalf("a revoked token: %d %s", st, b)
		}
		var toks api.TokenList
		callJSON(t, base, full, "GET", "/api/v1/tokens", "", 200, &toks)
		for _, tk := range toks.Tokens {
			if tk.Id == made.Token.Id && !tk.Revoked {
				t.Fatalf("token list: %+v", tk)
			}
		}
		if _, b := call(t, base, full, "GET", "/api/v1/tokens", ""); bytes.Contains(b, []byte(made.Secret)) || bytes.Contains(b, []byte(access.HashToken(made.Secret))) {
			t.Fatal("the token list shows a secret or its hash")
		}

		st, b := call(t, base, full, "GET", "/metrics", "")
		if st != 200 || !bytes.Contains(b, []byte("ductus_")) {
			t.Fatalf("metrics: %d %.300s", st, b)
		}
		checkDashboard(t, b)
		// The queue gauges agree with /interfaces.
		for _, want := range []string{
			`ductus_destination_quarantined{destination="emr",interface="adt"} 1`,
			`ductus_destination_pending{destination="archive",interface="adt"} 0`,
			`ductus_destination_paused{destination="emr",interface="adt"} 0`,
			`ductus_engine_draining 0`,
		} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

// Malformed requests are refused with 400 (or 404, 413) naming what is
// wrong, before anything is written.
func TestAPIBadInput(t *testing.T) {
	e, base, _ := apiEngine(t, testBackend(t))
	_, admin := newToken(t, e, "admin", access.Admin, access.AllPerms...)
	cases := []struct {
		name, method, path, body string
		status                   int
		field, says              string
	}{
		{"unknown field", "POST", "/api/v1/tokens", `{"name":"x","role":"viewer","colour":"red"}`, 400, "", "colour"},
		{"wrong type", "POST", "/api/v1/tokens", `{"name":7,"role":"viewer"}`, 400, "name", ""},
		{"bad enum", "POST", "/api/v1/tokens", `{"name":"x","role":"root"}`, 400, "role", ""},
		{"missing field", "POST", "/api/v1/tokens", `{"name":"x"}`, 400, "", "role"},
		{"not JSON", "POST", "/api/v1/tokens", `{"name":`, 400, "", ""},
		{"too big", "POST", "/api/v1/tokens", `{"name":"` + strings.Repeat("x", 2<<20) + `","role":"viewer"}`, 413, "body", ""},
		{"limit too small", "GET", "/api/v1/interfaces/adt/messages?limit=0", "", 400, "limit", ""},
		{"limit not a number", "GET", "/api/v1/audit?limit=ten", "", 400, "limit", ""},
		{"unknown interface", "GET", "/api/v1/interfaces/nope/messages", "", 404, "", "nope"},
		{"unknown message", "GET", "/api/v1/messages/0190-nope", "", 404, "", "0190-nope"},
		{"unknown token", "DELETE", "/api/v1/tokens/tok_nope", "", 404, "", "tok_nope"},
		{"unknown path", "GET", "/api/v1/nothing", "", 404, "", "/api/v1/nothing"},
		{"a JWT for a token", "GET", "/api/v1/me", "", 401, "", "dux_"},
		// Credentials are checked before parameters: a caller without
		// them learns nothing from the validation.
		{"bad credentials and a bad limit", "GET", "/api/v1/audit?limit=ten", "", 401, "", "dux_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			token := admin
			if c.status == 401 {
				token = "eyJhbGciOiJIUzI1NiJ9.e30.x"
			}
			st, b := call(t, base, token, c.method, c.path, c.body)
			var body api.Error
			if err := json.Unmarshal(b, &body); err != nil || body.Error == "" {
				t.Fatalf("%d %s: not a JSON error", st, b)
			}
			if st != c.status || (c.field != "" && (body.Field == nil || *body.Field != c.field)) || !strings.Contains(body.Error, c.says) {
				t.Fatalf("%d %s; want %d, field %q, saying %q", st, b, c.status, c.field, c.says)
			}
		})
	}
	var toks api.TokenList
	callJSON(t, base, admin, "GET", "/api/v1/tokens", "", 200, &toks)
	if len(toks.Tokens) != 1 {
		t.Fatalf("a refused request created a token: %+v", toks)
	}
}

// An export longer than a page (500 rows) streams every row once, in
// order, across the pages.
func TestAPIAuditExportPages(t *testing.T) {
	e, base, _ := apiEngine(t, testBackend(t))
	_, auditor := newToken(t, e, "auditor", access.Viewer, access.Audit)
	by := &access.Principal{Name: "bulk", Via: access.ViaCLI, Role: access.Admin}
	for i := range 1201 {
		if err := e.Access().Audit(context.Background(), nil, by, "bulkAction", fmt.Sprint(i), "ok", nil); err != nil {
			t.Fatal(err)
		}
	}
	st, raw := call(t, base, auditor, "GET", "/api/v1/audit/export?actor=bulk", "")
	if st != 200 {
		t.Fatalf("export: %d %.300s", st, raw)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 1201 {
		t.Fatalf("%d lines, want 1201", len(lines))
	}
	for i, l := range lines {
		var en api.AuditEntry
		if err := json.Unmarshal([]byte(l), &en); err != nil || en.Target == nil || *en.Target != fmt.Sprint(i) {
			t.Fatalf("line %d: %q (%v)", i, l, err)
		}
	}
}
