package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/ductus/ductus/integration/access"
)

// operation is one operation of the document, found by its route.
type operation struct {
	id    string
	rule  access.Rule
	route *routers.Route
}

// guard checks every request before the generated binding sees it; see
// the package documentation for the order.
type guard struct {
	ops     map[string]*operation // "GET /api/v1/messages/{id}" (the ServeMux pattern)
	acc     *access.Store
	maxBody int64
}

func newGuard(doc *openapi3.T, acc *access.Store, maxBody int64) (*guard, error) {
	g := &guard{ops: map[string]*operation{}, acc: acc, maxBody: maxBody}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			rule, ok := access.Table[op.OperationID]
			if !ok {
				return nil, fmt.Errorf("api: operation %s (%s %s) has no row in the access table", op.OperationID, method, path)
			}
			g.ops[method+" "+path] = &operation{id: op.OperationID, rule: rule,
				route: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}}
		}
	}
	return g, nil
}

type principalKey struct{}

// principalFrom is the caller the guard let through (nil on a public
// operation).
func principalFrom(ctx context.Context) *access.Principal {
	p, _ := ctx.Value(principalKey{}).(*access.Principal)
	return p
}

func (g *guard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := g.ops[r.Pattern] // the outer mux routes only the document's patterns here
		w.Header().Set("Cache-Control", "no-store")
		var p *access.Principal
		if !op.rule.Public {
			var err error
			if p, err = g.authenticate(r); err != nil {
				writeGuardError(w, err)
				return
			}
			if err := checkCSRF(r, p); err != nil {
				writeGuardError(w, err)
				return
			}
			if err := access.Check(p, op.id, op.rule); err != nil {
				writeGuardError(w, err)
				return
			}
		}
		if err := g.validate(w, r, op); err != nil {
			writeGuardError(w, err)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		ctx = context.WithValue(ctx, callerKey{}, caller{address: remoteHost(r), tls: r.TLS != nil})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// caller is what a handler may need of the request beyond its body.
type caller struct {
	address string
	tls     bool
}

type callerKey struct{}

func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// authenticate finds the caller's principal: a bearer token first, else
// the session cookie.
func (g *guard) authenticate(r *http.Request) (*access.Principal, error) {
	h := r.Header.Get("Authorization")
	var p *access.Principal
	var err error
	switch c, cerr := r.Cookie(SessionCookie); {
	case h != "":
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, fmt.Errorf("%w: the Authorization header must be \"Bearer dux_...\"", access.ErrUnauthenticated)
		}
		p, err = g.acc.Authenticate(r.Context(), strings.TrimSpace(token), remoteHost(r))
	case cerr == nil:
		p, err = g.acc.AuthenticateSession(r.Context(), c.Value, remoteHost(r))
	default:
		return nil, fmt.Errorf("%w: this operation needs a bearer token (Authorization: Bearer dux_...) or a signed-in session", access.ErrUnauthenticated)
	}
	if err != nil && !errors.Is(err, access.ErrUnauthenticated) {
		return nil, &unavailable{err}
	}
	return p, err
}

// CSRFHeader must be on every request that changes something with the
// session cookie. Another origin cannot send a custom header without a
// CORS preflight, which the engine never grants, so a page elsewhere
// cannot use a signed-in browser's cookie; SameSite=Strict is the first
// line, this the second.
const CSRFHeader = "X-Ductus"

// checkCSRF refuses a cookie-authenticated request that may change
// something and lacks CSRFHeader.
func checkCSRF(r *http.Request, p *access.Principal) error {
	if p.Via != access.ViaSession {
		return nil
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if r.Header.Get(CSRFHeader) != "1" {
		return fmt.Errorf("%w: a request that changes something with the session cookie must carry the header %s: 1", access.ErrForbidden, CSRFHeader)
	}
	return nil
}

// unavailable is a failure to check credentials (the database is down):
// 503, so a client retries rather than concluding its token is bad.
type unavailable struct{ err error }

func (u *unavailable) Error() string { return u.err.Error() }
func (u *unavailable) Unwrap() error { return u.err }

// badRequest is a request the document does not allow.
type badRequest struct {
	msg, field string
}

func (b *badRequest) Error() string { return b.msg }

func writeGuardError(w http.ResponseWriter, err error) {
	var br *badRequest
	var un *unavailable
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, br.msg, br.field)
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes", tooBig.Limit), "body")
	case errors.As(err, &un):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "the engine cannot check credentials now (its database does not answer); try again", "")
	default:
		writeErrorCode(w, statusOf(err), err.Error(), "", codeOf(err))
	}
}

// validate checks the request against its operation in the document:
// parameters, the body's size, type and schema (unknown fields included).
func (g *guard) validate(w http.ResponseWriter, r *http.Request, op *operation) error {
	if r.Body != nil {
		// With w, the server closes the connection after an oversized
		// body rather than reading what is left of it as the next request.
		r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	params := map[string]string{}
	// A path's parameters may be declared on the operation or on its path
	// item; the validator checks both, so both are bound.
	for _, ps := range []openapi3.Parameters{op.route.PathItem.Parameters, op.route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
				params[p.Value.Name] = r.PathValue(p.Value.Name)
			}
		}
	}
	err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: op.route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false},
	})
	if err == nil {
		return nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooBig
	}
	return describe(err)
}

// describe turns a validation error into a message naming the field.
func describe(err error) error {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return &badRequest{msg: err.Error()}
	}
	field := ""
	switch {
	case re.Parameter != nil:
		field = re.Parameter.Name
	case re.RequestBody != nil:
		field = "body"
	}
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		if ptr := se.JSONPointer(); len(ptr) > 0 && re.RequestBody != nil {
			field = strings.Join(ptr, ".")
		}
		return &badRequest{msg: fmt.Sprintf("%s: %s", orWhole(field), se.Reason), field: field}
	}
	reason := re.Reason
	if re.Err != nil && !strings.Contains(reason, re.Err.Error()) {
		// The validator sometimes puts its cause in both; say it once.
		reason = strings.TrimSpace(reason + " " + re.Err.Error())
	}
	return &badRequest{msg: fmt.Sprintf("%s: %s", orWhole(field), reason), field: field}
}

func orWhole(field string) string {
	if field == "" {
		return "the request"
	}
	return field
}

// remoteHost is the caller's address for the audit log.
func remoteHost(r *http.Request) string {
	return r.RemoteAddr
}
