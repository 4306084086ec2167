package send_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/tools/send"
	"github.com/ductus/ductus/integration/tools/sink"
	"github.com/ductus/ductus/internal/testutil"
)

func startSink(t *testing.T, o sink.Options) *sink.Sink {
	t.Helper()
	o.Listen = "127.0.0.1:0"
	s, err := sink.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run is send.Run with captured output.
func run(t *testing.T, o send.CLIOptions) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut testutil.SyncBuffer
	err = send.Run(context.Background(), o, &out, &errOut)
	return out.String(), errOut.String(), err
}

// seqOf reads the generator's sequence number from MSH-10 (prefix + 9
// digits).
func seqOf(t *testing.T, id string) int {
	t.Helper()
	n, err := strconv.Atoi(id[len(id)-9:])
	if err != nil {
		t.Fatalf("control ID %q: %v", id, err)
	}
	return n
}

func TestSendToSink(t *testing.T) {
	s := startSink(t, sink.Options{})
	stdout, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 50, Patients: 7, Prefix: "T1"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	for _, want := range []string{"sent 50 messages to " + s.Addr() + " over 1 connection(s)", "ACK codes: AA 50  AE 0  AR 0  CA 0  CE 0  CR 0",
		"timeouts 0  errors 0", "ACK latency: p50 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	got := s.Messages()
	if len(got) != 50 {
		t.Fatalf("the sink has %d messages", len(got))
	}
	for i, m := range got {
		if seqOf(t, m.ControlID) != i+1 || !strings.HasPrefix(m.ControlID, "T1") {
			t.Fatalf("message %d is %s: one connection keeps the generator's order", i+1, m.ControlID)
		}
	}
}

func TestSendShares(t *testing.T) {
	s := startSink(t, sink.Options{AE: 0.1, AR: 0.05, Seed: 4})
	stdout, stderr, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 300, Connections: 3}})
	if err == nil || !strings.Contains(err.Error(), "did not get AA or CA") {
		t.Fatalf("error %v, want the AE/AR to fail the run", err)
	}
	c := s.Codes()
	if c.Total() != 300 || c.AE < 10 || c.AE > 60 || c.AR < 3 || c.AR > 35 {
		t.Errorf("the sink answered %v for shares 0.1/0.05 of 300", c)
	}
	wantErr := "send: " + strconv.Itoa(int(c.AE+c.AR)) + " of 300 messages did not get AA or CA: AE " + strconv.Itoa(int(c.AE)) + ", AR " + strconv.Itoa(int(c.AR))
	if err.Error() != wantErr {
		t.Errorf("error %q, want %q", err, wantErr)
	}
	if !strings.Contains(stdout, "ACK codes: "+c.String()) {
		t.Errorf("the sender's counts differ from the sink's %v:\n%s", c, stdout)
	}
	if strings.Count(stderr, ": AE: sink: try again") != int(c.AE) || strings.Count(stderr, ": AR: sink: refused") != int(c.AR) {
		t.Errorf("one note per AE/AR expected:\n%s", stderr)
	}
}

func TestSendPerKeyOrder(t *testing.T) {
	s := startSink(t, sink.Options{Delay: time.Millisecond})
	_, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 400, Patients: 25, Connections: 4, Seed: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Connections.Load(); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}
	last := map[string]int{}
	conn := map[string]uint64{}
	conns := map[uint64]bool{}
	interleaved := false
	prev := 0
	for _, m := range s.Messages() {
		seq := seqOf(t, m.ControlID)
		if seq < prev {
			interleaved = true
		}
		prev = seq
		if seq <= last[m.Key] {
			t.Fatalf("patient %s: message %d arrived after %d", m.Key, seq, last[m.Key])
		}
		last[m.Key] = seq
		if c, ok := conn[m.Key]; ok && c != m.Conn {
			t.Fatalf("patient %s on connections %d and %d", m.Key, c, m.Conn)
		}
		conn[m.Key], conns[m.Conn] = m.Conn, true
	}
	if len(last) != 25 || len(conns) != 4 {
		t.Errorf("%d patients over %d connections", len(last), len(conns))
	}
	if !interleaved {
		t.Error("the connections never interleaved: the order check shows nothing")
	}
}

func TestSendRate(t *testing.T) {
	s := startSink(t, sink.Options{})
	began := time.Now()
	_, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 40, Rate: 40, Connections: 2}})
	if err != nil {
		t.Fatal(err)
	}
	// 40 messages at 40/s take about a second; far less means no limit.
	if took := time.Since(began); took < 450*time.Millisecond {
		t.Errorf("40 messages at 40/s took %v", took)
	}
}

