package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves net/http/pprof on a mux and listener of its own at
// addr, for `ductus run --pprof`. Its own, never http.DefaultServeMux (the
// package's init registers its handlers there too, but nothing in ductus
// serves that mux) and never the API's listener: profiles show memory,
// command lines and stacks, so an operator opens them deliberately, on an
// address of their choosing. It returns the bound address and a stop.
func servePprof(addr string, log *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, allocs, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: a CPU profile or trace holds its response open for
	// the seconds asked.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	bound = ln.Addr().String()
	if host, _, _ := net.SplitHostPort(bound); !net.ParseIP(host).IsLoopback() {
		log.Warn("pprof listens beyond this machine, without authentication", "addr", bound)
	}
	log.Info("pprof listening", "addr", bound, "path", "/debug/pprof/")
	return bound, func() {
		_ = srv.Close()
		<-done
	}, nil
}
