package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/format"
	"github.com/ductus/ductus/integration/msgstore"
)

// jsonProject is one internal JSON interface keyed by $.k with the given
// destinations (YAML under "destinations:") and transform.
func jsonProject(dests, js string, extra map[string]string) map[string]string {
	files := map[string]string{
		"ductus.yaml": "partitions: 8\nscript: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/feed/interface.yaml": `
format: json
source: { type: internal }
ordering_key: $.k
destinations:
` + dests,
		"interfaces/feed/transform.js": js,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func intakeJSON(t *testing.T, e *Engine, docs ...string) []Stored {
	t.Helper()
	recs := make([]Record, len(docs))
	for i, d := range docs {
		recs[i] = Record{Payload: []byte(d)}
	}
	st, err := e.Intake(context.Background(), "feed", recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

type doc struct {
	K  string `json:"k"`
	ID string `json:"id"`
}

func docsOf(t *testing.T, reqs []request) []doc {
	t.Helper()
	out := make([]doc, len(reqs))
	for i, r := range reqs {
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			t.Fatalf("body %q: %v", r.Body, err)
		}
	}
	return out
}

func idsOfKey(ds []doc, k string) []string {
	var out []string
	for _, d := range ds {
		if d.K == k {
			out = append(out, d.ID)
		}
	}
	return out
}

// A transform's transient() retries the message later, keeping its place:
// the rest of its lane waits behind it, while other lanes of the same
// destination carry on.
func TestTransientKeepsLaneOrderAndHoldsOnlyItsLane(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newScriptedAPI(t, func([]byte, int) int { return 200 })
		e := runningWith(t, project(t, jsonProject(fmt.Sprintf(`
  api: { type: http, url: %q, retry: { initial: 20ms, max: 100ms } }
`, api.srv.URL), `
function transform(m) {
  if (m.until && Date.now() < m.until) transient("not before " + m.until);
  return { k: m.k, id: m.id };
}`, nil)), be, Options{Host: fastLaneRetry})
		stuck := "stuck"
		others := keysOnOtherLanes(t, stuck, 8, 3, func(i int) string { return fmt.Sprintf("p%d", i) })
		until := time.Now().Add(2 * time.Second)
		var docs []string
		docs = append(docs, fmt.Sprintf(`{"k":%q,"id":"s0","until":%d}`, stuck, until.UnixMilli()))
		for i := 1; i < 4; i++ {
			docs = append(docs, fmt.Sprintf(`{"k":%q,"id":"s%d"}`, stuck, i))
			for _, o := range others {
				docs = append(docs, fmt.Sprintf(`{"k":%q,"id":"%s-%d"}`, o, o, i))
			}
		}
		intakeJSON(t, e, docs...)
		testutil.Eventually(t, 20*time.Second, "every message", func() bool { return len(api.accepted()) == len(docs) })
		got := api.accepted()
		ds := docsOf(t, got)
		if ids := idsOfKey(ds, stuck); fmt.Sprint(ids) != "[s0 s1 s2 s3]" {
			t.Fatalf("the retried lane delivered %v, want s0..s3 in order", ids)
		}
		firstStuck := time.Time{}
		for i, d := range ds {
			if d.K == stuck {
				firstStuck = got[i].At
				break
			}
		}
		if firstStuck.Before(until) {
			t.Fatalf("s0 was delivered at %v, before its transient condition cleared at %v", firstStuck, until)
		}
		for i, d := range ds {
			if d.K != stuck && got[i].At.After(firstStuck) {
				t.Fatalf("%s (another lane) was delivered after the stuck lane cleared: it was held", d.ID)
			}
		}
		for _, o := range others {
			if ids := idsOfKey(ds, o); fmt.Sprint(ids) != fmt.Sprintf("[%s-1 %s-2 %s-3]", o, o, o) {
				t.Fatalf("key %s delivered %v", o, ids)
			}
		}
	})
}

// An MLLP receiver that answers AE for one patient (or never answers)
// holds that patient's lane only: the destination's other lanes deliver.
func TestStuckMLLPLaneDoesNotHoldOtherLanes(t *testing.T) {
	cases := []struct {
		name        string
		stuckAnswer string // AE, or "" for silence until the ACK timeout
		connections int
	}{
		{"AE on one connection", "AE", 1},
		{"silence with two connections", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
				var held atomic.Bool
				held.Store(true)
				emr := newEMRStandIn(t, func(mrn string) string {
					if mrn == "STUCK" && held.Load() {
						return c.stuckAnswer
					}
					return "AA"
				})
				listen := testutil.FreePort(t)
				files := adtProject(t, listen, emr.addr)
				files["interfaces/adt/interface.yaml"] = strings.Replace(files["interfaces/adt/interface.yaml"], "ack_timeout: 2s",
					fmt.Sprintf("ack_timeout: 1s\n    connections: %d", c.connections), 1)
				running(t, project(t, files), be)

				var msgs [][]byte
				order := map[string][]string{}
				for i := 0; i < 3; i++ {
					msgs = append(msgs, adtMessage("STUCK", fmt.Sprintf("S%d", i)))
					order["STUCK"] = append(order["STUCK"], fmt.Sprintf("S%d", i))
				}
				others := keysOnOtherLanes(t, "STUCK", 8, 4, func(i int) string { return fmt.Sprintf("MRN%d", i) })
				for i := 0; i < 5; i++ {
					for _, o := range others {
						id := fmt.Sprintf("%s-%d", o, i)
						msgs = append(msgs, adtMessage(o, id))
						order[o] = append(order[o], id)
					}
				}
				for i, a := range sendAll(t, listen, msgs) {
					if a.Code != "AA" {
						t.Fatalf("message %d: %s", i, a.Code)
					}
				}
				testutil.Eventually(t, 20*time.Second, "the other lanes' 20 messages", func() bool { return len(emr.arrivals()) >= 20 })
				for _, a := range emr.arrivals() {
					if a.MRN == "STUCK" {
						t.Fatalf("the stuck patient's message %s was accepted while the EMR refused it", a.ControlID)
					}
				}
				held.Store(false)
				testutil.Eventually(t, 30*time.Second, "the stuck lane after the EMR recovered", func() bool { return len(emr.arrivals()) >= 23 })
				byKey := map[string][]string{}
				for _, a := range emr.arrivals() {
					byKey[a.MRN] = append(byKey[a.MRN], a.ControlID)
				}
				for k, ids := range order {
					if fmt.Sprint(dedupeConsecutive(byKey[k])) != fmt.Sprint(ids) {
						t.Fatalf("MRN %s: sent %v, the EMR accepted %v", k, ids, byKey[k])
					}
				}
			})
		})
	}
}

