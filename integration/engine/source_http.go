package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/ductus/ductus/integration/format"
)

// httpSource is one listener serving the queued HTTP sources that share
// its address, each on its path: POST a message, get 202 with its ID once
// it is committed.
type httpSource struct {
	e      *Engine
	ln     net.Listener
	srv    *http.Server
	ifaces map[string]*ifaceRuntime // by path
}

func (e *Engine) newHTTPSource(addr string, ifaces []*ifaceRuntime) (*httpSource, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http source: listen on %s: %w", addr, err)
	}
	s := &httpSource{e: e, ln: ln, ifaces: map[string]*ifaceRuntime{}}
	mux := http.NewServeMux()
	for _, ir := range ifaces {
		s.ifaces[ir.cfg.Source.HTTP.Path] = ir
		mux.Handle(ir.cfg.Source.HTTP.Path, s.handler(ir))
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	return s, nil
}

func (s *httpSource) name() string { return "http " + s.ln.Addr().String() }

func (s *httpSource) run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.srv.Shutdown(sctx) // in-flight requests get their answer
}

type httpAnswer struct {
	ID          string `json:"id,omitempty"`
	Status      string `json:"status"`
	DuplicateOf string `json:"duplicate_of,omitempty"`
	Error       string `json:"error,omitempty"`
	// Offset is the byte offset of the first byte of the body that is
	// not a character of its character set (400).
	Offset *int64 `json:"offset,omitempty"`
}

func (s *httpSource) handler(ir *ifaceRuntime) http.Handler {
	src := ir.cfg.Source.HTTP
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			reply(w, http.StatusMethodNotAllowed, httpAnswer{Status: "error", Error: "POST a message to this path"})
			return
		}
		// The Content-Type is checked before the body is read: a sender
		// that labels its messages wrongly is told so whatever it sent.
		label, err := contentType(ir.cfg.Format, r.Header.Get("Content-Type"))
		if err != nil {
			reply(w, http.StatusUnsupportedMediaType, httpAnswer{Status: "error", Error: err.Error()})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, src.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, httpAnswer{Status: "error", Error: fmt.Sprintf("the body is over the limit of %d bytes", src.MaxBodyBytes)})
			return
		}
		if err != nil {
			reply(w, http.StatusBadRequest, httpAnswer{Status: "error", Error: "reading the body: " + err.Error()})
			return
		}
		in, err := decodeIn(ir.cfg, body, label)
		if err != nil {
			a := httpAnswer{Status: "error", Error: "the body's characters cannot be read: " + err.Error()}
			var de *decodeError
			if errors.As(err, &de) && de.offset >= 0 {
				a.Offset = &de.offset
			}
			reply(w, http.StatusBadRequest, a)
			return
		}
		if err := format.Check(format.Name(ir.cfg.Format), in.text); err != nil {
			reply(w, http.StatusUnsupportedMediaType, httpAnswer{Status: "error", Error: fmt.Sprintf("the body is not %s: %v", ir.cfg.Format, err)})
			return
		}
		meta := withCharset(map[string]any{"source": "http", "remote": r.RemoteAddr}, in.cs)
		stored, err := s.e.Intake(r.Context(), ir.cfg.Name, []Record{{Payload: in.text, Meta: meta}}, nil)
		if err != nil {
			s.e.log.Warn("http source: storing failed; answered 503", "interface", ir.cfg.Name, "err", err)
			retry, text := "5", "the message could not be stored; retry later"
			switch {
			case errors.Is(err, ErrInterfaceStopped):
				retry, text = "30", "the interface is stopped after repeated script failures; retry later"
			case errors.Is(err, ErrDraining):
				retry, text = "30", "the engine is draining; retry later"
			}
			w.Header().Set("Retry-After", retry)
			reply(w, http.StatusServiceUnavailable, httpAnswer{Status: "error", Error: text})
			return
		}
		st := stored[0]
		if st.Duplicate {
			reply(w, http.StatusAccepted, httpAnswer{ID: st.ID, Status: "duplicate", DuplicateOf: st.DuplicateOf})
			return
		}
		reply(w, http.StatusAccepted, httpAnswer{ID: st.ID, Status: "accepted"})
	})
}

func reply(w http.ResponseWriter, code int, a httpAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(a)
}

func (s *httpSource) closeListener() { s.ln.Close() }
