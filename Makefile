# The two commands a newcomer needs: `make run` and `make test`.
GO       ?= go
BACKEND  ?= sqlite
# A count, not a duration: a duration-bounded -fuzztime can fail with a bare
# "context deadline exceeded" and no crasher when a worker is starved at the
# deadline (golang/go#75804, fixed in go1.27); a count has no deadline to race.
FUZZTIME ?= 100000x
TIMEOUT  ?= 40m

.PHONY: run test test-sqlite test-go fuzz-smoke bench bench-smoke lint build peers browser module-test console console-types

## run: the integration engine on its bundled example project, embedded SQLite, everything on localhost
run: console
	$(GO) run ./cmd/ductus dev

## test: every test on every backend this machine has, plus lint, short fuzz runs and a benchmark smoke run
test: lint console-types console peers browser test-go module-test fuzz-smoke bench-smoke

test-go:
	$(GO) test -timeout $(TIMEOUT) ./...

## test-sqlite: no servers needed
test-sqlite: lint
	DUCTUS_TEST_POSTGRES=off DUCTUS_TEST_MYSQL=off $(GO) test -timeout $(TIMEOUT) ./...
	DUCTUS_TEST_POSTGRES=off DUCTUS_TEST_MYSQL=off $(MAKE) bench-smoke

## console: the web console (integration/console/web, pinned by its package-lock.json) built by Vite into
## integration/console/dist, which the engine embeds; npm ci when the lock is newer than node_modules, the
## build only when a source is newer than the stamp of the last build. Without npm the engine serves a page
## saying the console is not built (and TestFirstLoadSize fails with CI=true).
CONSOLE       := integration/console/web
CONSOLE_DIST  := integration/console/dist
CONSOLE_STAMP := $(CONSOLE_DIST)/.built
console:
	@if command -v npm >/dev/null 2>&1; then \
		if [ ! -d $(CONSOLE)/node_modules ] || [ $(CONSOLE)/package-lock.json -nt $(CONSOLE)/node_modules ]; then \
			npm ci --prefix $(CONSOLE) --no-audit --no-fund --loglevel=error && touch $(CONSOLE)/node_modules || exit 1; fi; \
		if [ ! -f $(CONSOLE_STAMP) ] || [ ! -f $(CONSOLE_DIST)/index.html ] || \
			[ -n "$$(find $(CONSOLE)/src $(CONSOLE)/public $(CONSOLE)/index.html $(CONSOLE)/vite.config.ts $(CONSOLE)/tsconfig.json \
				$(CONSOLE)/package.json $(CONSOLE)/package-lock.json -newer $(CONSOLE_STAMP) 2>/dev/null | head -1)" ]; then \
			rm -rf $(CONSOLE_DIST)/assets $(CONSOLE_DIST)/index.html $(CONSOLE_DIST)/favicon.svg && \
			npm run --prefix $(CONSOLE) --silent build && touch $(CONSOLE_STAMP) || exit 1; fi; \
	else echo "npm not found: the engine will serve a page saying the console is not built"; fi

## console-types: fails when integration/console/web/src/api/schema.d.ts is stale against integration/api/openapi.yaml
## (regenerate: npm run --prefix integration/console/web types)
console-types:
	@if command -v npm >/dev/null 2>&1; then \
		if [ ! -d $(CONSOLE)/node_modules ] || [ $(CONSOLE)/package-lock.json -nt $(CONSOLE)/node_modules ]; then \
			npm ci --prefix $(CONSOLE) --no-audit --no-fund --loglevel=error && touch $(CONSOLE)/node_modules || exit 1; fi; \
		tmp=$$(mktemp -d) && \
		(cd $(CONSOLE) && ./node_modules/.bin/openapi-typescript ../../api/openapi.yaml -o $$tmp/schema.d.ts --silent) && \
		if ! cmp -s $$tmp/schema.d.ts $(CONSOLE)/src/api/schema.d.ts; then \
			diff -u $(CONSOLE)/src/api/schema.d.ts $$tmp/schema.d.ts | head -40; rm -rf $$tmp; \
			echo "$(CONSOLE)/src/api/schema.d.ts is stale: run npm run --prefix $(CONSOLE) types"; exit 1; fi; \
		rm -rf $$tmp; \
	elif [ "$$CI" = true ]; then echo "npm not found: CI requires the console's API type check"; exit 1; \
	else echo "npm not found: the console's API types are not checked"; fi

