package engine

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/runtime/store"
)

// execer is the statement runner every adapter's Backend offers tools
// and tests (Exec); the engine itself never runs a statement.
type execer interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// renameTable renames a table through the engine's own backend: a real
// database failure for everything that touches it.
func renameTable(t *testing.T, be ixstore.Backend, from, to string) {
	t.Helper()
	x, ok := be.(execer)
	if !ok {
		t.Fatalf("backend %s runs no statements of a test's own", be.Name())
	}
	ctx := context.Background()
	err := store.Retry(ctx, 20, func() error {
		_, err := x.Exec(ctx, "ALTER TABLE "+from+" RENAME TO "+to)
		return err
	})
	if err != nil {
		t.Fatalf("rename %s to %s: %v", from, to, err)
	}
}

func hl7With(controlID, mrn, msh15 string) []byte {
	return []byte("MSH|^~\\&|PAS|HOSP|EMR|HOSP|20260102030405||ADT^A01|" + controlID + "|P|2.5|||" + msh15 + "\r" +
		"PID|1||" + mrn + "^^^HOSP^MR||Doe^Jane\r")
}

func sendOne(t *testing.T, addr string, msg []byte) mllpnet.Ack {
	t.Helper()
	return sendAll(t, addr, [][]byte{msg})[0]
}

// When the message cannot be stored the sources answer so the sender
// retries: MLLP AE (CE in enhanced mode), HTTP 503 with Retry-After; once
// the database works again the same messages are accepted (AA / CA) and
// delivered once. The failure is real: the message table is renamed away.
func TestStoringFailureAnswersRetryably(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		listen, httpListen := testutil.FreePort(t), testutil.FreePort(t)
		proj := project(t, map[string]string{
			"ductus.yaml": "partitions: 4\nscript: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
dedupe: { key: MSH-10, window: 1h }
destinations:
  archive: { type: file, path: out/adt, name: "{{.ID}}.hl7" }
`, listen),
			"interfaces/adt/transform.js": `function transform(m) { return m; }`,
			"interfaces/orders/interface.yaml": fmt.Sprintf(`
format: json
source: { type: http, listen: %q, path: /orders }
destinations:
  archive: { type: file, path: out/orders, name: "{{.ID}}.json" }
`, httpListen),
			"interfaces/orders/transform.js": `function transform(m) { return m; }`,
		})
		running(t, proj, be)
		url := "http://" + httpListen + "/orders"

		if a := sendOne(t, listen, hl7With("A1", "M1", "")); a.Code != "AA" {
			t.Fatalf("before the failure: %s %s", a.Code, a.Text)
		}
		if a := sendOne(t, listen, hl7With("E1", "M1", "AL")); a.Code != "CA" {
			t.Fatalf("enhanced mode (MSH-15 AL): %s, want CA", a.Code)
		}

		renameTable(t, be, "ductus_ix_messages", "ductus_ix_messages_away")
		b := hl7With("B1", "M2", "")
		if a := sendOne(t, listen, b); a.Code != "AE" || !strings.Contains(a.Text, "send it again") {
			t.Fatalf("storing failed, answered %s %q, want AE", a.Code, a.Text)
		}
		e2 := hl7With("E2", "M2", "AL")
		if a := sendOne(t, listen, e2); a.Code != "CE" {
			t.Fatalf("storing failed in enhanced mode, answered %s, want CE", a.Code)
		}
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("storing failed, HTTP answered %d with Retry-After %q, want 503 with one", resp.StatusCode, resp.Header.Get("Retry-After"))
		}

		renameTable(t, be, "ductus_ix_messages_away", "ductus_ix_messages")
		first := sendOne(t, listen, b)
		if first.Code != "AA" {
			t.Fatalf("after the database recovered: %s %s", first.Code, first.Text)
		}
		if a := sendOne(t, listen, e2); a.Code != "CA" {
			t.Fatalf("enhanced mode after recovery: %s", a.Code)
		}
		if code, _ := post(t, url, `{"n":1}`); code != http.StatusAccepted {
			t.Fatalf("HTTP after recovery: %d", code)
		}
		// The sender resending B after its AA (an ACK lost on the way) gets
		// the same AA and no second delivery.
		if again := sendOne(t, listen, b); !bytes.Equal(again.Raw, first.Raw) {
			t.Fatalf("a duplicate got %q, want the original's ACK %q", again.Raw, first.Raw)
		}
		testutil.Eventually(t, 20*time.Second, "4 ADT and 1 order archived", func() bool {
			return len(listFiles(t, filepath.Join(proj.Dir, "out/adt"))) == 4 && len(listFiles(t, filepath.Join(proj.Dir, "out/orders"))) == 1
		})
		time.Sleep(300 * time.Millisecond)
		if n := len(listFiles(t, filepath.Join(proj.Dir, "out/adt"))); n != 4 {
			t.Fatalf("%d ADT messages archived, want 4 (each once)", n)
		}
	})
}

// A route hop is an effect: retried after its intake committed (a crash
// before the outcome was recorded, a claim that expired and was taken
// over), it finds its origin stored and stores nothing twice.
func TestRouteHopRetriedAfterCommitStoresOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		api, copies := newReceiver(t), newReceiver(t)
		listen := testutil.FreePort(t)
		e := running(t, project(t, httpProject(t, listen, api.srv.URL, copies.srv.URL)), be)
		code, a := post(t, "http://"+listen+"/orders", `{"id":"o1","patient":"p1","seq":1}`)
		if code != http.StatusAccepted {
			t.Fatalf("POST = %d", code)
		}
		testutil.Eventually(t, 10*time.Second, "the routed copy", func() bool { return copies.count() == 1 })

		hop := &routeSender{e: e, dest: e.ifaces["orders"].cfg.Destination("copy")}
		args := sendArgs{M: a.ID, Output: []byte(`{"id":"o1","patient":"p1","seq":1,"via":"retry"}`)}
		ctx := context.Background()
		if err := hop.send(ctx, hostEffect(), args); err != nil {
			t.Fatalf("the hop retried after its commit: %v", err)
		}
		// Two attempts at once (the old claim still running): at most one
		// may fail, on the origin's uniqueness, and nothing is stored twice.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = hop.send(ctx, hostEffect(), args) }()
		}
		wg.Wait()
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("both concurrent hops failed: %v", errs)
		}
		msgs, err := e.Store().List(ctx, "copies", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 {
			t.Fatalf("the target interface holds %d messages from one hop, want 1", len(msgs))
		}
		time.Sleep(300 * time.Millisecond)
		if n := copies.count(); n != 1 {
			t.Fatalf("the copy was delivered %d times", n)
		}
	})
}
