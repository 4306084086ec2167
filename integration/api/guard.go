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
			if err := access.Check(p, op.id, op.rule); err != nil {
				writeGuardError(w, err)
				return
			}
		}
		if err := g.validate(w, r, op); err != nil {
			writeGuardError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// authenticate reads the bearer token and finds its principal.
func (g *guard) authenticate(r *http.Request) (*access.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, fmt.Errorf("%w: this operation needs a bearer token (Authorization: Bearer dux_...)", access.ErrUnauthenticated)
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, fmt.Errorf("%w: the Authorization header must be \"Bearer dux_...\"", access.ErrUnauthenticated)
	}
	p, err := g.acc.Authenticate(r.Context(), strings.TrimSpace(token), remoteHost(r))
	if err != nil && !errors.Is(err, access.ErrUnauthenticated) {
		return nil, &unavailable{err}
	}
	return p, err
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
		writeError(w, statusOf(err), err.Error(), "")
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
