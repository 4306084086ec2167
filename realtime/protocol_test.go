package realtime

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/internal/testutil/backendtest"
)

// TestSnapshotUpdateUnsubscribe covers the normal life of a subscription on
// every backend: snapshot, updates with growing versions, observables
// filtered, unsubscribe.
func TestSnapshotUpdateUnsubscribe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, spec backendtest.Spec) {
		h := startHost(t, spec.OpenT(t))
		srv := startServer(t, h)
		ref := actor.Ref{Type: tallyType, ID: "a"}
		ask(t, h, ref, "add", 2)
		c := dial(t, srv.url, nil)
		c.send(subscribeFrame(ref, token(t, ref), nil, "n"))
		snap := c.expect(OpSnapshot, "")
		if intValue(t, snap.Values["n"]) != 2 || len(snap.Values) != 1 {
			t.Fatalf("snapshot %s: want only n=2", snap)
		}
		ask(t, h, ref, "label", "ignored") // not subscribed: no frame
		ask(t, h, ref, "add", 3)
		// An update committed before the snapshot's read but seen after it
		// may come first (it repeats what the snapshot shows).
		up, _ := c.untilValue("n", 5)
		if len(up.Changes) != 1 || up.Version <= snap.Version {
			t.Fatalf("update %s after snapshot version %d: want n=5 only, a higher version", up, snap.Version)
		}
		ask(t, h, ref, "add", 1)
		up2, _ := c.untilValue("n", 6)
		if up2.Version <= up.Version {
			t.Fatalf("versions must grow: %d then %d", up.Version, up2.Version)
		}
		c.send(map[string]any{"op": "unsubscribe", "ref": ref})
		c.expect(OpUnsubscribed, "")
		ask(t, h, ref, "add", 1)
		c.quiet(300 * time.Millisecond)
		if got := srv.metric(t, "ductus_realtime_subscriptions", ""); got != 0 {
			t.Fatalf("subscriptions gauge %v after unsubscribe, want 0", got)
		}
		if got := srv.metric(t, "ductus_realtime_updates_sent_total", ""); got < 2 {
			t.Fatalf("updates sent %v, want at least 2", got)
		}
	})
}

// TestRefusals sends every kind of refused subscription and bad frame on
// one connection: each gets its error frame and is counted, and the
// connection's good subscription keeps receiving updates throughout.
func TestRefusals(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h, func(c *Config) { c.MaxSubscriptions = 2 })
	good := actor.Ref{Type: tallyType, ID: "good"}
	c := dial(t, srv.url, nil)
	c.send(subscribeFrame(good, token(t, good), nil))
	c.expect(OpSnapshot, "")

	other := actor.Ref{Type: tallyType, ID: "other"}
	tok := token(t, other)
	kid, rest, _ := strings.Cut(tok, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	expired, err := testKeys.Sign(Claims{Ref: other, Observables: []string{"n"}, Expires: time.Now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ghost := actor.Ref{Type: "rt.ghost", ID: "x"}
	secret := actor.Ref{Type: tallyType, ID: "secret-1"}
	cases := []struct {
		name  string
		frame any
		raw   []byte
		code  string
	}{
		{"tampered signature", subscribeFrame(other, kid+"."+payload+"."+flip(sig), nil), nil, CodeBadToken},
		{"tampered payload", subscribeFrame(other, kid+"."+flip(payload)+"."+sig, nil), nil, CodeBadToken},
		{"unknown key", subscribeFrame(other, "k9."+payload+"."+sig, nil), nil, CodeBadToken},
		{"not a token", subscribeFrame(other, "hello", nil), nil, CodeBadToken},
		{"expired", subscribeFrame(other, expired, nil), nil, CodeTokenExpired},
		{"token for another actor", subscribeFrame(actor.Ref{Type: tallyType, ID: "third"}, tok, nil), nil, CodeTokenScope},
		{"observable not granted", subscribeFrame(other, token(t, other, "n"), nil, "label"), nil, CodeTokenScope},
		{"unknown type", subscribeFrame(ghost, token(t, ghost), nil), nil, CodeUnknownType},
		{"unknown observable", subscribeFrame(other, token(t, other, "n", "nope"), nil, "nope"), nil, CodeUnknownObs},
		{"policy refuses", subscribeFrame(secret, token(t, secret), nil), nil, CodeForbidden},
		{"unsubscribe unknown", map[string]any{"op": "unsubscribe", "ref": other}, nil, CodeNotSubscribed},
		{"not JSON", nil, []byte("{nope"), CodeBadFrame},
		{"unknown op", map[string]any{"op": "dance", "ref": other}, nil, CodeBadFrame},
		{"unknown field", map[string]any{"op": "subscribe", "ref": other, "token": tok, "extra": 1}, nil, CodeBadFrame},
		{"no token", map[string]any{"op": "subscribe", "ref": other}, nil, CodeBadFrame},
		{"negative since", map[string]any{"op": "subscribe", "ref": other, "token": tok, "since": -1}, nil, CodeBadFrame},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.metric(t, "ductus_realtime_refusals_total", tc.code)
			if tc.raw != nil {
				c.sendRaw(websocket.TextMessage, tc.raw)
			} else {
				c.send(tc.frame)
			}
			f := c.expect(OpError, tc.code)
			if f.Message == "" {
				t.Fatalf("error frame %s has no message", f)
			}
			if after := srv.metric(t, "ductus_realtime_refusals_total", tc.code); after != before+1 {
				t.Fatalf("refusals{code=%q} went %v -> %v, want +1", tc.code, before, after)
			}
		})
	}
	if got := srv.metric(t, "ductus_realtime_malformed_frames_total", ""); got != 5 {
		t.Fatalf("malformed frames %v, want 5", got)
	}
	c.sendRaw(websocket.BinaryMessage, []byte{1, 2})
	c.expect(OpError, CodeBadFrame)

	// The cap: good plus one more, then the third is refused.
	c.send(subscribeFrame(other, tok, nil))
	c.expect(OpSnapshot, "")
	third := actor.Ref{Type: tallyType, ID: "third"}
	c.send(subscribeFrame(third, token(t, third), nil))
	c.expect(OpError, CodeTooManySubs)

	// Refusals left the good subscription alone.
	ask(t, h, good, "add", 7)
	c.untilValue("n", 7)
}