// An MLLP destination's lanes share its connections: one by default (a
// receiver that takes one connection per sender never sees two messages
// at once), several with connections: N, each lane still in order.
func TestMLLPDestinationConnections(t *testing.T) {
	for _, c := range []struct {
		connections int
		atOnce      func(n int32) bool
		want        string
	}{
		{1, func(n int32) bool { return n == 1 }, "exactly 1"},
		{3, func(n int32) bool { return n >= 2 && n <= 3 }, "2 or 3"},
	} {
		t.Run(fmt.Sprintf("connections=%d", c.connections), func(t *testing.T) {
			emr := newEMRStandIn(t, func(string) string { time.Sleep(100 * time.Millisecond); return "AA" })
			listen := testutil.FreePort(t)
			files := adtProject(t, listen, emr.addr)
			files["interfaces/adt/interface.yaml"] = strings.Replace(files["interfaces/adt/interface.yaml"], "ack_timeout: 2s",
				fmt.Sprintf("ack_timeout: 5s\n    connections: %d", c.connections), 1)
			running(t, project(t, files), testBackend(t))
			keys := keysOnOtherLanes(t, "", 8, 4, func(i int) string { return fmt.Sprintf("MRN%d", i) })
			lanes := map[int]bool{}
			for _, k := range keys {
				lanes[format.Lane(k, 8)] = true
			}
			var msgs [][]byte
			order := map[string][]string{}
			for i := 0; i < 6; i++ {
				for _, k := range keys {
					id := fmt.Sprintf("%s-%d", k, i)
					msgs = append(msgs, adtMessage(k, id))
					order[k] = append(order[k], id)
				}
			}
			sendAll(t, listen, msgs)
			testutil.Eventually(t, 30*time.Second, "every message", func() bool { return len(emr.arrivals()) >= len(msgs) })
			if n := emr.maxInflight.Load(); !c.atOnce(n) || len(lanes) < 2 {
				t.Fatalf("the EMR answered up to %d messages at once over %d lanes, want %s", n, len(lanes), c.want)
			}
			byKey := map[string][]string{}
			for _, a := range emr.arrivals() {
				byKey[a.MRN] = append(byKey[a.MRN], a.ControlID)
			}
			for k, ids := range order {
				if fmt.Sprint(byKey[k]) != fmt.Sprint(ids) {
					t.Fatalf("MRN %s: sent %v, the EMR accepted %v", k, ids, byKey[k])
				}
			}
		})
	}
}

