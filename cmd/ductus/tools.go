package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/tools/send"
	"github.com/ductus/ductus/integration/tools/sink"
)

func sendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return toolExit(send.Main(ctx, args, stdout, stderr))
}

func sinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return toolExit(sink.Main(ctx, args, stdout, stderr))
}

// toolExit maps a test tool's error to the exit status: 0 for -h, 2 for
// bad flags (already reported), 1 otherwise.
func toolExit(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// startReceivers runs the example project's stand-in peers where its
// connections point: an MLLP EMR (the emr connection, 127.0.0.1:6661 by
// default) appending what it accepts to out/emr-received.hl7, and the lab
// API (the lab_api connection, 127.0.0.1:8099) writing each posted result
// to out/lab-api/<message ID>.json. The lab API checks the bearer token
// against the project's LAB_API_TOKEN secret when there is one, so a
// broken ${secret:} shows up as a refused (quarantined) delivery.
func startReceivers(ctx context.Context, proj *config.Project, log *slog.Logger) (stop func(), err error) {
	emrAddr, labAddr := "127.0.0.1:6661", "127.0.0.1:8099"
	if c := proj.Resources.Connections["emr"]; c != nil && c.MLLP != nil {
		emrAddr = net.JoinHostPort(c.MLLP.Host, strconv.Itoa(c.MLLP.Port))
	}
	if c := proj.Resources.Connections["lab_api"]; c != nil && c.HTTP != nil {
		if u, err := url.Parse(c.HTTP.URL); err == nil && u.Host != "" {
			labAddr = u.Host
		}
	}
	out := filepath.Join(proj.Dir, "out")
	if err := os.MkdirAll(filepath.Join(out, "lab-api"), 0o755); err != nil {
		return nil, err
	}
	emr, err := sink.New(sink.Options{Listen: emrAddr, Out: filepath.Join(out, "emr-received.hl7"), NoKeep: true,
		Logger: log.With("stand-in", "emr")})
	if err != nil {
		return nil, fmt.Errorf("the stand-in EMR (%s): %w (run with -receivers=false to use your own)", emrAddr, err)
	}
	ln, err := net.Listen("tcp", labAddr)
	if err != nil {
		emr.Close()
		return nil, fmt.Errorf("the stand-in lab API (%s): %w (run with -receivers=false to use your own)", labAddr, err)
	}
	token := proj.Secrets["LAB_API_TOKEN"]
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "a bearer token (the LAB_API_TOKEN secret) is required", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil || !json.Valid(body) {
			http.Error(w, "want a JSON body", http.StatusBadRequest)
			return
		}
		// Named by the message, so a retried delivery rewrites its own file.
		id := r.Header.Get("X-Ductus-Message-Id")
		if id == "" || strings.ContainsAny(id, `/\.`) {
			http.Error(w, "want an X-Ductus-Message-Id header", http.StatusBadRequest)
			return
		}
		name := filepath.Join(out, "lab-api", id+".json")
		if err := os.WriteFile(name, body, 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Info("stand-in lab API received a result", "file", name, "path", r.URL.Path)
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(ln)
	log.Info("stand-in receivers running", "emr", emrAddr, "lab_api", "http://"+labAddr)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		emr.Close()
	}, nil
}