// TestPolicySeesCaller: the caller Identify names reaches the policy.
func TestPolicySeesCaller(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h)
	secret := actor.Ref{Type: tallyType, ID: "secret-2"}
	c := dial(t, srv.url+"?user=admin", nil)
	c.send(subscribeFrame(secret, token(t, secret), nil))
	c.expect(OpSnapshot, "")
}

// TestConnectionRefusals: foreign Origin, too many connections per
// caller, an oversized frame.
func TestConnectionRefusals(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h, func(c *Config) { c.MaxConnsPerCaller = 2; c.MaxFrameBytes = 1024 })

	status := func(url string, hdr http.Header) int {
		ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
		if err == nil {
			ws.Close()
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	if got := status(srv.url, http.Header{"Origin": {"http://evil.example"}}); got != http.StatusForbidden {
		t.Fatalf("foreign origin: HTTP %d, want 403", got)
	}
	if got := status(srv.url+"?user=blocked", nil); got != http.StatusUnauthorized {
		t.Fatalf("a caller Identify refuses: HTTP %d, want 401", got)
	}
	same := "http://" + strings.TrimPrefix(srv.srv.URL, "http://")
	a := dial(t, srv.url+"?user=u1", http.Header{"Origin": {same}})
	dial(t, srv.url+"?user=u1", nil)
	if got := status(srv.url+"?user=u1", nil); got != http.StatusTooManyRequests {
		t.Fatalf("third connection of one caller: HTTP %d, want 429", got)
	}
	dial(t, srv.url+"?user=u2", nil) // another caller is not affected
	if got := srv.metric(t, "ductus_realtime_refusals_total", CodeOrigin); got != 1 {
		t.Fatalf("origin refusals %v, want 1", got)
	}
	if got := srv.metric(t, "ductus_realtime_refusals_total", CodeTooManyConns); got != 1 {
		t.Fatalf("connection refusals %v, want 1", got)
	}

	a.sendRaw(websocket.TextMessage, []byte(`{"op":"subscribe","token":"`+strings.Repeat("x", 2000)+`"}`))
	_ = a.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := a.ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("oversized frame: got %v, want close 1009", err)
	}
	testWaitMetric(t, srv, "ductus_realtime_refusals_total", CodeFrameTooLarge, 1)
	testWaitMetric(t, srv, "ductus_realtime_connections", "", 2) // a closed, the other two open
}

func testWaitMetric(t *testing.T, srv *server, name, code string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.metric(t, name, code) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s} = %v, want %v", name, code, srv.metric(t, name, code), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientScript: the handler serves the browser client.
func TestClientScript(t *testing.T) {
	h := startHost(t, openSQLite(t))
	srv := startServer(t, h)
	resp, err := http.Get(srv.srv.URL + "/rt" + ClientPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("client script: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp2, err := http.Get(srv.srv.URL + "/rt")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain GET: HTTP %d, want 400", resp2.StatusCode)
	}
}
