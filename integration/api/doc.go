// Package api is the engine's operator API: /api/v1 and /metrics on the
// engine's api.listen address.
//
// openapi.yaml is the one definition. The routes, the request and response
// types and the strict server interface in api.gen.go are generated from
// it by oapi-codegen (go generate; TestGeneratedCodeIsCurrent fails when
// they are stale), the document served at /api/v1/openapi.json is the
// same file, and the access table (integration/access.Table) has a row
// for each of its operations (TestAccessTableCoversTheDocument).
//
// A request passes, in order: the route (an outer ServeMux holding the
// document's patterns), the guard (guard.go:
// the operation's row in the access table, the bearer token, the role and
// permission, then the request checked against the document: parameters,
// body size and schema, unknown fields), the generated binding (an inner
// mux: the generated code binds parameters before its own middleware
// runs, which is why the guard is not one), and the handler. So a caller without credentials learns nothing about what it
// sent, and a handler sees only a request the document allows. Every
// refusal is a JSON Error naming what is wrong.
//
// The package reads the engine through the Engine interface, which the
// engine implements; it does not import the engine (and so does not link
// V8).
package api
