package engine

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/internal/testutil"
)

// stoppedGauge reads ductus_interface_stopped for an interface.
func stoppedGauge(t *testing.T, e *Engine, iface string) float64 {
	t.Helper()
	fams, err := e.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "ductus_interface_stopped" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelOf(m, "interface") == iface {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no ductus_interface_stopped for %s", iface)
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A runaway script is stopped and its message quarantined; three in a row
// stop the interface, which then has a clear state: its source refuses new
// messages with a retryable answer (503 here, AE over MLLP), its status
// and metric say stopped, and the messages it had accepted wait, pending.
// RestartInterface (what SIGHUP does in the binary) brings it back and
// they are delivered in order, nothing lost.
func TestRunawaysQuarantineThenStopTheInterface(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api := newScriptedAPI(t, func([]byte, int) int { return 200 })
		listen := testutil.FreePort(t)
		e := runningWith(t, project(t, map[string]string{
			"ductus.yaml": "partitions: 4\nscript: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/calc/interface.yaml": fmt.Sprintf(`
format: json
source: { type: http, listen: %q, path: /calc }
ordering_key: $.k
timeout: 200ms
destinations:
  api: { type: http, url: %q }
`, listen, api.srv.URL),
			"interfaces/calc/transform.js": `function transform(m) { if (m.loop) { while (true) {} } return { k: m.k, id: m.id }; }`,
		}), be, Options{Host: fastLaneRetry})
		url := "http://" + listen + "/calc"
		ctx := context.Background()
		status := func(id string) msgstore.DeliveryStatus {
			ds, _ := e.Store().Deliveries(ctx, id)
			if len(ds) != 1 {
				return msgstore.DeliveryStatus{}
			}
			return ds[0]
		}

		// One runaway: quarantined, the interface runs on.
		_, r0 := post(t, url, `{"k":"a","id":"r0","loop":true}`)
		testutil.Eventually(t, 10*time.Second, "the runaway quarantined", func() bool { return status(r0.ID).Status == msgstore.DeliveryQuarantined })
		if reason := status(r0.ID).Reason; !strings.Contains(reason, "runaway") {
			t.Fatalf("quarantine reason %q", reason)
		}
		post(t, url, `{"k":"a","id":"g0"}`)
		testutil.Eventually(t, 10*time.Second, "g0 delivered", func() bool { return len(api.accepted()) == 1 })

		// Three in a row stop it; g1 and g2 were accepted before the stop.
		st, err := e.Intake(ctx, "calc", []Record{
			{Payload: []byte(`{"k":"a","id":"r1","loop":true}`)}, {Payload: []byte(`{"k":"a","id":"r2","loop":true}`)},
			{Payload: []byte(`{"k":"a","id":"r3","loop":true}`)}, {Payload: []byte(`{"k":"a","id":"g1"}`)}, {Payload: []byte(`{"k":"a","id":"g2"}`)},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "the interface stopped", func() bool { s, _ := e.InterfaceStatus("calc"); return s.Stopped })
		if g := stoppedGauge(t, e, "calc"); g != 1 {
			t.Fatalf("ductus_interface_stopped = %v while stopped", g)
		}
		for _, s := range st[:3] {
			id := s.ID
			testutil.Eventually(t, 10*time.Second, "the runaways quarantined", func() bool { return status(id).Status == msgstore.DeliveryQuarantined })
		}
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"k":"a","id":"g3"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a stopped interface's source answered %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		time.Sleep(500 * time.Millisecond)
		if n := len(api.accepted()); n != 1 {
			t.Fatalf("%d delivered while stopped", n)
		}
		for _, s := range st[3:] {
			if got := status(s.ID).Status; got != msgstore.DeliveryPending {
				t.Fatalf("an accepted message is %s while the interface is stopped, want pending", got)
			}
		}

		if err := e.RestartInterface(ctx, "calc"); err != nil {
			t.Fatal(err)
		}
		if s, _ := e.InterfaceStatus("calc"); s.Stopped || stoppedGauge(t, e, "calc") != 0 {
			t.Fatalf("after the restart: %+v", s)
		}
		if code, _ := post(t, url, `{"k":"a","id":"g3"}`); code != http.StatusAccepted {
			t.Fatalf("after the restart the source answered %d", code)
		}
		testutil.Eventually(t, 20*time.Second, "g1..g3 delivered", func() bool { return len(api.accepted()) == 4 })
		if ids := idsOfKey(docsOf(t, api.accepted()), "a"); fmt.Sprint(ids) != "[g0 g1 g2 g3]" {
			t.Fatalf("delivered %v", ids)
		}
	})
}

// Over MLLP a stopped interface answers AE, so the sender keeps the
// message and sends it again later.
func TestStoppedInterfaceAnswersAEOverMLLP(t *testing.T) {
	emr := newEMRStandIn(t, func(string) string { return "AA" })
	listen := testutil.FreePort(t)
	files := adtProject(t, listen, emr.addr)
	files["interfaces/adt/interface.yaml"] = strings.Replace(files["interfaces/adt/interface.yaml"], "ordering_key:", "timeout: 200ms\nordering_key:", 1)
	// Both destinations' transforms run away on LOOP: a call that
	// completes in between would reset the count.
	files["interfaces/adt/transform.js"] = `
function toEmr(msg) { if (msg.get("PID-3.1") === "LOOP") { while (true) {} } return msg; }
function transform(msg) { return toEmr(msg); }
`
	proj := project(t, files)
	e := runningWith(t, proj, testBackend(t), Options{Host: fastLaneRetry})
	for i := 0; i < 3; i++ {
		if a := sendOne(t, listen, adtMessage("LOOP", fmt.Sprintf("L%d", i))); a.Code != "AA" {
			t.Fatalf("before the stop: %s", a.Code)
		}
	}
	testutil.Eventually(t, 20*time.Second, "the interface stopped", func() bool { s, _ := e.InterfaceStatus("adt"); return s.Stopped })
	a := sendOne(t, listen, adtMessage("M1", "AFTER"))
	if a.Code != "AE" || !strings.Contains(a.Text, "stopped") {
		t.Fatalf("a stopped interface answered %s %q, want AE saying it is stopped", a.Code, a.Text)
	}
	// The operator fixes the script, then restarts the interface (which
	// reads it again). Restarting the unfixed script would stop the
	// interface again after the three LOOP deliveries still pending, and
	// whether AFTER ran before that would be a race.
	fixed := "function toEmr(msg) { return msg; }\nfunction transform(msg) { return msg; }\n"
	if err := os.WriteFile(filepath.Join(proj.Dir, "interfaces", "adt", "transform.js"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.RestartInterface(context.Background(), "adt"); err != nil {
		t.Fatal(err)
	}
	if a := sendOne(t, listen, adtMessage("M1", "AFTER")); a.Code != "AA" {
		t.Fatalf("after the restart: %s %s", a.Code, a.Text)
	}
	testutil.Eventually(t, 20*time.Second, "the message after the restart at the EMR", func() bool {
		for _, m := range emr.arrivals() {
			if m.ControlID == "AFTER" {
				return true
			}
		}
		return false
	})
}
