package api

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/access"
)

// ErrConflict is an action the resource's state does not allow now (409):
// nothing to resend, a delivery still pending.
var ErrConflict = errors.New("conflict")

// CodePasswordChange is Error.code for a session that must change its
// password before anything else.
const CodePasswordChange = "password_change_required"

// writeError answers a JSON Error.
func writeError(w http.ResponseWriter, status int, msg, field string) {
	writeErrorCode(w, status, msg, field, "")
}

// writeErrorCode answers a JSON Error with a machine-readable code.
func writeErrorCode(w http.ResponseWriter, status int, msg, field, code string) {
	body := Error{Error: msg}
	if field != "" {
		body.Field = &field
	}
	if code != "" {
		body.Code = &code
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
	case errors.Is(err, access.ErrForbidden), errors.Is(err, access.ErrPasswordChange):
		return http.StatusForbidden
	case errors.Is(err, actor.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, access.ErrTaken), errors.Is(err, access.ErrLastAdmin),
		errors.Is(err, access.ErrNoSession):
		return http.StatusConflict
	case errors.Is(err, actor.ErrInvalidArguments):
		return http.StatusBadRequest
	case errors.Is(err, access.ErrAuditUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// fail answers a handler's error. A server-side failure is logged with
// its cause and answered without it (the cause may name tables or
// hosts); the others say what was wrong.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var tm *tooMany
	if errors.As(err, &tm) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(tm.retry.Seconds()))))
		writeError(w, http.StatusTooManyRequests, err.Error(), "")
		return
	}
	st := statusOf(err)
	if st == http.StatusServiceUnavailable {
		// The cause may name tables or hosts: logged, not answered.
		s.log.Error("api: an action was refused: its audit row could not be written", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "5")
		writeError(w, st, "the engine cannot write the audit log now, so it did nothing; try again", "")
		return
	}
	if st == http.StatusInternalServerError {
		s.log.Error("api: an operation failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, st, "the engine could not answer; its log says why", "")
		return
	}
	writeErrorCode(w, st, err.Error(), "", codeOf(err))
}

// codeOf is the Error.code of err, if it has one.
func codeOf(err error) string {
	if errors.Is(err, access.ErrPasswordChange) {
		return CodePasswordChange
	}
	return ""
}
