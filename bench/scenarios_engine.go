package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/tools/sink"
)

// engineScenarios are the integration engine's scenarios (issue 17): a
// generated project run by integration/engine over a fresh database, fed
// and drained by real MLLP peers over loopback.
func engineScenarios() []scenario {
	return []scenario{
		{"mllp_ingest_1conn", mllpIngest(1, false), []string{"mllp_ingest_1conn_vs_baseline"}},
		{"mllp_ingest_16conn", mllpIngest(16, false), []string{"mllp_ingest_16conn_vs_baseline"}},
		{"mllp_ingest_1conn_draining", mllpIngest(1, true), []string{"mllp_ingest_1conn_draining_vs_baseline"}},
		{"mllp_ingest_16conn_draining", mllpIngest(16, true), []string{"mllp_ingest_16conn_draining_vs_baseline"}},
		{"passthrough_drain_1dest", passthroughDrain, nil},
		{"fanout_5dest", fanout(5), []string{"fanout_5dest_acks"}},
		{"fanout_25dest", fanout(25), []string{"fanout_25dest_acks"}},
		{"fanout_25dest_burst", fanoutBurst(25), []string{"fanout_25dest_burst_acks", "fanout_25dest_burst_s"}},
		{"file_ingest_csv_rows", fileIngestCSV, nil},
		{"transform_per_core", transformPerCore, nil},
		{"start_1001_interfaces", start1001, []string{"start_1001_interfaces_s", "start_1001_interfaces_mb",
			"start_1001_interfaces_restart_s", "start_1001_interfaces_restart_mb", "start_1001_interfaces_busy_mb"}},
		{"api_interfaces", apiInterfaces, []string{"api_interfaces_p50_ms", "api_interfaces_p99_ms"}},
		{"api_messages_page", apiMessagesPage, apiMessagesFigures()},
	}
}

// needsBaseline reports whether a scenario prints a ratio to the run's
// baseline_commit figures, which must then be measured first.
func needsBaseline(name string) bool { return strings.HasPrefix(name, "mllp_ingest_") }

// parts is the lanes per keyed interface of the generated projects: 16,
// enough that 16 connections' messages spread over many lanes, few enough
// that a warm-up creates every lane quickly (a lane can be paused only
// once it exists); 4 in a smoke run, whose warm-up is a few dozen
// messages.
func (r *runner) parts() int { return r.n(16, 4) }

// passThrough is the transform every destination runs unless a scenario
// measures transforms: it returns the message as received.
const passThrough = "function transform(msg) { return msg; }\n"

// mllpProject is one MLLP interface keyed on PID-3.1 with the given
// destinations (YAML mapping entries, indented by two spaces).
func mllpProject(parts int, listen string, dests ...string) map[string]string {
	return map[string]string{
		"ductus.yaml": engineYAML(parts),
		"interfaces/adt/interface.yaml": fmt.Sprintf("source: { type: mllp, listen: %q }\nordering_key: PID-3.1\ndestinations:\n%s",
			listen, strings.Join(dests, "")),
		"interfaces/adt/transform.js": passThrough,
	}
}

// fileDest is a file destination writing one file per message under out/.
func fileDest(name string) string {
	return fmt.Sprintf("  %s: { type: file, path: out/%s, name: \"{{.ID}}.hl7\" }\n", name, name)
}

// mllpDest is an MLLP destination sending to addr.
func mllpDest(name, addr string) string {
	h, p, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("  %s: { type: mllp, host: %s, port: %s, ack_timeout: 30s }\n", name, h, p)
}

// warm sends messages until every lane of every destination exists and
// everything sent so far is delivered: pausing needs the lanes' rows, and
// the timed part should not pay for first connections, compiled scripts
// or cold caches.
func (er *engineRun) warm(ctx context.Context, r *runner, addr string, msgs [][]byte, dests int) error {
	want := er.proj.Engine.Partitions * dests
	for round := 0; round < 20; round++ {
		if _, err := mllpLoad(ctx, addr, 4, msgs, r.n(200, 30), nil); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := waitFor(ctx, "warm-up deliveries", er.received()*dests, er.sent); err != nil {
			return err
		}
		lanes, err := er.lanes(ctx)
		if err != nil {
			return err
		}
		if len(lanes) >= want {
			return nil
		}
	}
	return fmt.Errorf("warm-up: fewer than %d lanes after 20 rounds", want)
}

// timedLoad runs mllpLoad for d (or until limit messages, when limit > 0)
// and returns the ACKs and the time taken.
func timedLoad(ctx context.Context, addr string, conns int, msgs [][]byte, d time.Duration, limit int) (int, time.Duration, error) {
	stop := make(chan struct{})
	t := time.AfterFunc(d, func() { close(stop) })
	defer t.Stop()
	start := time.Now()
	n, err := mllpLoad(ctx, addr, conns, msgs, limit, stop)
	return n, time.Since(start), err
}

