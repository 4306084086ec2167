package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/internal/testutil"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/integration/tools/sink"
)

// Real third-party MLLP peers: node-hl7-client sends to our listener and
// node-hl7-server receives from our MLLP destination. They are pinned in
// testdata/peers/package-lock.json; `make peers` (part of `make test`)
// installs them.

func nodePeers(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "peers"))
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "node-hl7-server"))
	if nodeErr != nil || modErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the node MLLP peers are not installed (node: %v, modules: %v): run make peers", nodeErr, modErr)
		}
		t.Skip("the node MLLP peers are not installed: run `make peers` (needs node and npm) to enable this test")
	}
	return dir
}

func TestNodeHL7ClientSendsToOurListener(t *testing.T) {
	dir := nodePeers(t)
	emr, err := sink.New(sink.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer emr.Close()
	listen := testutil.FreePort(t)
	running(t, project(t, adtProject(t, listen, emr.Addr())), testBackend(t))

	msgs, order := generated(t, 30, 6)
	file := filepath.Join(t.TempDir(), "msgs.jsonl")
	var b strings.Builder
	for _, m := range msgs {
		j, _ := json.Marshal(string(m))
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(listen)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "send.cjs", host, port, file)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node-hl7-client: %v\n%s", err, out)
	}
	var res struct {
		Acks []struct{ Code, ID string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node-hl7-client printed %q: %v", out, err)
	}
	if len(res.Acks) != len(msgs) {
		t.Fatalf("node-hl7-client got %d ACKs for %d messages", len(res.Acks), len(msgs))
	}
	for i, a := range res.Acks {
		m, _ := hl7.Parse(msgs[i])
		if a.Code != "AA" || a.ID != m.ControlID() {
			t.Fatalf("ACK %d = %+v, want AA for %s", i, a, m.ControlID())
		}
	}
	testutil.Eventually(t, 20*time.Second, "the EMR to get all 30", func() bool { return emr.Codes().AA >= 30 })
	perKeyOrdered(t, order, emr.Messages())
}

// Our MLLP destination delivers to node-hl7-server in per-key order, both
// with one connection per message (keep_alive: false) and with the
// default kept-alive connection. node-hl7-server 2.5 never clears its
// buffer after a message, so the second message on a connection is
// answered with the first one's ACK: the destination must notice (MSA-2
// is not the message's MSH-10), drop the connection and send the message
// again on a fresh one, never take the stale ACK as a delivery.
func TestOurMLLPDestinationSendsToNodeHL7Server(t *testing.T) {
	for _, keepAlive := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_alive=%v", keepAlive), func(t *testing.T) { sendToNodeHL7Server(t, keepAlive) })
	}
}

func sendToNodeHL7Server(t *testing.T, keepAlive bool) {
	dir := nodePeers(t)
	recvAddr := testutil.FreePort(t)
	_, port, _ := net.SplitHostPort(recvAddr)
	outFile := filepath.Join(t.TempDir(), "received.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, "node", "receive.cjs", port, outFile)
	srv.Dir = dir
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); srv.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "READY" {
		t.Fatalf("node-hl7-server did not start: %q %v", line, err)
	}

	listen := testutil.FreePort(t)
	files := adtProject(t, listen, recvAddr)
	if !keepAlive {
		files["interfaces/adt/interface.yaml"] = strings.Replace(files["interfaces/adt/interface.yaml"], "ack_timeout: 2s", "ack_timeout: 2s\n    keep_alive: false", 1)
	}
	e := running(t, project(t, files), testBackend(t))
	msgs, order := generated(t, 30, 6)
	sendAll(t, listen, msgs)

	type rec struct{ ID, MRN, Raw string }
	var got []rec
	testutil.Eventually(t, 60*time.Second, "node-hl7-server to receive all 30", func() bool {
		b, _ := os.ReadFile(outFile)
		got = got[:0]
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r rec
			if json.Unmarshal([]byte(line), &r) == nil && !seen[r.ID] {
				seen[r.ID] = true
				got = append(got, r)
			}
		}
		return len(got) >= 30
	})
	byKey := map[string][]string{}
	for _, r := range got {
		if !strings.Contains(r.Raw, "|EMR|") {
			t.Fatalf("the transform did not run: %q", r.Raw)
		}
		byKey[r.MRN] = append(byKey[r.MRN], r.ID)
	}
	for mrn, ids := range order {
		if fmt.Sprint(byKey[mrn]) != fmt.Sprint(ids) {
			t.Fatalf("MRN %s: sent %v, node-hl7-server received %v", mrn, ids, byKey[mrn])
		}
	}
	// Every delivery settles as sent (none taken from a stale ACK and none
	// quarantined).
	msgsStored, err := e.Store().List(context.Background(), "adt", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "every delivery to the EMR sent", func() bool {
		for _, m := range msgsStored {
			ds, _ := e.Store().Deliveries(context.Background(), m.ID)
			for _, d := range ds {
				if d.Destination == "emr" && d.Status != msgstore.DeliverySent {
					return false
				}
			}
		}
		return true
	})
	retries := counterValue(t, e.met.sendRetries.WithLabelValues("adt", "emr"))
	t.Logf("keep_alive=%v: %v delivery retries", keepAlive, retries)
	if keepAlive && retries == 0 {
		t.Fatal("no retries on a kept-alive connection: the stale-ACK path this test exists for was not exercised")
	}
}
