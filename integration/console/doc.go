// Package console serves the engine's web console: the operator UI, a
// single-page application (Preact and TypeScript, built by Vite from
// integration/console/web into integration/console/dist) embedded in the
// binary with go:embed.
//
// Why a package of its own: the console is a client of the operator API
// like any other and uses nothing but that API, so the API package only
// takes an http.Handler for every path outside /api/ and /metrics
// (api.Config.Console) and knows nothing of the files. Keeping the
// embedded assets here also keeps them out of every binary that does not
// serve the API.
//
// Why embedded: hospital networks run engines on hosts with no internet
// and block CDNs, and an operator UI must be the version of the engine
// it talks to. One binary carries both.
//
// The built files are not committed (dist is gitignored but for the
// placeholder not-built.txt, which keeps go:embed and go build working on
// a fresh clone without npm). Without a build, Handler serves a plain page
// saying how to build the console (make console).
//
// Every response carries a strict Content-Security-Policy (own scripts and
// styles only, nothing inline, no framing), and content-hashed files under
// /assets/ are cached as immutable while everything else is no-cache, so
// a new engine version is picked up on the next load. See docs/console.md.
package console