// mllpIngest is ACKs/s of conns MLLP clients into one interface with one
// file destination, durability strict. Without draining the lanes are
// paused after the warm-up, so the figure is the intake alone (parse,
// store with lane messages, commit, ACK); with draining the destination
// writes files meanwhile.
func mllpIngest(conns int, draining bool) func(ctx context.Context, r *runner) error {
	name := fmt.Sprintf("mllp_ingest_%dconn", conns)
	if draining {
		name += "_draining"
	}
	return func(ctx context.Context, r *runner) error {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		msgs, err := hl7Pool(2000, 1000, "IN")
		if err != nil {
			return err
		}
		return r.withEngine(ctx, mllpProject(r.parts(), addr, fileDest("out")), func(er *engineRun) error {
			if err := er.warm(ctx, r, addr, msgs, 1); err != nil {
				return err
			}
			if !draining {
				if err := er.setPaused(ctx, true); err != nil {
					return err
				}
			}
			before := er.sent()
			acks, elapsed, err := timedLoad(ctx, addr, conns, msgs, time.Duration(r.n(10, 1))*time.Second, 0)
			if err != nil {
				return err
			}
			if !draining && er.sent() > before+conns {
				// At most the turns already running when the pause landed.
				return fmt.Errorf("the paused lanes delivered %d messages", er.sent()-before)
			}
			rate := float64(acks) / elapsed.Seconds()
			r.print(name, rate, "acks/s", acks)
			base := r.baselines[conns]
			if base > 0 {
				r.print(name+"_vs_baseline", rate/base, fmt.Sprintf("x baseline_commit_%dconn", conns), acks)
			}
			return nil
		})
	}
}

// passthroughDrain is messages/s from a backlog through a pass-through
// transform to a real MLLP listener that ACKs: the lanes are paused while
// the backlog is stored, then resumed and timed until the listener has
// acknowledged all of it.
func passthroughDrain(ctx context.Context, r *runner) error {
	n := r.n(10_000, 60)
	snk, err := sink.New(sink.Options{Listen: "127.0.0.1:0", NoKeep: true})
	if err != nil {
		return err
	}
	defer snk.Close()
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	msgs, err := hl7Pool(2000, 1000, "PT")
	if err != nil {
		return err
	}
	return r.withEngine(ctx, mllpProject(r.parts(), addr, mllpDest("emr", snk.Addr())), func(er *engineRun) error {
		if err := er.warm(ctx, r, addr, msgs, 1); err != nil {
			return err
		}
		if err := er.setPaused(ctx, true); err != nil {
			return err
		}
		if _, err := mllpLoad(ctx, addr, 4, msgs, n, nil); err != nil {
			return err
		}
		target := er.received()
		start := time.Now()
		if err := er.setPaused(ctx, false); err != nil {
			return err
		}
		if err := waitFor(ctx, "passthrough deliveries", target, er.sent); err != nil {
			return err
		}
		r.print("passthrough_drain_1dest", float64(n)/time.Since(start).Seconds(), "msg/s", n)
		return nil
	})
}