// adtMessage builds a small ADT^A08 for an MRN with a control ID.
func adtMessage(mrn, controlID string) []byte {
	return []byte("MSH|^~\\&|PAS|HOSP|EMR|HOSP|20260102030405||ADT^A08|" + controlID + "|P|2.5\r" +
		"EVN|A08|20260102030405\rPID|1||" + mrn + "^^^HOSP^MR||Doe^Jane||19800101|F\rPV1|1|I|W1^1^1\r")
}

// A rate-limited destination spaces its sends by its token bucket, and
// save_output keeps the transform's output with the delivery.
func TestRateLimitAndSaveOutput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		limited := newScriptedAPI(t, func([]byte, int) int { return 200 })
		free := newScriptedAPI(t, func([]byte, int) int { return 200 })
		e := running(t, project(t, jsonProject(fmt.Sprintf(`
  limited: { type: http, url: %q, rate_limit: { per_second: 20, burst: 1 }, save_output: true }
  free: { type: http, url: %q }
`, limited.srv.URL, free.srv.URL), `function transform(m) { return { k: m.k, id: m.id, out: "made by the transform" }; }`, nil)), be)
		var docs []string
		for i := 0; i < 21; i++ {
			docs = append(docs, fmt.Sprintf(`{"k":"p%d","id":"m%d"}`, i%4, i))
		}
		stored := intakeJSON(t, e, docs...)
		testutil.Eventually(t, 20*time.Second, "21 limited deliveries", func() bool { return len(limited.accepted()) == 21 })
		got := limited.accepted()
		// 21 sends at 20 a second with a burst of 1: at least a second from
		// the first to the last (a lower bound, whatever the machine).
		if span := got[20].At.Sub(got[0].At); span < 900*time.Millisecond {
			t.Fatalf("21 rate-limited sends took %v, want at least ~1s at 20/s", span)
		}
		testutil.Eventually(t, 10*time.Second, "21 free deliveries", func() bool { return len(free.accepted()) == 21 })
		ctx := context.Background()
		testutil.Eventually(t, 10*time.Second, "the deliveries settled", func() bool {
			ds, _ := e.Store().Deliveries(ctx, stored[0].ID)
			return msgstore.Settled(ds) == msgstore.DeliverySent
		})
		ds, err := e.Store().Deliveries(ctx, stored[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			switch d.Destination {
			case "limited":
				if !bytes.Contains(d.Output, []byte("made by the transform")) || !bytes.Contains(d.Output, []byte(`"m0"`)) {
					t.Fatalf("save_output kept %q", d.Output)
				}
			case "free":
				if d.Output != nil {
					t.Fatalf("an output was saved without save_output: %q", d.Output)
				}
			}
		}
	})
}

// A rate limit whose next token is further away than an attempt can wait
// is waiting, not a failed send: no retry is counted, no attempt is used
// up (max_attempts 1 would quarantine it otherwise) and the message goes
// once its token is due. (Backend-independent: SQLite only.)
func TestRateLimitWaitIsNotAFailure(t *testing.T) {
	api := newScriptedAPI(t, func([]byte, int) int { return 200 })
	// timeout 1s: an attempt lasts 12s, 2s of it kept for the exchange, so
	// it can wait 10s; one token per 12s makes the second send wait longer.
	e := running(t, project(t, jsonProject(fmt.Sprintf(`
  api: { type: http, url: %q, timeout: 1s, rate_limit: { per_second: 0.0834 }, retry: { initial: 50ms, max: 200ms, max_attempts: 1 } }
`, api.srv.URL), `function transform(m) { return m; }`, nil)), testBackend(t))
	intakeJSON(t, e, `{"k":"a","id":"first"}`, `{"k":"a","id":"second"}`)
	testutil.Eventually(t, 30*time.Second, "both sent", func() bool { return len(api.accepted()) == 2 })
	if n := counterValue(t, e.met.sendRetries.WithLabelValues("feed", "api")); n != 0 {
		t.Fatalf("%v failed sends counted for a rate limit's wait", n)
	}
	if n := counterValue(t, e.met.sendWaits.WithLabelValues("feed", "api")); n == 0 {
		t.Fatal("no wait counted: the test did not wait past an attempt")
	}
	if n := len(api.requests()); n != 2 {
		t.Fatalf("the API got %d requests, want 2", n)
	}
}

