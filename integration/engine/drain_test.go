package engine

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/api"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"
)

// A drain closes the gates (the MLLP listener closes, the HTTP source
// answers 503 with Retry-After), reports drained only once the pending
// delivery is sent, opens them again on DELETE, and with stop ends the
// engine once drained.
func TestAPIDrain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		recv := newReceiver(t)
		mllpAddr, httpAddr := testutil.FreePort(t), testutil.FreePort(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "partitions: 2\nscript: { isolates: 1 }\napi: { listen: \"127.0.0.1:0\" }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
destinations:
  out: { type: http, url: %q, retry: { initial: 10ms, max: 20ms } }
`, mllpAddr, recv.srv.URL),
			"interfaces/adt/transform.js": "function transform(msg) { return msg; }\n",
			"interfaces/web/interface.yaml": fmt.Sprintf(`
format: json
source: { type: http, listen: %q, path: /web }
destinations:
  out: { type: file, path: out/web }
`, httpAddr),
			"interfaces/web/transform.js": "function transform(msg) { return msg; }\n",
		})
		e := running(t, proj, be)
		testutil.Eventually(t, 10*time.Second, "the API to listen", func() bool { return e.APIAddr() != "" })
		base := "http://" + e.APIAddr()
		op, viewer, _ := actionTokens(t, e)
		post := func() (int, http.Header, string) {
			t.Helper()
			resp, err := http.Post("http://"+httpAddr+"/web", "application/json", strings.NewReader(`{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, string(b)
		}
		drain := func(token, method, body string, want int) api.Drain {
			t.Helper()
			var d api.Drain
			callJSON(t, base, token, method, "/api/v1/drain", body, want, &d)
			return d
		}

		recv.fail.Store(http.StatusServiceUnavailable)
		sendStored(t, base, op, mllpAddr, "M1", "K", "pending")
		if d := drain(viewer, "GET", "", 200); d.Draining || d.Drained || d.Pending != 1 {
			t.Fatalf("before the drain: %+v", d)
		}
		if st, b := call(t, base, viewer, "POST", "/api/v1/drain", ""); st != 403 {
			t.Fatalf("a viewer's drain: %d %s", st, b)
		}
		if d := drain(op, "POST", "", 200); !d.Draining || d.Drained || d.Since == nil {
			t.Fatalf("a drain with a delivery pending: %+v", d)
		}
		testutil.Eventually(t, 10*time.Second, "the MLLP listener to close", func() bool {
			c, err := net.DialTimeout("tcp", mllpAddr, time.Second)
			if err == nil {
				c.Close()
			}
			return err != nil
		})
		if st, h, b := post(); st != 503 || h.Get("Retry-After") == "" || !strings.Contains(b, "draining") {
			t.Fatalf("the HTTP source while draining: %d %v %s", st, h, b)
		}
		if d := drain(viewer, "GET", "", 200); d.Drained || d.Pending != 1 {
			t.Fatalf("drained with a delivery pending: %+v", d)
		}
		recv.fail.Store(0)
		testutil.Eventually(t, 20*time.Second, "drained", func() bool {
			d := drain(viewer, "GET", "", 200)
			return d.Drained && d.Pending == 0 && d.InFlight == 0
		})
		if recv.count() != 1 {
			t.Fatalf("the receiver got %d messages, want 1", recv.count())
		}

		if d := drain(op, "DELETE", "", 200); d.Draining || d.Drained {
			t.Fatalf("after the gates opened: %+v", d)
		}
		if st, b := call(t, base, op, "DELETE", "/api/v1/drain", ""); st != 409 {
			t.Fatalf("opening open gates: %d %s", st, b)
		}
		listening := func() {
			t.Helper()
			testutil.Eventually(t, 10*time.Second, "the MLLP listener to listen again", func() bool {
				c, err := net.DialTimeout("tcp", mllpAddr, time.Second)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		}
		listening()
		sendStored(t, base, op, mllpAddr, "M2", "K", "sent")
		if st, _, b := post(); st != 202 {
			t.Fatalf("the HTTP source after the drain: %d %s", st, b)
		}

		// A drain cancelled at once still leaves the MLLP source
		// listening (its server's shutdown may end after the cancel).
		drain(op, "POST", "", 200)
		drain(op, "DELETE", "", 200)
		listening()
		sendStored(t, base, op, mllpAddr, "M3", "K", "sent")

		// With stop, the engine ends once drained.
		drain(op, "POST", `{"stop":true}`, 200)
		testutil.Eventually(t, 20*time.Second, "the engine to stop", func() bool {
			_, err := http.Get(base + "/api/v1/health")
			return err != nil
		})
	})
}
