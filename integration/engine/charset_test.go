package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/msgstore"
	"github.com/ductus/ductus/integration/tools/sink"
	"github.com/ductus/ductus/internal/testutil"
)

// charsetMsg is an ADT message with control ID ctrl, MSH-18 msh18 (none when
// "") and the patient's name as the bytes name.
func charsetMsg(ctrl, msh18, name string) []byte {
	msh := "MSH|^~\\&|LAB|HOSP|EMR|HOSP|20261205080000||ADT^A01|" + ctrl + "|P|2.5"
	if msh18 != "" {
		msh += "||||||" + msh18
	}
	return []byte(msh + "\rPID|1||" + ctrl + "^^^H^MR||" + name + "\r")
}

// mllpCharsetCase is one interface of the MLLP charset project: a message
// in, and the bytes its destination must send (or the quarantine reason).
type mllpCharsetCase struct {
	name        string // the interface
	ifaceCS     string // interface charset: ("" none)
	destCS      string // destination charset: ("" as received)
	in          []byte
	out         []byte // what the receiver must get; nil when quarantined
	quarantined string // the delivery's reason, in part
	stored      string // the stored payload holds this UTF-8 text
	meta        string // the stored meta's charset ("" absent)
}

func mllpCharsetCases() []mllpCharsetCase {
	return []mllpCharsetCase{
		{name: "latin1", in: charsetMsg("L1", "8859/1", "M\xDCLLER^J\xD6RG"), stored: "MÜLLER^JÖRG", meta: "8859/1"},
		{name: "latin9", in: charsetMsg("L9", "8859/15", "\xA4 PRICE^\xBDUVRE"), stored: "€ PRICE^œUVRE", meta: "8859/15"},
		// A sender that says 8859/1 but sends windows-1252 (0x80 is € there,
		// a control character in 8859/1): the override reads it right and
		// the bytes still go out unchanged.
		{name: "cp1252", ifaceCS: "windows-1252", in: charsetMsg("W1", "8859/1", "\x80 \x93QUOTED\x94^J\xD6RG"), stored: "€ “QUOTED”^JÖRG", meta: "windows-1252"},
		{name: "utf8", in: charsetMsg("U1", "UNICODE UTF-8", "MÜLLER^ΩMEGA"), stored: "MÜLLER^ΩMEGA"},
		{name: "utf8-unlabelled", in: charsetMsg("U2", "", "MÜLLER^JÖRG"), stored: "MÜLLER^JÖRG"},
		{name: "ascii", in: charsetMsg("A1", "ASCII", "MUELLER^JOERG"), stored: "MUELLER^JOERG", meta: "ASCII"},
		// Transcoding: the destination's charset differs, MSH-18 says so.
		{name: "to-utf8", destCS: "UNICODE UTF-8", in: charsetMsg("T1", "8859/1", "M\xDCLLER^J\xD6RG"),
			out: charsetMsg("T1", "UNICODE UTF-8", "MÜLLER^JÖRG"), stored: "MÜLLER^JÖRG", meta: "8859/1"},
		{name: "to-latin1", destCS: "ISO-8859-1", in: charsetMsg("T2", "", "MÜLLER^JÖRG"),
			out: charsetMsg("T2", "8859/1", "M\xDCLLER^J\xD6RG"), stored: "MÜLLER^JÖRG"},
		{name: "to-cp1252", destCS: "windows-1252", in: charsetMsg("T3", "UNICODE UTF-8", "€^JÖRG"),
			out: charsetMsg("T3", "UNICODE UTF-8", "\x80^J\xD6RG"), stored: "€^JÖRG"}, // no table 0211 code: MSH-18 kept
		// A character the destination's set has no form for.
		{name: "unencodable", destCS: "8859/1", in: charsetMsg("Q1", "UNICODE UTF-8", "ΩMEGA"),
			quarantined: "U+03A9", stored: "ΩMEGA"},
	}
}

