// Not Go: the console's web sources. This file makes the directory a module
// of its own, so that go list ./... (and vet, staticcheck, go test ./...)
// of the main module never walks into node_modules, whatever npm puts there.
module github.com/ductus/ductus/integration/console/web

go 1.26
