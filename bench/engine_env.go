package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/engine"
	"github.com/ductus/ductus/integration/hl7"
	"github.com/ductus/ductus/integration/ixstore"
	"github.com/ductus/ductus/integration/mllpnet"
	"github.com/ductus/ductus/runtime/host"
)

// laneType is the engine's lane actor type (integration/engine keeps the
// constant unexported; the name is part of its stored data, so it does not
// change).
const laneType = "ductus.lane"

// engineRun is an integration engine running a generated project on a
// fresh database of the run's backend.
type engineRun struct {
	e   *engine.Engine
	dir string // the project folder
	// be is the engine's backend, for scenarios that fill its tables
	// straight through the engine store.
	be ixstore.Backend
	// proj is the loaded project (its interfaces and destinations).
	proj *config.Project
}

// writeProject writes files (path relative to dir -> content) under dir.
func writeProject(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// loadProject reads a generated project the way `ductus run` does, so a
// generated file the loader refuses fails the scenario with its problems.
func loadProject(dir string) (*config.Project, error) {
	proj, err := config.Load(dir, config.LoadOptions{})
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		return nil, fmt.Errorf("the generated project: %v", ve.Problems)
	}
	return proj, err
}

// engineYAML is ductus.yaml of every generated project: intake commits are
// durable (strict, the default, spelled out because the figures depend on
// it), and no API port is reserved.
func engineYAML(partitions int) string {
	return fmt.Sprintf("partitions: %d\ndurability: strict\nscript: { isolates: 0 }\napi: { listen: off }\nlog: { level: error }\n", partitions)
}

// withEngine writes files as a project, starts an engine on it over a
// fresh database of the run's backend (the bench env's own adapter, so
// SQLite's -durability applies), and runs fn once its listeners are bound.
func (r *runner) withEngine(ctx context.Context, files map[string]string, fn func(er *engineRun) error) error {
	dir, err := os.MkdirTemp("", "ductus-bench-project")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeProject(dir, files); err != nil {
		return err
	}
	proj, err := loadProject(dir)
	if err != nil {
		return err
	}
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		ibe, ok := be.(ixstore.Backend)
		if !ok {
			return fmt.Errorf("the %s adapter has no engine store", r.o.backend)
		}
		e, err := engine.New(ctx, proj, engine.Options{Backend: ibe, Logger: slog.New(slog.DiscardHandler), Version: "bench"})
		if err != nil {
			return err
		}
		defer e.Close()
		ectx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.Run(ectx) }()
		defer func() {
			cancel()
			<-done
		}()
		if err := waitListening(ctx, e, proj, done); err != nil {
			return err
		}
		return fn(&engineRun{e: e, dir: dir, be: ibe, proj: proj})
	})
}

// waitListening waits until the engine has bound its sources' listeners
// (Addr answers once they are), or Run fails first. A project without a
// listening source is ready as soon as Run has been called.
func waitListening(ctx context.Context, e *engine.Engine, proj *config.Project, done chan error) error {
	name := ""
	for _, in := range proj.Interfaces {
		if in.Source.Type == config.SourceMLLP || in.Source.Type == config.SourceHTTP {
			name = in.Name
			break
		}
	}
	deadline := time.Now().Add(time.Minute)
	for name != "" && e.Addr(name) == "" {
		select {
		case err := <-done:
			done <- err // withEngine's cleanup reads it again
			return fmt.Errorf("the engine stopped before listening: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("the engine did not listen within a minute")
		}
	}
	return nil
}

// counter sums a counter family of the engine's registry (engine and
// runtime metrics), over every label.
func (er *engineRun) counter(name string) int {
	return int(registrySum(er.e.Metrics(), name))
}

// received is how many messages the engine's intakes stored.
func (er *engineRun) received() int { return er.counter("ductus_messages_received_total") }

// sent is how many deliveries the destinations confirmed.
func (er *engineRun) sent() int { return er.counter("ductus_deliveries_sent_total") }

// registrySum adds up a counter family of a Prometheus registry.
func registrySum(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
		}
	}
	return sum
}

// lanes lists the lane actors that exist (a lane is created by its first
// message).
func (er *engineRun) lanes(ctx context.Context) ([]actor.Ref, error) {
	var out []actor.Ref
	after := ""
	for {
		page, err := er.e.Host().Actors(ctx, host.ActorQuery{Type: laneType, After: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, a := range page {
			out = append(out, a.Ref)
		}
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].Ref.ID
	}
}

// setPaused pauses or resumes every destination of the project, as an
// operator would (Engine.PauseDestination): its lanes keep accepting
// messages (the intake's inserts commit) but run no turn and are not
// woken, so an intake figure measures the intake alone.
func (er *engineRun) setPaused(ctx context.Context, paused bool) error {
	for _, in := range er.proj.Interfaces {
		for _, d := range in.Destinations {
			var err error
			if paused {
				_, err = er.e.PauseDestination(ctx, in.Name, d.Name, "bench", "the intake alone")
			} else {
				err = er.e.ResumeDestination(ctx, in.Name, d.Name, "bench")
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// freeAddr returns a loopback address with a free port for a source to
// listen on: the project names its port, like a real one does.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// hl7Pool pre-generates n ADT messages over patients MRNs, so the sending
// clients spend no CPU making messages while they are timed.
func hl7Pool(n, patients int, prefix string) ([][]byte, error) {
	g, err := hl7.NewGenerator(hl7.GeneratorOptions{Seed: 11, Patients: patients, Types: []string{"ADT^A01", "ADT^A08"}, ControlIDPrefix: prefix})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Next().Bytes
	}
	return out, nil
}

// mllpLoad sends msgs round and round over conns MLLP connections (real
// clients over loopback, one message in flight per connection as MLLP
// allows) until stop is closed or, with limit > 0, limit messages were
// acknowledged in all. It returns the AA ACKs; any other answer or a
// transport error fails it.
func mllpLoad(ctx context.Context, addr string, conns int, msgs [][]byte, limit int, stop <-chan struct{}) (int, error) {
	var acked, issued atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for c := 0; c < conns; c++ {
		cl, err := mllpnet.NewClient(mllpnet.ClientOptions{Addr: addr, AckTimeout: time.Minute})
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for i := c; ; i += conns {
				select {
				case <-stop:
					return
				default:
				}
				if limit > 0 && issued.Add(1) > int64(limit) {
					return
				}
				ack, err := cl.Send(ctx, msgs[i%len(msgs)])
				if err != nil {
					errc <- err
					return
				}
				if ack.Code != "AA" {
					errc <- fmt.Errorf("ACK %s: %s", ack.Code, ack.Text)
					return
				}
				acked.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errc)
	return int(acked.Load()), <-errc
}