func TestMLLPCharsetRoundTripAndTranscoding(t *testing.T) {
	cases := mllpCharsetCases()
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		emr, err := sink.New(sink.Options{Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer emr.Close()
		host, port, _ := net.SplitHostPort(emr.Addr())
		files := map[string]string{"ductus.yaml": "script: { isolates: 1 }\napi: { listen: off }\n"}
		listen := map[string]string{}
		for _, c := range cases {
			listen[c.name] = testutil.FreePort(t)
			y := fmt.Sprintf("source: { type: mllp, listen: %q }\n", listen[c.name])
			if c.ifaceCS != "" {
				y += fmt.Sprintf("charset: %q\n", c.ifaceCS)
			}
			y += fmt.Sprintf("destinations:\n  emr:\n    type: mllp\n    host: %s\n    port: %s\n    ack_timeout: 2s\n    retry: { initial: 20ms, max: 100ms }\n", host, port)
			if c.destCS != "" {
				y += fmt.Sprintf("    charset: %q\n", c.destCS)
			}
			files["interfaces/"+c.name+"/interface.yaml"] = y
			files["interfaces/"+c.name+"/transform.js"] = "function transform(msg) { return msg; }\n"
		}
		e := running(t, project(t, files), be)

		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ack := sendAll(t, listen[c.name], [][]byte{c.in})[0]
				if ack.Code != "AA" {
					t.Fatalf("ACK %s %q", ack.Code, ack.Text)
				}
				m := storedOnly(t, e, c.name)
				if !bytes.Contains(m.Payload, []byte(c.stored)) {
					t.Fatalf("stored payload %q does not hold the UTF-8 text %q", m.Payload, c.stored)
				}
				if got, _ := m.Meta["charset"].(string); got != c.meta {
					t.Fatalf("meta charset = %q, want %q", got, c.meta)
				}
				if c.quarantined != "" {
					testutil.Eventually(t, 20*time.Second, "the delivery to be quarantined", func() bool {
						ds, _ := e.Store().Deliveries(context.Background(), m.ID)
						return len(ds) == 1 && ds[0].Status == msgstore.DeliveryQuarantined && strings.Contains(ds[0].Reason, c.quarantined)
					})
					return
				}
				want := c.out
				if want == nil {
					want = c.in // byte for byte as received
				}
				ctrl := hl7ControlID(t, want)
				var got *sink.Message
				testutil.Eventually(t, 20*time.Second, "the EMR to receive "+ctrl, func() bool {
					for _, r := range emr.Messages() {
						if r.ControlID == ctrl {
							got = &r
							return true
						}
					}
					return false
				})
				if !bytes.Equal(got.Raw, want) {
					t.Fatalf("the EMR received\n%q\nwant\n%q", got.Raw, want)
				}
			})
		}
	})
}

// storedOnly waits for the interface's one stored message.
func storedOnly(t *testing.T, e *Engine, iface string) msgstore.Message {
	t.Helper()
	var got []msgstore.Message
	testutil.Eventually(t, 10*time.Second, "the stored message of "+iface, func() bool {
		got, _ = e.Store().List(context.Background(), iface, "", 10)
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("%d messages stored in %s, want 1", len(got), iface)
	}
	return got[0]
}

func TestMLLPRefusesUndecodableWithAR(t *testing.T) {
	cases := []struct {
		name   string
		in     []byte
		reason string // in the ACK and the log line
	}{
		{"invalid UTF-8 labelled UTF-8", charsetMsg("B1", "UNICODE UTF-8", "M\xDCLLER"), atOffset(charsetMsg("B1", "UNICODE UTF-8", "M\xDCLLER"), "UNICODE UTF-8")},
		{"invalid UTF-8 unlabelled", charsetMsg("B2", "", "M\xDCLLER"), atOffset(charsetMsg("B2", "", "M\xDCLLER"), "UNICODE UTF-8")},
		{"not ASCII", charsetMsg("B3", "ASCII", "M\xDCLLER"), "is not valid ASCII"},
		{"unknown MSH-18", charsetMsg("B4", "KLINGON", "MULLER"), `MSH-18: unsupported character set: "KLINGON"`},
		{"MSH-18 the engine cannot carry", charsetMsg("B5", "UNICODE UTF-16", "MULLER"), "single-byte delimiters"},
	}
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		var logs testutil.SyncBuffer
		listen := testutil.FreePort(t)
		proj := project(t, map[string]string{
			"ductus.yaml":                   "script: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/adt/interface.yaml": fmt.Sprintf("source: { type: mllp, listen: %q }\ndestinations:\n  out: { type: file, path: out/adt }\n", listen),
			"interfaces/adt/transform.js":   "function transform(msg) { return msg; }\n",
		})
		e := runningWith(t, proj, be, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ack := sendAll(t, listen, [][]byte{c.in})[0]
				if ack.Code != "AR" || !strings.Contains(ack.Text, c.reason) {
					t.Fatalf("ACK %s %q, want AR with %q", ack.Code, ack.Text, c.reason)
				}
				if want := hl7ControlID(t, c.in); ack.ControlID != want {
					t.Fatalf("the AR acknowledges %q, want the message's control ID %q", ack.ControlID, want)
				}
				line := ""
				for _, l := range strings.Split(logs.String(), "\n") {
					// slog's text handler quotes the reason's quotes.
					if strings.Contains(l, "does not decode") && strings.Contains(l, strings.ReplaceAll(c.reason, `"`, `\"`)) {
						line = l
					}
				}
				if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "interface=adt") || !strings.Contains(line, "remote=127.0.0.1:") {
					t.Fatalf("no warning naming the interface, remote address and reason %q; the log:\n%s", c.reason, logs.String())
				}
			})
		}
		// Nothing was stored; a good message still is.
		if got, _ := e.Store().List(context.Background(), "adt", "", 10); len(got) != 0 {
			t.Fatalf("%d messages stored after refusals, want none", len(got))
		}
		if ack := sendAll(t, listen, [][]byte{charsetMsg("G1", "8859/1", "M\xDCLLER")})[0]; ack.Code != "AA" {
			t.Fatalf("a good message after the refusals: %s %q", ack.Code, ack.Text)
		}
		storedOnly(t, e, "adt")
	})
}

