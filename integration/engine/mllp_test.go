package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/integration/tools/sink"
)

func adtProject(t *testing.T, listen, emr string) map[string]string {
	host, port, _ := net.SplitHostPort(emr)
	return map[string]string{
		"ductus.yaml": "partitions: 8\nscript: { isolates: 1 }\napi: { listen: off }\n",
		"interfaces/adt/interface.yaml": fmt.Sprintf(`
source: { type: mllp, listen: %q }
ordering_key: PID-3.1
dedupe: { key: MSH-10, window: 1h }
destinations:
  emr:
    type: mllp
    host: %s
    port: %s
    ack_timeout: 2s
    retry: { initial: 20ms, max: 100ms }
    transform: toEmr
  archive: { type: file, path: out/archive, name: "{{.ID}}.hl7" }
`, listen, host, port),
		"interfaces/adt/transform.js": `
function toEmr(msg) { msg.set("MSH-6", "EMR"); return msg; }
function transform(msg) { return msg; }
`,
	}
}

// perKeyOrdered checks each MRN's messages arrived in the order sent.
func perKeyOrdered(t *testing.T, sent map[string][]string, got []sink.Message) {
	t.Helper()
	seen := map[string][]string{}
	for _, m := range got {
		seen[m.Key] = append(seen[m.Key], m.ControlID)
	}
	for mrn, ids := range sent {
		g := dedupeConsecutive(seen[mrn])
		if fmt.Sprint(g) != fmt.Sprint(ids) {
			t.Fatalf("MRN %s: sent %v, received %v", mrn, ids, seen[mrn])
		}
	}
}

// dedupeConsecutive drops immediate repeats: a message re-sent after an
// AE arrives twice in a row (at least once), never out of order.
func dedupeConsecutive(ids []string) []string {
	var out []string
	for _, id := range ids {
		if len(out) == 0 || out[len(out)-1] != id {
			out = append(out, id)
		}
	}
	return out
}

func generated(t *testing.T, n, patients int) ([][]byte, map[string][]string) {
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 7, Patients: patients, Types: []string{"ADT^A01", "ADT^A08"}, ControlIDPrefix: "T"})
	if err != nil {
		t.Fatal(err)
	}
	var msgs [][]byte
	order := map[string][]string{}
	for i := 0; i < n; i++ {
		s := g.Next()
		msgs = append(msgs, s.Bytes)
		order[s.MRN] = append(order[s.MRN], s.ControlID)
	}
	return msgs, order
}

func sendAll(t *testing.T, addr string, msgs [][]byte) []mllpnet.Ack {
	t.Helper()
	c, err := mllpnet.NewClient(mllpnet.ClientOptions{Addr: addr, AckTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var acks []mllpnet.Ack
	for _, m := range msgs {
		ack, err := c.Send(context.Background(), m)
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		acks = append(acks, ack)
	}
	return acks
}

func TestMLLPInMLLPOutWithAEAndDuplicates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		emr, err := sink.New(sink.Options{Listen: "127.0.0.1:0", AE: 0.2, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer emr.Close()
		listen := testutil.FreePort(t)
		proj := project(t, adtProject(t, listen, emr.Addr()))
		e := running(t, proj, be)

		msgs, order := generated(t, 80, 12)
		acks := sendAll(t, listen, msgs)
		for i, a := range acks {
			if a.Code != "AA" {
				t.Fatalf("message %d: ACK %s %s", i, a.Code, a.Text)
			}
		}
		// A repeat gets the original's ACK again, byte for byte, and is not delivered again.
		again := sendAll(t, listen, msgs[:1])
		if !bytes.Equal(again[0].Raw, acks[0].Raw) {
			t.Fatalf("duplicate ACK\n%q\nwant the original's\n%q", again[0].Raw, acks[0].Raw)
		}
		testutil.Eventually(t, 30*time.Second, "80 accepted by the EMR", func() bool { return emr.Codes().AA >= 80 })
		var accepted []sink.Message
		for _, m := range emr.Messages() {
			if m.Accepted() {
				accepted = append(accepted, m)
				if !bytes.Contains(m.Raw, []byte("|EMR|")) {
					t.Fatalf("the transform did not run: %q", m.Raw)
				}
			}
		}
		if len(accepted) != 80 {
			t.Fatalf("the EMR accepted %d messages, want 80 (a duplicate was delivered?)", len(accepted))
		}
		perKeyOrdered(t, order, emr.Messages())
		if emr.Codes().AE == 0 {
			t.Fatal("the sink answered no AE: the retry path was not exercised")
		}
		testutil.Eventually(t, 10*time.Second, "80 archived", func() bool { return len(listFiles(t, filepath.Join(proj.Dir, "out/archive"))) == 80 })

		// Not HL7 at all: AR from the listener, nothing stored.
		c, _ := net.Dial("tcp", listen)
		defer c.Close()
		c.Write([]byte("\x0bhello\x1c\x0d"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, _ := io.ReadAtLeast(c, buf, 10)
		if code := mllpnet.AckCode(bytes.Trim(buf[:n], "\x0b\x1c\x0d")); code != "AR" {
			t.Fatalf("non-HL7 frame answered %q (%q)", code, buf[:n])
		}
		_ = e
	})
}

func TestMLLPReceiverDownThenUpAndRefusal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		emrAddr := testutil.FreePort(t) // nothing listens yet
		listen := testutil.FreePort(t)
		proj := project(t, adtProject(t, listen, emrAddr))
		e := running(t, proj, be)

		msgs, order := generated(t, 30, 5)
		for i, a := range sendAll(t, listen, msgs) {
			if a.Code != "AA" {
				t.Fatalf("message %d: %s (the engine stores before it acknowledges, whatever the EMR does)", i, a.Code)
			}
		}
		time.Sleep(300 * time.Millisecond)
		emr, err := sink.New(sink.Options{Listen: emrAddr})
		if err != nil {
			t.Fatal(err)
		}
		defer emr.Close()
		testutil.Eventually(t, 30*time.Second, "all 30 after the EMR came up", func() bool { return emr.Codes().AA >= 30 })
		perKeyOrdered(t, order, emr.Messages())
		emr.Close()

		// An EMR that refuses (AR): the delivery is quarantined, not retried forever.
		refuser, err := sink.New(sink.Options{Listen: emrAddr, AR: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer refuser.Close()
		one, _ := generated(t, 31, 5)
		acks := sendAll(t, listen, one[30:])
		stored := findByControlID(t, e, hl7ControlID(t, one[30]))
		testutil.Eventually(t, 20*time.Second, "the refusal to be quarantined", func() bool {
			ds, _ := e.Store().Deliveries(context.Background(), stored)
			for _, d := range ds {
				if d.Destination == "emr" {
					return d.Status == msgstore.DeliveryQuarantined
				}
			}
			return false
		})
		_ = acks
	})
}

func hl7ControlID(t *testing.T, raw []byte) string {
	m, err := hl7.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m.ControlID()
}

func findByControlID(t *testing.T, e *Engine, id string) string {
	t.Helper()
	var found string
	testutil.Eventually(t, 10*time.Second, "the stored message", func() bool {
		msgs, _ := e.Store().List(context.Background(), "adt", "", 200)
		for _, m := range msgs {
			if m.Meta["control_id"] == id {
				found = m.ID
				return true
			}
		}
		return false
	})
	return found
}