## peers: the third-party MLLP peers (node-hl7-client, node-hl7-server) the engine's tests talk to, pinned by package-lock.json
PEERS := integration/engine/testdata/peers
peers:
	@if command -v npm >/dev/null 2>&1; then \
		if [ ! -d $(PEERS)/node_modules ] || [ $(PEERS)/package-lock.json -nt $(PEERS)/node_modules ]; then \
			npm ci --prefix $(PEERS) --no-audit --no-fund --loglevel=error && touch $(PEERS)/node_modules; fi; \
	else echo "npm not found: the node MLLP peer tests will skip (and fail with CI=true)"; fi

## module-test: a separate module (examples/service-module) requires this checkout as a service would
## (require + replace), builds, vets, runs and tests its program; it fails if the module pulls in V8
## or the integration engine (its test also fails if the runtime creates the engine's tables). The one
## integration package a service links is integration/ixstore, the engine store seam's interface and
## row types, which the adapters implement beside their other SQL (no engine code, no V8, no tables).
MODULE := examples/service-module
FORBIDDEN_DEPS ?= ^(rogchap\.com/v8go|github\.com/ductus/ductus/integration)(/|$$)
ALLOWED_DEPS   ?= ^github\.com/ductus/ductus/integration/ixstore$$
module-test:
	cd $(MODULE) && $(GO) build ./... && $(GO) vet ./...
	@cd $(MODULE) && deps=$$($(GO) list -deps -test ./...) || exit 1; \
		bad=$$(echo "$$deps" | grep -E '$(FORBIDDEN_DEPS)' | grep -Ev '$(ALLOWED_DEPS)'); \
		if [ -n "$$bad" ]; then echo "$(MODULE) pulls in what a service must not get:"; echo "$$bad"; exit 1; fi
	cd $(MODULE) && $(GO) run . && $(GO) test -count=1 ./...

## browser: headless Debian chromium, playwright-core and axe-core (pinned by e2e/package-lock.json) for the browser tests (e2e/)
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		if command -v apt-get >/dev/null 2>&1; then apt-get update && apt-get install -y chromium; \
		else echo "no /usr/bin/chromium and no apt-get: the browser tests will skip (and fail with CI=true)"; fi; fi
	@if command -v npm >/dev/null 2>&1; then \
		if [ ! -d e2e/node_modules ] || [ e2e/package-lock.json -nt e2e/node_modules ]; then \
			npm ci --prefix e2e --no-audit --no-fund --loglevel=error && touch e2e/node_modules; fi; \
	else echo "npm not found: the browser tests will skip (and fail with CI=true)"; fi

## fuzz-smoke: each network parser's fuzz target for FUZZTIME
fuzz-smoke:
	$(GO) test ./integration/hl7 -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./integration/mllp -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./integration/format -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME)
	$(GO) test ./realtime -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME)
	$(GO) test ./integration/charset -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./integration/api -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(FUZZTIME)

## bench: the benchmark harness against BACKEND (sqlite, postgres, mysql); with postgres also the River peer, in the same run
bench:
	$(GO) run ./bench -backend $(BACKEND)
	@if [ "$(BACKEND)" = postgres ]; then cd bench/peers/river && $(GO) run . ; fi

## bench-smoke: every scenario with tiny counts, so the harness cannot rot (asserts nothing about speed)
bench-smoke:
	$(GO) run ./bench -backend sqlite -smoke
	@if [ "$$DUCTUS_TEST_POSTGRES" != off ]; then echo "$(GO) run ./bench -backend postgres -smoke"; $(GO) run ./bench -backend postgres -smoke; fi
	@if [ "$$DUCTUS_TEST_MYSQL" != off ]; then echo "$(GO) run ./bench -backend mysql -smoke"; $(GO) run ./bench -backend mysql -smoke; fi

## lint: gofmt, import grouping (standard library, third party, then this module), go vet and staticcheck; the tools are pinned in go.mod
GOFILES = $$(git ls-files '*.go' | grep -v '^bench/peers/')
LOCAL   := github.com/ductus/ductus
lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) tool goimports -local $(LOCAL) -l $(GOFILES)); if [ -n "$$out" ]; then echo "goimports -local $(LOCAL) would change (fix: $(GO) tool goimports -local $(LOCAL) -w FILE...):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

build:
	$(GO) build ./...
