package sink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/internal/testutil"
)

func start(t *testing.T, o Options) *Sink {
	t.Helper()
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func generated(t *testing.T, n int, enhanced bool) []hl7.Sample {
	t.Helper()
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 3, Patients: 10, Enhanced: enhanced})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]hl7.Sample, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// sendAll sends msgs in order on one connection and returns the ACK codes.
func sendAll(t *testing.T, addr string, msgs []hl7.Sample) []string {
	t.Helper()
	c, err := mllpnet.NewClient(mllpnet.ClientOptions{Addr: addr, AckTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var codes []string
	for _, m := range msgs {
		ack, err := c.Send(context.Background(), m.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", m.ControlID, err)
		}
		codes = append(codes, ack.Code)
	}
	return codes
}

func TestSinkAccepts(t *testing.T) {
	for _, enhanced := range []bool{false, true} {
		want := "AA"
		if enhanced {
			want = "CA"
		}
		t.Run(want, func(t *testing.T) {
			s := start(t, Options{})
			msgs := generated(t, 10, enhanced)
			for i, code := range sendAll(t, s.Addr(), msgs) {
				if code != want {
					t.Errorf("message %d: %s", i+1, code)
				}
			}
			got := s.Messages()
			if len(got) != len(msgs) {
				t.Fatalf("%d messages kept, want %d", len(got), len(msgs))
			}
			for i, m := range got {
				w := msgs[i]
				if m.Seq != i+1 || m.ControlID != w.ControlID || m.Key != w.MRN || m.Type != w.Type || m.Code != want ||
					!m.Accepted() || !bytes.Equal(m.Raw, w.Bytes) || m.Conn != 1 {
					t.Errorf("message %d: %+v", i+1, m)
				}
			}
			if c := s.Codes(); c.Get(want) != 10 || c.Total() != 10 {
				t.Errorf("codes %v", c)
			}
		})
	}
}

func TestSinkShares(t *testing.T) {
	msgs := generated(t, 400, false)
	run := func(seed uint64) []string {
		s := start(t, Options{AE: 0.2, AR: 0.1, Seed: seed})
		return sendAll(t, s.Addr(), msgs)
	}
	a, b, c := run(9), run(9), run(10)
	count := func(codes []string, want string) int {
		n := 0
		for _, c := range codes {
			if c == want {
				n++
			}
		}
		return n
	}
	// Binomial(400, 0.2) and (400, 0.1): these bounds are many standard
	// deviations wide, so only a broken draw fails them.
	if n := count(a, "AE"); n < 40 || n > 130 {
		t.Errorf("%d AE of 400 for a 0.2 share", n)
	}
	if n := count(a, "AR"); n < 15 || n > 70 {
		t.Errorf("%d AR of 400 for a 0.1 share", n)
	}
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Error("the same seed answered differently")
	}
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Error("another seed answered the same")
	}
}

func TestSinkResendDrawsAfresh(t *testing.T) {
	s := start(t, Options{AE: 0.5, Seed: 1})
	m := generated(t, 1, false)
	codes := sendAll(t, s.Addr(), []hl7.Sample{m[0], m[0], m[0], m[0], m[0], m[0], m[0], m[0], m[0], m[0], m[0], m[0]})
	if !strings.Contains(strings.Join(codes, ","), "AA") || !strings.Contains(strings.Join(codes, ","), "AE") {
		t.Errorf("twelve arrivals of one message at a 0.5 AE share: %v", codes)
	}
}

func TestSinkOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "received.txt")
	if err := os.WriteFile(out, []byte("earlier\\rline\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{Out: out, AR: 0.3, Seed: 5})
	msgs := generated(t, 30, false)
	codes := sendAll(t, s.Addr(), msgs)
	// The file is complete when the ACK is out, before Close.
	got, err := ReadOut(out)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("earlier\rline")} // appended, not truncated
	for i, m := range msgs {
		if codes[i] == "AA" {
			want = append(want, m.Bytes)
		}
	}
	if len(want) == len(msgs)+1 {
		t.Fatal("no AR among 30 messages at a 0.3 share: the test shows nothing")
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
		}
	}
	raw, _ := os.ReadFile(out)
	if lines := bytes.Count(raw, []byte("\n")); lines != len(want) || bytes.Contains(raw, []byte("\r")) {
		t.Errorf("the file has %d lines (want %d), raw CR: %v", lines, len(want), bytes.Contains(raw, []byte("\r")))
	}
}

func TestSinkPrint(t *testing.T) {
	var buf testutil.SyncBuffer
	s := start(t, Options{Print: true, Stdout: &buf})
	m := generated(t, 2, false)
	sendAll(t, s.Addr(), m)
	text := buf.String()
	for _, want := range []string{"#1 AA " + m[0].ControlID + " " + m[0].Type, "key=" + m[0].MRN, "\nPID|", "#2 AA " + m[1].ControlID} {
		if !strings.Contains(text, want) {
			t.Errorf("the print lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\r") {
		t.Error("the print has CRs: segments should be on lines")
	}
}

func TestSinkDelay(t *testing.T) {
	s := start(t, Options{Delay: 200 * time.Millisecond})
	m := generated(t, 1, false)
	c, _ := mllpnet.NewClient(mllpnet.ClientOptions{Addr: s.Addr(), AckTimeout: 50 * time.Millisecond})
	defer c.Close()
	if _, err := c.Send(context.Background(), m[0].Bytes); err == nil {
		t.Fatal("the ACK came before the delay")
	}
}

func TestSinkOptions(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"AE above 1", Options{AE: 1.5}, "AE share"},
		{"negative AR", Options{AR: -0.1}, "AR share"},
		{"shares above 1", Options{AE: 0.6, AR: 0.6}, "add up"},
		{"negative delay", Options{Delay: -time.Second}, "delay"},
		{"bad address", Options{Listen: "nowhere"}, "nowhere"},
		{"out file in a missing folder", Options{Listen: "127.0.0.1:0", Out: "/nonexistent/dir/x"}, "out file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.o)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	var stdout, stderr testutil.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"-listen", "127.0.0.1:0", "-progress", "20ms", "-ae", "0.5"}, &stdout, &stderr)
	}()
	var addr string
	for end := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, rest, ok := strings.Cut(stderr.String(), "listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	if addr == "" {
		t.Fatalf("no listening line: %q", stderr.String())
	}
	sendAll(t, addr, generated(t, 20, false))
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "sink: 20 messages") && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "sink: 20 messages (AA ") {
		t.Errorf("no progress line: %q", stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "received 20 messages on 1 connections") || !strings.Contains(out, "ACK codes: AA ") {
		t.Errorf("summary: %q", out)
	}
	if err := Main(context.Background(), []string{"extra"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("extra argument: %v", err)
	}
}