func TestSendFiles(t *testing.T) {
	dir := t.TempDir()
	msgs := []string{
		"MSH|^~\\&|A|B|C|D|20260105||ADT^A01|F1|P|2.5\nPID|1||111\nPV1|1|I\n",
		"MSH|^~\\&|A|B|C|D|20260105||ADT^A08|F2|P|2.5\r\nPID|1||222\r\n",
		"MSH|^~\\&|A|B|C|D|20260105||ADT^A08|F3|P|2.5\rPID|1||111\r",
	}
	lf := filepath.Join(dir, "lf.hl7")
	if err := os.WriteFile(lf, []byte(msgs[0]+"\n"+msgs[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	cr := filepath.Join(dir, "cr.hl7")
	if err := os.WriteFile(cr, []byte("stray line\n"+msgs[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "received.txt")
	s := startSink(t, sink.Options{Out: out})
	o := send.CLIOptions{Options: send.Options{Addr: s.Addr(), Files: []string{lf, cr}, Connections: 2}}
	stdout, stderr, err := run(t, o)
	// The stray line is unreadable: reported, skipped, and it fails the run.
	if err == nil || !strings.Contains(err.Error(), "1 of 4 messages did not get AA or CA: 1 unreadable") {
		t.Errorf("error %v", err)
	}
	if !strings.Contains(stderr, cr+":bytes 0-11: lines outside any message") {
		t.Errorf("no note for the stray line:\n%s", stderr)
	}
	if !strings.Contains(stdout, "sent 3 messages") || !strings.Contains(stdout, "unreadable 1") {
		t.Errorf("summary:\n%s", stdout)
	}
	// Segments arrive CR-terminated whatever the file used.
	want := map[string]string{}
	for _, m := range msgs {
		norm := strings.ReplaceAll(strings.ReplaceAll(m, "\r\n", "\r"), "\n", "\r")
		id := strings.Split(norm, "|")[9]
		want[id] = norm
	}
	got, err := sink.ReadOut(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d messages in the out file", len(got))
	}
	var order []string
	for _, g := range got {
		m, err := hl7.Parse(g)
		if err != nil {
			t.Fatal(err)
		}
		if string(g) != want[m.ControlID()] {
			t.Errorf("%s arrived as %q, want %q", m.ControlID(), g, want[m.ControlID()])
		}
		if m.Get("PID-3.1") == "111" {
			order = append(order, m.ControlID())
		}
	}
	if strings.Join(order, ",") != "F1,F3" {
		t.Errorf("patient 111's messages arrived as %v", order)
	}
}

func TestSendFileCount(t *testing.T) {
	var b bytes.Buffer
	g, _ := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 1})
	for range 10 {
		b.Write(g.Next().Bytes)
	}
	f := filepath.Join(t.TempDir(), "ten.hl7")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSink(t, sink.Options{})
	if _, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Files: []string{f}, Count: 4}}); err != nil {
		t.Fatal(err)
	}
	if n := s.Received(); n != 4 {
		t.Errorf("the sink got %d, want 4", n)
	}
}

func TestSendEnhanced(t *testing.T) {
	s := startSink(t, sink.Options{AR: 0.2, Seed: 2})
	stdout, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 50, Enhanced: true}})
	c := s.Codes()
	if c.AA != 0 || c.AR != 0 || c.CA == 0 || c.CR == 0 {
		t.Errorf("enhanced mode answered %v", c)
	}
	if err == nil || !strings.Contains(err.Error(), "CR ") || !strings.Contains(stdout, c.String()) {
		t.Errorf("error %v\n%s", err, stdout)
	}
}

func TestSendTimeouts(t *testing.T) {
	s := startSink(t, sink.Options{Delay: 300 * time.Millisecond})
	stdout, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 2, Timeout: 50 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "2 timeouts") || !strings.Contains(stdout, "timeouts 2") {
		t.Errorf("error %v\n%s", err, stdout)
	}
}

func TestSendNoReceiver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stdout, _, err := run(t, send.CLIOptions{Options: send.Options{Addr: addr, Count: 20, Connections: 2}})
	if err == nil || !strings.Contains(stdout, "stopped early: mllpnet: cannot connect to "+addr) {
		t.Errorf("error %v\n%s", err, stdout)
	}
}

func TestSendProgress(t *testing.T) {
	s := startSink(t, sink.Options{})
	_, stderr, err := run(t, send.CLIOptions{Options: send.Options{Addr: s.Addr(), Count: 30, Rate: 60}, Progress: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "/30 sent (AA ") || !strings.Contains(stderr, " msg/s") {
		t.Errorf("no progress line:\n%s", stderr)
	}
}

func TestSendMain(t *testing.T) {
	s := startSink(t, sink.Options{})
	var out, errOut testutil.SyncBuffer
	if err := send.Main(context.Background(), []string{"-addr", s.Addr(), "-count", "5", "-types", "ORU^R01", "-prefix", "MAIN", "-progress", "0"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, m := range s.Messages() {
		if m.Type != "ORU^R01" || !strings.HasPrefix(m.ControlID, "MAIN") {
			t.Errorf("%+v", m)
		}
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-connections", "-1"}, "-connections"},
		{[]string{"-rate", "-5"}, "-rate"},
		{[]string{"-types", "ADT^A99", "-addr", s.Addr()}, "ADT^A99"},
		{[]string{"-prefix", "TOOLONGPREFIX12", "-addr", s.Addr()}, "longer than 11"},
		{[]string{"-types", "ADT^A01", "somefile.hl7"}, "for generated messages"},
		{[]string{"-addr", s.Addr(), filepath.Join(t.TempDir(), "missing.hl7")}, "missing.hl7"},
	}
	for _, tc := range cases {
		err := send.Main(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
