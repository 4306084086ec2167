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
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

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

// startReceivers runs the example project's stand-in peers: an MLLP EMR on
// 127.0.0.1:6661 appending what it accepts to out/emr-received.hl7, and the
// lab API on 127.0.0.1:8099 writing each posted result to out/lab-api/.
func startReceivers(ctx context.Context, projectDir string, log *slog.Logger) (stop func(), err error) {
	out := filepath.Join(projectDir, "out")
	if err := os.MkdirAll(filepath.Join(out, "lab-api"), 0o755); err != nil {
		return nil, err
	}
	emr, err := sink.New(sink.Options{Listen: "127.0.0.1:6661", Out: filepath.Join(out, "emr-received.hl7"), NoKeep: true,
		Logger: log.With("stand-in", "emr")})
	if err != nil {
		return nil, fmt.Errorf("the stand-in EMR (127.0.0.1:6661): %w (run with -receivers=false to use your own)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:8099")
	if err != nil {
		emr.Close()
		return nil, fmt.Errorf("the stand-in lab API (127.0.0.1:8099): %w (run with -receivers=false to use your own)", err)
	}
	var n atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil || !json.Valid(body) {
			http.Error(w, "want a JSON body", http.StatusBadRequest)
			return
		}
		name := filepath.Join(out, "lab-api", fmt.Sprintf("%06d.json", n.Add(1)))
		if err := os.WriteFile(name, body, 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Info("stand-in lab API received a result", "file", name, "path", r.URL.Path)
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(ln)
	log.Info("stand-in receivers running", "emr", "127.0.0.1:6661", "lab_api", "http://127.0.0.1:8099")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		emr.Close()
	}, nil
}