// retry.max_attempts quarantines a delivery that keeps failing; the lane
// then goes on with the next message.
func TestMaxAttemptsQuarantines(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newScriptedAPI(t, func(b []byte, _ int) int {
			if bytes.Contains(b, []byte(`"doomed"`)) {
				return http.StatusServiceUnavailable
			}
			return 200
		})
		e := running(t, project(t, jsonProject(fmt.Sprintf(`
  api: { type: http, url: %q, retry: { initial: 20ms, max: 50ms, max_attempts: 3 } }
`, api.srv.URL), `function transform(m) { return m; }`, nil)), be)
		st := intakeJSON(t, e, `{"k":"a","id":"doomed"}`, `{"k":"a","id":"next"}`)
		testutil.Eventually(t, 20*time.Second, "the next message", func() bool { return len(api.accepted()) == 1 })
		tries := 0
		for _, r := range api.requests() {
			if bytes.Contains(r.Body, []byte(`"doomed"`)) {
				tries++
			}
		}
		if tries != 3 {
			t.Fatalf("the failing delivery was tried %d times, want max_attempts 3", tries)
		}
		// Outcomes are recorded in small batches: wait for this one.
		var ds []msgstore.DeliveryStatus
		testutil.Eventually(t, 10*time.Second, "the failing delivery settled", func() bool {
			ds, _ = e.Store().Deliveries(context.Background(), st[0].ID)
			return len(ds) == 1 && ds[0].Status != msgstore.DeliveryPending
		})
		if len(ds) != 1 || ds[0].Status != msgstore.DeliveryQuarantined || ds[0].Attempts != 3 || !strings.Contains(ds[0].Reason, "503") {
			t.Fatalf("deliveries %+v, want quarantined after 3 attempts with the 503", ds)
		}
	})
}

// The HTTP destination retries 408 and 429, quarantines another 4xx, and
// works through a named connection of resources.yaml (URL, path, headers
// with ${env:} and ${secret:}, a destination header overriding one).
func TestHTTPDestinationStatusCodesAndNamedConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newScriptedAPI(t, func(b []byte, seen int) int {
			switch {
			case bytes.Contains(b, []byte(`"slow"`)):
				return []int{http.StatusRequestTimeout, http.StatusTooManyRequests, 200}[min(seen, 2)]
			case bytes.Contains(b, []byte(`"wrong"`)):
				return http.StatusNotFound
			}
			return 201
		})
		t.Setenv("DUCTUS_TEST_API_URL", api.srv.URL)
		e := running(t, project(t, jsonProject(`
  api:
    type: http
    connection: results_api
    path: /v1/results
    headers: { X-Sender: destination }
    retry: { initial: 20ms, max: 100ms }
`, `function transform(m) { return m; }`, map[string]string{
			"ductus.yaml":  "partitions: 8\nscript: { isolates: 1 }\napi: { listen: off }\nsecrets: secrets.json\n",
			"secrets.json": `{"API_TOKEN": "s3cret"}`,
			"resources.yaml": `
connections:
  results_api:
    type: http
    url: ${env:DUCTUS_TEST_API_URL}
    headers: { Authorization: "Bearer ${secret:API_TOKEN}", X-Sender: connection }
    timeout: 5s
`,
		})), be)
		st := intakeJSON(t, e, `{"k":"a","id":"slow"}`, `{"k":"a","id":"wrong"}`, `{"k":"a","id":"fine"}`)
		testutil.Eventually(t, 20*time.Second, "two accepted", func() bool { return len(api.accepted()) == 2 })
		if ids := idsOfKey(docsOf(t, api.accepted()), "a"); fmt.Sprint(ids) != "[slow fine]" {
			t.Fatalf("accepted %v", ids)
		}
		reqs := api.requests()
		var codes []int
		for _, r := range reqs {
			codes = append(codes, r.Code)
			if r.Path != "/v1/results" || r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Sender") != "destination" {
				t.Fatalf("request to %s with headers %v", r.Path, r.Header)
			}
		}
		if fmt.Sprint(codes) != "[408 429 200 404 201]" {
			t.Fatalf("answers %v, want 408 and 429 retried, 404 not", codes)
		}
		if reqs[0].Header.Get("Idempotency-Key") != reqs[2].Header.Get("Idempotency-Key") {
			t.Fatal("a retried delivery changed its Idempotency-Key")
		}
		ctx := context.Background()
		for i, want := range []string{msgstore.DeliverySent, msgstore.DeliveryQuarantined, msgstore.DeliverySent} {
			testutil.Eventually(t, 10*time.Second, "message "+fmt.Sprint(i)+" "+want, func() bool {
				ds, _ := e.Store().Deliveries(ctx, st[i].ID)
				return len(ds) == 1 && ds[0].Status == want
			})
		}
		ds, _ := e.Store().Deliveries(ctx, st[1].ID)
		if !strings.Contains(ds[0].Reason, "404") {
			t.Fatalf("quarantine reason %q", ds[0].Reason)
		}
	})
}
