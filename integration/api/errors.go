package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/access"
)

// ErrConflict is an action the resource's state does not allow now (409):
// nothing to resend, a delivery still pending.
var ErrConflict = errors.New("conflict")

// writeError answers a JSON Error.
func writeError(w http.ResponseWriter, status int, msg, field string) {
	body := Error{Error: msg}
	if field != "" {
		body.Field = &field
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ductus"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, access.ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, access.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, actor.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, actor.ErrInvalidArguments):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

// fail answers a handler's error. A server-side failure is logged with
// its cause and answered without it (the cause may name tables or
// hosts); the others say what was wrong.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := statusOf(err)
	if st == http.StatusInternalServerError {
		s.log.Error("api: an operation failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, st, "the engine could not answer; its log says why", "")
		return
	}
	writeError(w, st, err.Error(), "")
}
