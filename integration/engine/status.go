package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/integration/config"
)

// ErrInterfaceStopped is what a source of a stopped interface gets from
// the intake: the interface's script ran away script.MaxRunaways times in
// a row, so new messages are refused with a retryable answer (MLLP AE,
// HTTP 503) until it is restarted. Messages it accepted before stay
// pending, in order, and are delivered once it runs again.
var ErrInterfaceStopped = errors.New("engine: the interface is stopped after repeated runaway scripts")

// InterfaceStatus is an interface's health.
type InterfaceStatus struct {
	// Stopped is true after script.MaxRunaways runaways in a row, until
	// RestartInterface (or a new process) loads its scripts again.
	Stopped bool
	// Runaways counts runaways since the last call that completed.
	Runaways int
	// LastRunaway says why the latest runaway was stopped.
	LastRunaway string
}

// InterfaceStatus reports an interface's health; false for an interface
// not in the project.
func (e *Engine) InterfaceStatus(name string) (InterfaceStatus, bool) {
	if _, ok := e.ifaces[name]; !ok {
		return InterfaceStatus{}, false
	}
	st, ok := e.scripts.Status(name)
	if !ok {
		return InterfaceStatus{}, false
	}
	return InterfaceStatus{Stopped: st.Stopped, Runaways: st.Runaways, LastRunaway: st.LastRunaway}, true
}

// stopped reports whether an interface is stopped.
func (e *Engine) stopped(name string) bool {
	st, ok := e.scripts.Status(name)
	return ok && st.Stopped
}

// RestartInterface reads a stopped (or running) interface's scripts from
// its folder again and loads them, which clears the stopped state: its
// sources accept messages again and its lanes resume with their next retry
// (within their back-off, at most a minute). A script that does not load
// (a syntax error in the fix) leaves the interface as it was. The
// interface's YAML is not re-read.
func (e *Engine) RestartInterface(ctx context.Context, name string) error {
	ir, ok := e.ifaces[name]
	if !ok {
		return fmt.Errorf("engine: unknown interface %q", name)
	}
	if err := e.loadInterface(ctx, ir.cfg); err != nil {
		return err
	}
	ir.reportedStop.Store(false)
	e.log.Info("interface restarted: its scripts were loaded again", "interface", name)
	return nil
}

// RestartStopped restarts every stopped interface (the ductus binary does
// this on SIGHUP) and returns the names it restarted.
func (e *Engine) RestartStopped(ctx context.Context) ([]string, error) {
	var names []string
	var errs []error
	for name := range e.ifaces {
		if !e.stopped(name) {
			continue
		}
		if err := e.RestartInterface(ctx, name); err != nil {
			errs = append(errs, err)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, errors.Join(errs...)
}

// noteStopped logs, once per stop, that an interface has stopped and what
// to do about it.
func (e *Engine) noteStopped(ir *ifaceRuntime) {
	if !e.stopped(ir.cfg.Name) || ir.reportedStop.Swap(true) {
		return
	}
	st, _ := e.scripts.Status(ir.cfg.Name)
	e.log.Error("interface stopped after repeated runaway scripts: its sources refuse new messages (MLLP AE, HTTP 503) and its accepted messages wait, pending; fix the script, then send SIGHUP to the ductus process (stopped interfaces reload their scripts) or restart it",
		"interface", ir.cfg.Name, "runaways", st.Runaways, "last", st.LastRunaway)
}

// refuses reports whether an interface's intake refuses records from its
// own source now: a stopped interface takes no new work from outside.
// Routes and schedule runs are still stored (they are already accepted
// upstream, and wait pending like everything else).
func (e *Engine) refuses(ir *ifaceRuntime) bool {
	switch ir.cfg.Source.Type {
	case config.SourceMLLP, config.SourceHTTP, config.SourceFile:
		return e.stopped(ir.cfg.Name)
	}
	return false
}

// stoppedCollector exports ductus_interface_stopped per interface, read
// from the script host at scrape time.
type stoppedCollector struct{ e *Engine }

var stoppedDesc = prometheus.NewDesc("ductus_interface_stopped",
	"1 while an interface is stopped after repeated runaway scripts (its sources refuse messages; restart it with SIGHUP), else 0.",
	[]string{"interface"}, nil)

func (c stoppedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stoppedDesc }

func (c stoppedCollector) Collect(ch chan<- prometheus.Metric) {
	if c.e.scripts == nil {
		return
	}
	for name := range c.e.ifaces {
		v := 0.0
		if c.e.stopped(name) {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(stoppedDesc, prometheus.GaugeValue, v, name)
	}
}