// atOffset is the reason a decoder gives for b's first 0xDC byte.
func atOffset(b []byte, cs string) string {
	return fmt.Sprintf("byte 0xDC at offset %d is not valid %s", bytes.IndexByte(b, 0xDC), cs)
}

func TestHTTPDestinationNamesItsCharset(t *testing.T) {
	in := charsetMsg("D1", "8859/1", "M\xDCLLER")
	cases := []struct {
		name, destCS, contentType string
		body                      []byte
	}{
		{"as received", "", "x-application/hl7-v2+er7; charset=ISO-8859-1", in},
		{"utf-8", "UNICODE UTF-8", "x-application/hl7-v2+er7", charsetMsg("D1", "UNICODE UTF-8", "MÜLLER")},
		{"8859/15", "8859/15", "x-application/hl7-v2+er7; charset=ISO-8859-15", charsetMsg("D1", "8859/15", "M\xDCLLER")},
		{"routed", "", "x-application/hl7-v2+er7; charset=ISO-8859-1", in}, // the destination of the route's target
	}
	forEachBackend(t, func(t *testing.T, be ixstore.Backend) {
		listen := testutil.FreePort(t)
		y := fmt.Sprintf("source: { type: mllp, listen: %q }\ndestinations:\n", listen)
		recv := map[string]*receiver{}
		for i, c := range cases[:len(cases)-1] {
			recv[c.name] = newReceiver(t)
			y += fmt.Sprintf("  d%d: { type: http, url: %q", i, recv[c.name].srv.URL)
			if c.destCS != "" {
				y += fmt.Sprintf(", charset: %q", c.destCS)
			}
			y += " }\n"
		}
		// A route hands UTF-8 text on with the set the message arrived in,
		// so the target's destinations send it in that set by default.
		routed := newReceiver(t)
		recv["routed"] = routed
		y += "  hop: { type: interface, interface: inner }\n"
		running(t, project(t, map[string]string{
			"ductus.yaml":                     "script: { isolates: 1 }\napi: { listen: off }\n",
			"interfaces/adt/interface.yaml":   y,
			"interfaces/adt/transform.js":     "function transform(msg) { return msg; }\n",
			"interfaces/inner/interface.yaml": fmt.Sprintf("format: hl7v2\nsource: { type: internal }\ndestinations:\n  out: { type: http, url: %q }\n", routed.srv.URL),
			"interfaces/inner/transform.js":   "function transform(msg) { return msg; }\n",
		}), be)
		if ack := sendAll(t, listen, [][]byte{in})[0]; ack.Code != "AA" {
			t.Fatalf("ACK %s %q", ack.Code, ack.Text)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := recv[c.name]
				testutil.Eventually(t, 20*time.Second, "the delivery", func() bool { return r.count() == 1 })
				r.mu.Lock()
				ct := r.hdrs[0].Get("Content-Type")
				r.mu.Unlock()
				if got := r.bodies()[0]; ct != c.contentType || !bytes.Equal(got, c.body) {
					t.Fatalf("received %q as %q\nwant %q as %q", got, ct, c.body, c.contentType)
				}
			})
		}
	})
}
