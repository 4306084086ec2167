package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/msgstore"
)

func post(t *testing.T, url, body string) (int, httpAnswer) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a httpAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a
}

type order struct {
	ID      string `json:"id"`
	Patient string `json:"patient"`
	Seq     int    `json:"seq"`
	Via     string `json:"via,omitempty"`
}

func httpProject(t *testing.T, listen, api, copies string) map[string]string {
	return map[string]string{
		"ductus.yaml": "partitions: 8\nscript: { isolates: 1, timeout: 2s }\napi: { listen: off }\n",
		"interfaces/orders/interface.yaml": fmt.Sprintf(`
format: json
source: { type: http, listen: %q, path: /orders, max_body_bytes: 2KiB }
ordering_key: $.patient
dedupe: { key: $.id, window: 1h }
destinations:
  api:
    type: http
    url: %q
    retry: { initial: 50ms, max: 200ms }
  copy:
    type: interface
    interface: copies
    transform: toCopy
`, listen, api),
		"interfaces/orders/transform.js": `
function transform(msg, meta) {
  if (msg.drop) return null;
  if (msg.bad) throw new Error("bad order " + msg.id);
  return { id: msg.id, patient: msg.patient, seq: msg.seq };
}
function toCopy(msg, meta) {
  if (msg.drop || msg.bad) return null;
  return { id: msg.id, patient: msg.patient, seq: msg.seq, via: meta.id };
}
`,
		"interfaces/copies/interface.yaml": fmt.Sprintf(`
format: json
source: { type: internal }
ordering_key: $.patient
destinations:
  out: { type: http, url: %q, retry: { initial: 50ms, max: 200ms } }
`, copies),
		"interfaces/copies/transform.js": `function transform(msg, meta) { msg.origin = meta.origin; return msg; }`,
	}
}

func TestHTTPInHTTPOutOrderedWithRouteFilterQuarantineDedupe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api, copies := newReceiver(t), newReceiver(t)
		listen := testutil.FreePort(t)
		e := running(t, project(t, httpProject(t, listen, api.srv.URL, copies.srv.URL)), be)
		url := "http://" + listen + "/orders"

		// 30 orders for 3 patients, sent in order; one filtered, one bad.
		var ids []string
		for i := 0; i < 30; i++ {
			o := map[string]any{"id": fmt.Sprintf("o%d", i), "patient": fmt.Sprintf("p%d", i%3), "seq": i}
			switch i {
			case 7:
				o["drop"] = true
			case 11:
				o["bad"] = true
			}
			b, _ := json.Marshal(o)
			code, a := post(t, url, string(b))
			if code != http.StatusAccepted || a.ID == "" || a.Status != "accepted" {
				t.Fatalf("POST %d = %d %+v", i, code, a)
			}
			ids = append(ids, a.ID)
		}
		// A repeat of an ID within the window is stored as a duplicate only.
		code, a := post(t, url, `{"id":"o3","patient":"p0","seq":3}`)
		if code != http.StatusAccepted || a.Status != "duplicate" || a.DuplicateOf != ids[3] {
			t.Fatalf("duplicate POST = %d %+v (want duplicate of %s)", code, a, ids[3])
		}

		testutil.Eventually(t, 20*time.Second, "28 deliveries to the API", func() bool { return api.count() == 28 })
		testutil.Eventually(t, 20*time.Second, "28 routed copies", func() bool { return copies.count() == 28 })
		time.Sleep(100 * time.Millisecond)
		for _, r := range []*receiver{api, copies} {
			got := decodeAll[order](t, r.bodies())
			if len(got) != 28 {
				t.Fatalf("received %d, want 28 (no duplicate delivered)", len(got))
			}
			last := map[string]int{}
			for _, o := range got {
				if prev, ok := last[o.Patient]; ok && o.Seq <= prev {
					t.Fatalf("patient %s: seq %d after %d: per-key order broken", o.Patient, o.Seq, prev)
				}
				last[o.Patient] = o.Seq
			}
		}
		if h := api.hdrs[0]; h.Get("Idempotency-Key") == "" || h.Get("X-Ductus-Message-Id") == "" {
			t.Fatalf("headers: %v", h)
		}

		ctx := context.Background()
		check := func(id, dest, want string) {
			t.Helper()
			ds, err := e.Store().Deliveries(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.Destination == dest {
					if d.Status != want {
						t.Fatalf("message %s to %s: %s (%s), want %s", id, dest, d.Status, d.Reason, want)
					}
					return
				}
			}
			t.Fatalf("message %s has no delivery to %s: %+v", id, dest, ds)
		}
		check(ids[0], "api", msgstore.DeliverySent)
		check(ids[7], "api", msgstore.DeliveryFiltered)
		check(ids[11], "api", msgstore.DeliveryQuarantined)
		ds, _ := e.Store().Deliveries(ctx, ids[11])
		if !strings.Contains(ds[0].Reason, "bad order o11") {
			t.Fatalf("quarantine reason %q", ds[0].Reason)
		}
		if st := msgstore.Settled(ds); st != msgstore.DeliveryQuarantined {
			t.Fatalf("settled %s", st)
		}
		m, err := e.Store().Get(ctx, ids[0])
		if err != nil || !bytes.Contains(m.Payload, []byte(`"o0"`)) || m.Lane >= 8 {
			t.Fatalf("stored message = %+v, %v", m, err)
		}
		// The routed copy knows where it came from.
		got := decodeAll[map[string]any](t, copies.bodies())
		if got[0]["origin"] == nil || got[0]["via"] == nil {
			t.Fatalf("routed copy lacks its origin: %v", got[0])
		}
	})
}

func TestHTTPSourceRefusesBadInputAndDestinationDownThenUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api, copies := newReceiver(t), newReceiver(t)
		listen := testutil.FreePort(t)
		running(t, project(t, httpProject(t, listen, api.srv.URL, copies.srv.URL)), be)
		url := "http://" + listen + "/orders"

		if code, a := post(t, url, "not json"); code != http.StatusUnsupportedMediaType || !strings.Contains(a.Error, "not json") {
			t.Fatalf("non-JSON = %d %+v", code, a)
		}
		if code, _ := post(t, url, `{"pad":"`+strings.Repeat("x", 3000)+`"}`); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("oversize = %d", code)
		}
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET = %v %v", resp, err)
		}
		resp.Body.Close()

		// The API is down: deliveries wait (in order) and go when it is back.
		api.fail.Store(http.StatusServiceUnavailable)
		for i := 0; i < 10; i++ {
			if code, _ := post(t, url, fmt.Sprintf(`{"id":"d%d","patient":"p","seq":%d}`, i, i)); code != http.StatusAccepted {
				t.Fatalf("POST %d = %d", i, code)
			}
		}
		testutil.Eventually(t, 10*time.Second, "the routed copies (another destination is not held up)", func() bool { return copies.count() == 10 })
		if api.count() != 0 {
			t.Fatal("delivered while down")
		}
		api.fail.Store(0)
		testutil.Eventually(t, 20*time.Second, "delivery after recovery", func() bool { return api.count() == 10 })
		for i, o := range decodeAll[order](t, api.bodies()) {
			if o.Seq != i {
				t.Fatalf("after recovery received %v", api.bodies())
			}
		}
	})
}
