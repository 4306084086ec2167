package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ductus/ductus/integration/access"
)

// Engine is what the API reads of a running engine. Its methods return
// actor.ErrNotFound (wrapped) for an unknown interface or message.
type Engine interface {
	// Info is the engine's version, start and backend, and the runtime
	// processes on its database.
	Info(ctx context.Context) (EngineInfo, error)
	// Interfaces is every interface with its state and each
	// destination's counts, in the project's order.
	Interfaces(ctx context.Context) ([]Interface, error)
	// Hotspots is where an interface's backlog is stuck: per destination
	// with a backlog, the lanes held by a failing send and a lane with
	// most of the backlog.
	Hotspots(ctx context.Context, iface string) (HotspotReport, error)
	// Messages pages an interface's messages, newest first, filtered.
	Messages(ctx context.Context, q MessageQuery) ([]MessageSummary, error)
	// Quarantine pages the quarantined deliveries of one interface (or
	// of all, iface ""), newest first, before the cursor before.
	Quarantine(ctx context.Context, iface, before string, limit int) (QuarantinePage, error)
	// Message is a message's keys and deliveries.
	Message(ctx context.Context, id string) (Message, error)
	// MessagePayload is a message's payload, parsed view and outputs.
	MessagePayload(ctx context.Context, id string) (MessagePayload, error)
	// Resend resends a message's quarantined deliveries, or (dests not
	// empty) its deliveries to those destinations whatever they ended as.
	// Nothing to resend, or a named delivery still pending, is ErrConflict.
	Resend(ctx context.Context, id string, dests []string) ([]ResentDelivery, error)
	// BulkResend resends many messages in one transaction, all or
	// nothing (each as Resend would pick, every delivery to its lane's
	// tail).
	BulkResend(ctx context.Context, ids, dests []string) ([]Resent, error)
	// BulkDismiss dismisses many messages' deliveries in one transaction,
	// all or nothing.
	BulkDismiss(ctx context.Context, ids, dests []string, by, reason string) ([]Dismissed, error)
	// Edit queues a corrected copy of a message (payload) to its
	// quarantined deliveries' destinations (dests empty) or to the named
	// ones, and dismisses the original's quarantined deliveries as
	// replaced by it; by and reason are kept with the copy.
	Edit(ctx context.Context, id string, payload []byte, dests []string, by, reason string) (Edited, error)
	// Dismiss dismisses a message's quarantined deliveries (dests empty:
	// every one) for reason; a named delivery that is not quarantined, or
	// none at all, is ErrConflict.
	Dismiss(ctx context.Context, id string, dests []string, by, reason string) ([]string, error)
	// PauseDestination pauses a destination for reason; ErrConflict when
	// it is paused already.
	PauseDestination(ctx context.Context, iface, dest, by, reason string) (Pause, error)
	// ResumeDestination resumes a paused destination; ErrConflict when it
	// is not paused.
	ResumeDestination(ctx context.Context, iface, dest, by string) error
	// StartDrain closes the engine's gates (stop: exit once drained).
	StartDrain(ctx context.Context, stop bool) (Drain, error)
	// StopDrain opens them again; ErrConflict when they are open.
	StopDrain(ctx context.Context) (Drain, error)
	// DrainStatus is the drain state.
	DrainStatus(ctx context.Context) (Drain, error)
	// State is Interfaces and DrainStatus together, from one read (what
	// GET /events sends).
	State(ctx context.Context) (State, error)
	// Gatherer is the engine's Prometheus registry.
	Gatherer() prometheus.Gatherer
}

// MessageQuery is a page of an interface's messages: before the message
// ID Before ("" from the newest), at most Limit, and only those matching
// every filter set.
type MessageQuery struct {
	Interface string
	Before    string
	Limit     int
	Key       string    // the ordering key
	DedupeKey string    // the dedupe key
	Type      string    // the message type (HL7: ADT^A01)
	Status    string    // the intake status
	Since     time.Time // received at or after (to the millisecond)
	Until     time.Time // received before
}

// Config is what New needs.
type Config struct {
	Engine Engine
	Access *access.Store
	Logger *slog.Logger
	// MaxBody bounds a request body (default 1 MiB).
	MaxBody int64
	// StreamsDone, when closed, ends every event stream (GET /events):
	// close it when the server shuts down, which does not wait for streams.
	StreamsDone <-chan struct{}
	// Console, when set, serves every path outside /api/ and /metrics:
	// the web console, a client of this API like any other.
	Console http.Handler
}

// server implements StrictServerInterface over the engine.
type server struct {
	eng         Engine
	acc         *access.Store
	log         *slog.Logger
	events      *hub
	streamsDone <-chan struct{}
	signIns     *signInLimiter
}

var _ StrictServerInterface = (*server)(nil)

// New returns the API's handler: /api/v1/... and /metrics.
func New(cfg Config) (http.Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	doc, err := Document()
	if err != nil {
		return nil, err
	}
	s := &server{eng: cfg.Engine, acc: cfg.Access, log: cfg.Logger, streamsDone: cfg.StreamsDone,
		events: &hub{eng: cfg.Engine, log: cfg.Logger, every: eventsPoll}, signIns: newSignInLimiter()}
	g, err := newGuard(doc, cfg.Access, cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	strict := NewStrictHandlerWithOptions(s, nil, StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusBadRequest, err.Error(), "")
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) { s.fail(w, r, err) },
	})
	// The generated routes bind parameters before any middleware of
	// theirs runs, so the guard sits in front of them instead: an outer
	// mux with the document's own patterns authenticates, authorises and
	// validates, and only then does the inner (generated) mux bind.
	inner := HandlerWithOptions(strict, StdHTTPServerOptions{
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusBadRequest, err.Error(), "")
		},
	})
	outer := http.NewServeMux()
	for pattern := range g.ops {
		outer.Handle(pattern, g.middleware(inner))
	}
	// Anything under /api/ the document does not name is a JSON 404, not
	// the mux's text one; so is everything else when there is no console.
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no operation %s %s", r.Method, r.URL.Path), "")
	})
	outer.Handle("/api/", notFound)
	if cfg.Console != nil {
		outer.Handle("/", cfg.Console)
	} else {
		outer.Handle("/", notFound)
	}
	return outer, nil
}

var (
	docOnce sync.Once
	docVal  *openapi3.T
	docJSON []byte
	docErr  error
)

// specYAML is the one definition, as committed.
//
//go:embed openapi.yaml
var specYAML []byte

// Document is the API's OpenAPI document (openapi.yaml, embedded).
func Document() (*openapi3.T, error) {
	docOnce.Do(func() {
		docVal, docErr = openapi3.NewLoader().LoadFromData(specYAML)
		if docErr == nil {
			docJSON, docErr = json.MarshalIndent(docVal, "", "  ")
		}
		if docErr != nil {
			docErr = fmt.Errorf("api: the OpenAPI document: %w", docErr)
		}
	})
	return docVal, docErr
}

// DocumentJSON is the document as served at /api/v1/openapi.json and
// printed by `ductus api-spec`.
func DocumentJSON() ([]byte, error) {
	if _, err := Document(); err != nil {
		return nil, err
	}
	return docJSON, nil
}
