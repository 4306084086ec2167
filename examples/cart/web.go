package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/realtime"
	"github.com/ductus/ductus/runtime/host"
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("cart").Parse(pageHTML))

// shop is the example's HTTP side.
type shop struct {
	h    *host.Host
	keys realtime.Keyring
	rt   *realtime.Handler
}

func newShop(h *host.Host, keys realtime.Keyring, rt *realtime.Handler) *shop {
	return &shop{h: h, keys: keys, rt: rt}
}

func (s *shop) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/carts/demo", http.StatusFound)
	})
	mux.HandleFunc("GET /carts/{id}", s.page)
	mux.HandleFunc("GET /carts/{id}/token", s.token)
	mux.HandleFunc("GET /carts/{id}/state", s.state)
	mux.HandleFunc("POST /carts/{id}/items", s.add)
	mux.HandleFunc("DELETE /carts/{id}/items/{sku}", s.remove)
	mux.HandleFunc("POST /carts/{id}/checkout", s.checkout)
	mux.Handle("/realtime", s.rt)
	mux.Handle("/realtime/", s.rt)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.h.Metrics(), promhttp.HandlerOpts{}))
	return mux
}

// cart returns the request's cart, or answers 400 for a bad ID.
func (s *shop) cart(w http.ResponseWriter, r *http.Request) (actor.Ref, bool) {
	ref := actor.Ref{Type: CartType, ID: r.PathValue("id")}
	if err := actor.ValidateID(ref.ID, 128); err != nil {
		http.Error(w, "cart ID: "+err.Error(), http.StatusBadRequest)
		return ref, false
	}
	return ref, true
}

func (s *shop) page(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = page.Execute(w, map[string]string{"ID": ref.ID})
}

// token signs a 10-minute subscription token for the cart's observables;
// the page fetches one on every (re)connect.
func (s *shop) token(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	tok, err := s.keys.Sign(realtime.Claims{Ref: ref, Observables: []string{"count", "items", "status", "total"},
		Expires: time.Now().Add(10 * time.Minute)})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, tok)
}

func (s *shop) state(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	res, err := s.h.Ask(r.Context(), ref, "view", nil)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(res)
}

// add tells the cart to add an item (JSON AddArgs); 202 once it is stored.
func (s *shop) add(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	var a AddArgs
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		http.Error(w, "body must be {\"sku\",\"name\",\"cents\",\"qty\"}: "+err.Error(), http.StatusBadRequest)
		return
	}
	if a.SKU == "" || a.Name == "" || a.Qty < 1 || a.Cents < 0 {
		http.Error(w, "sku and name are required, qty must be 1 or more, cents 0 or more", http.StatusBadRequest)
		return
	}
	s.tell(w, r, ref, "add", a)
}

func (s *shop) remove(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	s.tell(w, r, ref, "remove", r.PathValue("sku"))
}

func (s *shop) tell(w http.ResponseWriter, r *http.Request, ref actor.Ref, msg string, args any) {
	id, err := s.h.Tell(r.Context(), ref, msg, args)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{"message_id": id})
}

// checkout asks the cart to check out and answers with the amount charged
// (the charge itself runs after the commit; the page shows it land).
func (s *shop) checkout(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.cart(w, r)
	if !ok {
		return
	}
	res, err := s.h.Ask(r.Context(), ref, "checkout", nil)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"cents":%s}`, res)
}

func (s *shop) fail(w http.ResponseWriter, err error) {
	var dead *actor.DeadLetterError
	switch {
	case errors.As(err, &dead):
		http.Error(w, dead.Reason, http.StatusConflict)
	case errors.Is(err, actor.ErrInvalidArguments), errors.Is(err, actor.ErrInvalidID), errors.Is(err, actor.ErrTooLarge):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, actor.ErrMailboxFull):
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	default:
		http.Error(w, "the cart is unavailable; try again", http.StatusServiceUnavailable)
	}
}