// withFanout runs fn on an engine with one MLLP interface and k MLLP
// destinations, each to its own listener that ACKs, warmed up with a
// pool of n messages (prefix names their control IDs) that fn sends.
func withFanout(ctx context.Context, r *runner, k, n int, prefix string, fn func(er *engineRun, addr string, msgs [][]byte) error) error {
	var dests []string
	for i := 0; i < k; i++ {
		snk, err := sink.New(sink.Options{Listen: "127.0.0.1:0", NoKeep: true})
		if err != nil {
			return err
		}
		defer snk.Close()
		dests = append(dests, mllpDest(fmt.Sprintf("d%02d", i), snk.Addr()))
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	msgs, err := hl7Pool(n, 1000, prefix)
	if err != nil {
		return err
	}
	return r.withEngine(ctx, mllpProject(r.parts(), addr, dests...), func(er *engineRun) error {
		if err := er.warm(ctx, r, addr, msgs, k); err != nil {
			return err
		}
		return fn(er, addr, msgs)
	})
}

// fanout is one MLLP interface with k MLLP destinations, fed by 4
// clients for a fixed time: deliveries/s confirmed by the k listeners in
// that time, and the clients' ACKs/s while the destinations drain.
func fanout(k int) func(ctx context.Context, r *runner) error {
	name := fmt.Sprintf("fanout_%ddest", k)
	return func(ctx context.Context, r *runner) error {
		return withFanout(ctx, r, k, 2000, "FO", func(er *engineRun, addr string, msgs [][]byte) error {
			before := er.sent()
			// A smoke run sends a handful: each is k deliveries, all
			// drained before the engine stops (below).
			acks, elapsed, err := timedLoad(ctx, addr, 4, msgs, time.Duration(r.n(10, 1))*time.Second, r.n(0, 4))
			if err != nil {
				return err
			}
			delivered := er.sent() - before
			r.print(name, float64(delivered)/elapsed.Seconds(), "deliveries/s", delivered)
			r.print(name+"_acks", float64(acks)/elapsed.Seconds(), "acks/s", acks)
			// Let the backlog drain before the engine stops: a send
			// cancelled by the shutdown can crash the process in
			// mllpnet.Client.exchange (its cancel callback reads c.conn,
			// which the failed send's drop sets to nil concurrently).
			return waitFor(ctx, "the backlog delivered before shutdown", er.received()*k, er.sent)
		})
	}
}

// fanoutBurst is the reference engine's fan-out method
// (scripts/bench-fanout.sh there): 6,000 messages sent over 16
// connections as fast as they are acknowledged, then the time until every
// destination has them all. It prints deliveries/s over that whole time,
// the ACKs/s of the sending part and the seconds in all. Unlike fanout,
// whose four clients send for a fixed time while the lanes keep up, the
// lanes here work through a backlog, as after a burst or an outage.
func fanoutBurst(k int) func(ctx context.Context, r *runner) error {
	name := fmt.Sprintf("fanout_%ddest_burst", k)
	return func(ctx context.Context, r *runner) error {
		n := r.n(6000, 40)
		return withFanout(ctx, r, k, n, "FB", func(er *engineRun, addr string, msgs [][]byte) error {
			before := er.sent()
			start := time.Now()
			acks, sending, err := timedLoad(ctx, addr, 16, msgs, time.Hour, n)
			if err != nil {
				return err
			}
			if err := waitFor(ctx, name+" deliveries", before+acks*k, er.sent); err != nil {
				return err
			}
			all := time.Since(start)
			delivered := er.sent() - before
			r.print(name, float64(delivered)/all.Seconds(), "deliveries/s", delivered)
			r.print(name+"_acks", float64(acks)/sending.Seconds(), "acks/s", acks)
			r.print(name+"_s", all.Seconds(), "s", acks)
			return nil
		})
	}
}

// csvRows writes a CSV of n lab rows over 1,000 MRNs, the first row the
// header.
func csvRows(n, from int) string {
	var b strings.Builder
	b.WriteString("mrn,seq,test,value,units\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "M%04d,%d,2345-7 Glucose,%d.%d,mg/dL\n", i%1000, i, 70+i%50, i%10)
	}
	return b.String()
}

// fileIngestCSV is rows/s of one CSV file split into rows by the file
// source and stored with their lane messages (lanes paused: the intake
// alone), from the file appearing in the watched folder to its last row
// committed.
func fileIngestCSV(ctx context.Context, r *runner) error {
	n := r.n(50_000, 500)
	files := map[string]string{
		"ductus.yaml": engineYAML(r.parts()),
		"interfaces/lab/interface.yaml": "format: csv\n" +
			"source: { type: file, path: inbox, pattern: \"*.csv\", split: records, poll: 10ms }\n" +
			"ordering_key: $.mrn\n" +
			"destinations:\n  out: { type: file, path: out, name: \"{{.ID}}.json\", format: json }\n",
		"interfaces/lab/transform.js": passThrough,
	}
	return r.withEngine(ctx, files, func(er *engineRun) error {
		inbox := filepath.Join(er.dir, "inbox")
		// The warm-up file's MRNs (one a row) create every lane.
		warm := r.n(1000, 50)
		if err := drop(inbox, "warm.csv", csvRows(warm, 0)); err != nil {
			return err
		}
		if err := waitFor(ctx, "warm-up rows delivered", warm, er.sent); err != nil {
			return err
		}
		if err := er.setPaused(ctx, true); err != nil {
			return err
		}
		before := er.received()
		start := time.Now()
		if err := drop(inbox, "rows.csv", csvRows(n, warm)); err != nil {
			return err
		}
		if err := waitFor(ctx, "CSV rows stored", before+n, er.received); err != nil {
			return err
		}
		r.print("file_ingest_csv_rows", float64(n)/time.Since(start).Seconds(), "rows/s", n)
		return nil
	})
}

// drop writes a file beside the watched folder and renames it in, so the
// source never sees it half-written.
func drop(inbox, name, body string) error {
	// The source creates its folder when Run binds it, which may not have
	// happened yet.
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(inbox), "."+name)
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(inbox, name))
}
