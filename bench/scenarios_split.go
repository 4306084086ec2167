package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ductus/ductus/actor"
)

// continuousSplit measures the two halves of continuous_tell_process one
// after the other, so each can be looked at without the other's noise:
// first 100,000 Tells in TellBatch calls of 5,000 over 1,000 actors with
// no worker running (split_enqueue), then the workers draining that
// backlog (split_process). For each half it also prints this process's
// CPU per message and, when the backend's server runs on this machine
// (mariadbd or mysqld for mysql, postgres for postgres, seen in /proc),
// the server's. On a machine whose cores are all busy, CPU per message is
// the figure to compare, and continuous_tell_process alone cannot say
// which half spends it.
func continuousSplit(ctx context.Context, r *runner) error {
	n := r.n(100_000, 200)
	return r.fresh(ctx, nil, func(be backend, _ string) error {
		c, err := client(ctx, be)
		if err != nil {
			return err
		}
		defer c.Shutdown(ctx)
		p := &progress{what: "tells", total: n, last: time.Now()}
		servers := serverNames[r.o.backend]
		m0 := cpuMark(servers)
		for next := 0; next < n; {
			batch := make([]actor.Envelope, min(5000, n-next))
			next = roundRobin(batch, next)
			if _, err := c.TellBatch(ctx, batch); err != nil {
				return err
			}
			p.at(next)
		}
		m1 := cpuMark(servers)
		r.printSplit("split_enqueue", m0, m1, n)
		w := &world{}
		h, err := w.newHost(ctx, be, nil)
		if err != nil {
			return err
		}
		defer h.Shutdown(ctx)
		if err := waitFor(ctx, "processed", n, func() int { return int(w.processed.Load()) }); err != nil {
			return err
		}
		r.printSplit("split_process", m1, cpuMark(servers), n)
		return nil
	})
}

// mark is a point in time with the CPU used so far by this process and by
// the local database server (-1: not found).
type mark struct {
	at     time.Time
	self   time.Duration
	server time.Duration
}

// serverNames are the process names of each backend's server (none for
// SQLite, which runs in this process).
var serverNames = map[string][]string{"mysql": {"mariadbd", "mysqld"}, "postgres": {"postgres"}}

func cpuMark(servers []string) mark {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return mark{at: time.Now(), self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), server: serverCPU(servers)}
}

func (r *runner) printSplit(name string, from, to mark, n int) {
	r.print(name, float64(n)/to.at.Sub(from.at).Seconds(), "msg/s", n)
	r.printCPU(name, from, to, n)
}

// printCPU prints name_client_cpu_us (this process) and, when the server
// is local, name_server_cpu_us: CPU between the marks per message.
func (r *runner) printCPU(name string, from, to mark, n int) {
	if n <= 0 {
		// A smoke run's window can close before a message finishes: a
		// figure per message of none would print a garbage value.
		fmt.Fprintf(os.Stderr, "    %s: no message finished in the measured window; no CPU figures\n", name)
		return
	}
	r.print(name+"_client_cpu_us", float64((to.self-from.self).Microseconds())/float64(n), "us/msg", n)
	if from.server >= 0 && to.server >= 0 {
		r.print(name+"_server_cpu_us", float64((to.server-from.server).Microseconds())/float64(n), "us/msg", n)
	}
}

// serverCPU sums the user and system time of every process on this machine
// with one of the names, or returns -1 when there is none (SQLite, or a
// server elsewhere).
func serverCPU(names []string) time.Duration {
	if len(names) == 0 {
		return -1
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	total, found := time.Duration(0), false
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || end+2 > len(s) {
			continue
		}
		if !slices.Contains(names, s[open+1:end]) {
			continue
		}
		// Fields after the name: state is the first, utime the 12th and
		// stime the 13th (proc(5)), in clock ticks of 10 ms.
		f := strings.Fields(s[end+2:])
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		total += time.Duration(u+st) * 10 * time.Millisecond
		found = true
	}
	if !found {
		return -1
	}
	return total
}
