package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
)

// browser is a signed-in browser: the session cookie, sent the way the
// console sends it (with the CSRF header unless told otherwise).
type browser struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
}

// signIn posts a name and password and returns the status, the body and
// the browser holding the cookie it set (nil cookie when none).
func signIn(t *testing.T, base, name, password string) (int, []byte, *browser) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "password": password})
	resp, err := http.Post(base+"/api/v1/session", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	br := &browser{t: t, base: base}
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			br.cookie = c
		}
	}
	return resp.StatusCode, b, br
}

// do makes a request with the cookie; csrf adds the X-Ductus header.
func (br *browser) do(csrf bool, method, path, body string) (int, []byte, *http.Response) {
	br.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, br.base+path, rd)
	if err != nil {
		br.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf {
		req.Header.Set(api.CSRFHeader, "1")
	}
	if br.cookie != nil {
		req.AddCookie(br.cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		br.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp
}

// expect is do with the CSRF header, failing unless the status is want.
func (br *browser) expect(method, path, body string, want int, v any) {
	br.t.Helper()
	st, b, _ := br.do(true, method, path, body)
	if st != want {
		br.t.Fatalf("%s %s with the session: %d %s; want %d", method, path, st, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			br.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// refused checks an answer's status and that its error says what.
func refused(t *testing.T, what string, st int, b []byte, want int, says string) {
	t.Helper()
	var e api.Error
	if st != want || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, says) {
		t.Fatalf("%s: %d %s; want %d saying %q", what, st, b, want, says)
	}
}

// Accounts and browser sessions end to end: an account an admin made
// must change its password before anything else; the cookie is HttpOnly,
// SameSite=Strict and scoped to the API; a change without the CSRF header
// is refused; a password change ends the other sessions; wrong passwords
// lock the account until an admin resets it; a disabled account's
// sessions and tokens stop; the last admin cannot be demoted; no password
// reaches the audit log.
func TestAPISessions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		e, base, _ := apiEngine(t, be)
		_, admin := newToken(t, e, "admin", access.Admin, access.AllPerms...)
		const first, second = "chosen by the admin", "chosen by ana herself"

		var u api.User
		callJSON(t, base, admin, "POST", "/api/v1/users", `{"name":"ana","password":"`+first+`","role":"operator","permissions":["payloads"]}`, 201, &u)
		if !u.MustChangePassword || u.Role != "operator" || u.Locked || u.Disabled {
			t.Fatalf("created: %+v", u)
		}
		st, b := call(t, base, admin, "POST", "/api/v1/users", `{"name":"ana","password":"`+first+`","role":"viewer"}`)
		refused(t, "a second ana", st, b, 409, "exists")
		st, b = call(t, base, admin, "POST", "/api/v1/users", `{"name":"bo","password":"short","role":"viewer"}`)
		refused(t, "a short password", st, b, 400, "at least 10")

		// One answer for an unknown name and a wrong password.
		st, b, _ = signIn(t, base, "nobody", first)
		refused(t, "unknown name", st, b, 401, "wrong name or password")
		st, b, _ = signIn(t, base, "ana", "not the password")
		refused(t, "wrong password", st, b, 401, "wrong name or password")
		// MySQL compares "ana " equal to "ana": such a name is no account.
		st, b, _ = signIn(t, base, "ana ", first)
		refused(t, "a name with a trailing space", st, b, 401, "wrong name or password")

		st, b, a := signIn(t, base, "ana", first)
		if st != 201 || a.cookie == nil {
			t.Fatalf("sign-in: %d %s, cookie %v", st, b, a.cookie)
		}
		if !a.cookie.HttpOnly || a.cookie.SameSite != http.SameSiteStrictMode || a.cookie.Path != "/api" || !strings.HasPrefix(a.cookie.Value, access.SessionPrefix) {
			t.Fatalf("cookie: %+v", a.cookie)
		}
		var me api.Principal
		a.expect("GET", "/api/v1/me", "", 200, &me)
		if me.Name != "ana" || me.Via != "session" || me.Role != "operator" || me.MustChangePassword == nil || !*me.MustChangePassword {
			t.Fatalf("me: %+v", me)
		}
		st, b, _ = a.do(true, "GET", "/api/v1/interfaces", "")
		refused(t, "before the password change", st, b, 403, "must change")
		if !bytes.Contains(b, []byte(api.CodePasswordChange)) {
			t.Fatalf("no code %s in %s", api.CodePasswordChange, b)
		}
		change := `{"current":"` + first + `","new":"` + second + `"}`
		st, b, _ = a.do(false, "POST", "/api/v1/me/password", change)
		refused(t, "a change without the CSRF header", st, b, 403, api.CSRFHeader)
		st, b, _ = a.do(true, "POST", "/api/v1/me/password", `{"current":"wrong one!!","new":"`+second+`"}`)
		refused(t, "a wrong current password", st, b, 400, "current password is wrong")
		a.expect("POST", "/api/v1/me/password", change, 204, nil)
		a.expect("GET", "/api/v1/interfaces", "", 200, nil)
		st, b, _ = a.do(false, "POST", "/api/v1/drain", "")
		refused(t, "drain without the CSRF header", st, b, 403, api.CSRFHeader)

		// A second browser; the first signs every other session out.
		st, _, b2 := signIn(t, base, "ana", second)
		if st != 201 {
			t.Fatalf("second sign-in: %d", st)
		}
		b2.expect("GET", "/api/v1/me", "", 200, nil)
		var ended api.SessionsEnded
		a.expect("DELETE", "/api/v1/me/sessions", "", 200, &ended)
		if ended.Ended != 1 {
			t.Fatalf("ended %d sessions, want 1", ended.Ended)
		}
		st, b, _ = b2.do(true, "GET", "/api/v1/me", "")
		refused(t, "a session signed out elsewhere", st, b, 401, "sign in again")
		a.expect("GET", "/api/v1/me", "", 200, nil)

		// Five wrong passwords lock the account, even for the right one.
		for range 5 {
			signIn(t, base, "ana", "still not it")
		}
		st, b, _ = signIn(t, base, "ana", second)
		refused(t, "a locked account", st, b, 401, "locked")
		var users api.UserList
		callJSON(t, base, admin, "GET", "/api/v1/users", "", 200, &users)
		if len(users.Users) != 1 || !users.Users[0].Locked || users.Users[0].LockedUntil == nil {
			t.Fatalf("users: %+v", users)
		}
		// An admin's reset clears the lock, ends the sessions and asks for
		// a change again.
		callJSON(t, base, admin, "PUT", "/api/v1/users/ana/password", `{"password":"`+first+`"}`, 204, nil)
		st, b, _ = a.do(true, "GET", "/api/v1/me", "")
		refused(t, "a session after a reset", st, b, 401, "sign in again")
		st, b, a = signIn(t, base, "ana", first)
		if st != 201 || !bytes.Contains(b, []byte(`"must_change_password":true`)) {
			t.Fatalf("sign-in after a reset: %d %s", st, b)
		}

		// A token that belongs to an account acts as it at most, and
		// stops when it is disabled, as do its sessions.
		newUser(t, e, "bob", access.Viewer)
		var tok api.CreatedToken
		callJSON(t, base, admin, "POST", "/api/v1/tokens", `{"name":"bob's","role":"admin","permissions":["audit"],"owner":"bob"}`, 201, &tok)
		callJSON(t, base, tok.Secret, "GET", "/api/v1/me", "", 200, &me)
		if me.Role != "viewer" || len(me.Permissions) != 0 {
			t.Fatalf("bob's token acts as %+v, want a viewer without permissions", me)
		}
		st, b = call(t, base, tok.Secret, "POST", "/api/v1/drain", "")
		refused(t, "bob's token draining", st, b, 403, "operator")
		st, _, bob := signIn(t, base, "bob", testPassword)
		if st != 201 {
			t.Fatalf("bob's sign-in: %d", st)
		}
		callJSON(t, base, admin, "PATCH", "/api/v1/users/bob", `{"disabled":true}`, 200, &u)
		st, b = call(t, base, tok.Secret, "GET", "/api/v1/me", "")
		refused(t, "a disabled account's token", st, b, 401, "disabled")
		st, b, _ = bob.do(true, "GET", "/api/v1/me", "")
		refused(t, "a disabled account's session", st, b, 401, "")
		st, b, _ = signIn(t, base, "bob", testPassword)
		refused(t, "a disabled account signing in", st, b, 401, "disabled")
		st, b = call(t, base, admin, "POST", "/api/v1/tokens", `{"name":"x","role":"viewer","owner":"nobody"}`)
		refused(t, "a token for no account", st, b, 400, "nobody")

		// The only enabled admin account cannot be demoted or disabled.
		newUser(t, e, "root", access.Admin)
		st, b = call(t, base, admin, "PATCH", "/api/v1/users/root", `{"role":"viewer"}`)
		refused(t, "demoting the last admin", st, b, 409, "only enabled admin")
		st, b = call(t, base, admin, "PATCH", "/api/v1/users/ana", `{}`)
		refused(t, "an empty change", st, b, 400, "")

		// Sign out: the cookie is cleared and the session is gone.
		st, _, resp := a.do(true, "DELETE", "/api/v1/session", "")
		if st != 204 || !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
			t.Fatalf("sign-out: %d, Set-Cookie %q", st, resp.Header.Get("Set-Cookie"))
		}
		st, b, _ = a.do(true, "GET", "/api/v1/me", "")
		refused(t, "a signed-out session", st, b, 401, "sign in again")

		// One address gets 20 sign-in attempts at once, then one every
		// 3 s: a burst from it is refused with 429 and Retry-After.
		limited := false
		for range 25 {
			body, _ := json.Marshal(map[string]string{"name": "nobody", "password": "guess guess guess"})
			resp, err := http.Post(base+"/api/v1/session", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				limited = resp.Header.Get("Retry-After") != ""
				break
			}
		}
		if !limited {
			t.Fatal("25 sign-ins in a burst from one address were not limited (429 with Retry-After)")
		}

		// Every sign-in is in the audit log, and no password is.
		_, raw := call(t, base, admin, "GET", "/api/v1/audit?limit=200", "")
		for _, secret := range []string{first, second, testPassword, "still not it", "not the password"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Fatalf("the audit log holds the password %q", secret)
			}
		}
		var audit api.AuditPage
		callJSON(t, base, admin, "GET", "/api/v1/audit?action=createSession&limit=200", "", 200, &audit)
		outcomes := map[string]int{}
		for _, en := range audit.Entries {
			outcomes[string(en.Outcome)]++
		}
		if outcomes["ok"] < 4 || outcomes["refused"] < 10 {
			t.Fatalf("sign-in audit rows: %v", outcomes)
		}
	})
}
