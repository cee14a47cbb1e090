# incidentlib. `make run` serves the seeds on http://127.0.0.1:8080;
# `make test` is what CI runs.
GO ?= go
BIN := bin/incidentlib
PKGS := ./...

.PHONY: dups e2e-deps system-deps run build test test-cluster test-cluster-processes image test-short test-long generate check-generate bench fuzz lint fmt clean

run: build
	@echo 'The first token, while this serves (from another shell; the store'"'"'s control socket, docs/editing.md):'
	@echo '  $(BIN) token add --db ./data/incidentlib.db --name NAME --role editor'
	$(BIN) serve --addr 127.0.0.1:8080 --db ./data/incidentlib.db

build:
	$(GO) build -o $(BIN) ./cmd/incidentlib

# gen is single-threaded and ten times slower under the race detector,
# which has nothing to find there, so it runs without it.
# The cluster's tests (elections, real processes) run in their own step,
# without it too: test-cluster.
RACE_PKGS = $$($(GO) list $(PKGS) | grep -v -e '/gen$$' -e '/cluster$$')

# The public postmortem collections beside the checkout (../shared/datasets),
# for the importers' corpus tests; an INCIDENTLIB_CORPUS already set wins.
INCIDENTLIB_CORPUS ?= $(shell [ -d ../shared/datasets ] && cd ../shared/datasets && pwd)
export INCIDENTLIB_CORPUS

# The JavaScript clients the end-to-end tests drive (e2e/package-lock.json:
# graphql-http's audit, graphql-ws, graphql-sse, relay-compiler and relay-runtime,
# Apollo Client, urql, graphql-codegen and TypeScript, the MCP Inspector), installed by npm ci when
# the lock file is newer than what node_modules holds. Needs node and npm
# (system-deps).
e2e/node_modules/.package-lock.json: e2e/package-lock.json e2e/package.json | system-deps
	cd e2e && npm ci --no-audit --no-fund

e2e-deps: system-deps e2e/node_modules/.package-lock.json

# What the end-to-end tests need from Debian, installed where it is missing
# so that make test is enough on a fresh machine: chromium (GraphiQL's and
# the browser subscription's tests; INCIDENTLIB_CHROMIUM names another
# browser instead), node and npm (the JavaScript clients). apt-get runs as
# root, or through sudo.
system-deps:
	@missing=""; \
	[ -n "$$INCIDENTLIB_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
		echo "make: installing Debian's$$missing (the end-to-end tests need them)"; \
		$$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q $$missing; \
	fi

# lint (go vet, gofmt and golangci-lint, below) runs after check-generate,
# never beside it (go generate rewrites graph/ while it runs), then the tests.
test: check-generate e2e-deps
	$(MAKE) lint
	$(GO) test -race -count=1 -timeout 12m $(RACE_PKGS)
	$(GO) test -count=1 ./gen/
	$(MAKE) test-cluster
	$(GO) test -count=1 -run 'TestNoNPlusOne' ./server/
	$(MAKE) fuzz FUZZTIME=2000x

# The cluster's tests, in make test, without the race detector (elections
# under it are slow): three-node clusters of embedded members (cluster/),
# then three real processes under SIGKILL, SIGSTOP and a cut-off node
# (cmd/incidentlib, tag clustertest), and serve's handler on three
# in-process nodes (TestClusterAdminMutationsThroughHTTP, not under -race).
test-cluster:
	$(GO) test -count=1 -timeout 12m ./cluster/
	$(GO) test -count=1 -timeout 8m -tags clustertest -run 'TestCluster' ./cmd/incidentlib/

# The process tests alone.
test-cluster-processes:
	$(GO) test -count=1 -timeout 8m -tags clustertest -run 'TestCluster' ./cmd/incidentlib/

# The image both manifests of docs/kubernetes.yaml name, where Docker is.
image:
	docker build -t ghcr.io/incidentlib/incidentlib:latest .

test-short:
	$(GO) test -count=1 -short $(PKGS)

# The long runs, built with -tags long and named *Long: the history's 1,000
# random edits (storage), the subscriptions' resume over 10,000 writes with
# random disconnects (server/gqledge/streams/live_long_test.go). Not in make test.
test-long:
	$(GO) test -count=1 -tags long -timeout 30m -run 'Long' $(PKGS)

generate:
	$(GO) generate ./graph

# The generated code is committed; this fails if it is not what
# `make generate` produces. gqlgen writes below graph/ only (gqlgen.yml:
# generated.go, model/models_gen.go and a {name}.resolvers.go per schema
# file, follow-schema), so the whole of graph/ is kept before and compared
# after, files created or deleted included; where anything differs, the
# kept tree is put back, so the check leaves the tree as it found it, and
# the failure names the files.
check-generate:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -a graph "$$tmp/graph"; \
	$(GO) generate ./graph; gen=$$?; \
	status=0; \
	for f in $$( (cd graph && find . -type f; cd "$$tmp/graph" && find . -type f) | sed 's|^\./||' | sort -u); do \
		if [ ! -e "$$tmp/graph/$$f" ]; then echo "graph/$$f: created by 'make generate'"; rm -f "graph/$$f"; status=1; \
		elif [ ! -e "graph/$$f" ]; then echo "graph/$$f: deleted by 'make generate'"; mkdir -p "$$(dirname "graph/$$f")"; cp -p "$$tmp/graph/$$f" "graph/$$f"; status=1; \
		elif ! cmp -s "graph/$$f" "$$tmp/graph/$$f"; then echo "graph/$$f differs from 'make generate'"; mkdir -p "$$(dirname "graph/$$f")"; cp -p "$$tmp/graph/$$f" "graph/$$f"; status=1; \
		fi; \
	done; \
	if [ $$gen -ne 0 ]; then echo "go generate ./graph failed"; exit 1; fi; \
	if [ $$status -ne 0 ]; then echo "check-generate: the files above are put back as they were; run 'make generate' and commit its output"; fi; \
	exit $$status

# A count (2000x) rather than a duration keeps CI's short runs clear of the
# fuzzing coordinator's deadline race in Go 1.26 (golang/go#75804).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# Every benchmark of the harness with its defaults; `go run
# ./cmd/incidentlib-bench -h` lists them, `... NAME -h` their flags.
bench:
	$(GO) run ./cmd/incidentlib-bench $(BENCH)

# golangci-lint v2 with .golangci.yml (govet, staticcheck, errcheck,
# ineffassign, unused, dupl), run from the module proxy rather than made a
# dependency; `make lint GOLANGCI_LINT=golangci-lint` uses one on PATH.
# Part of `make test`.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GOLANGCI_LINT) run $(PKGS)

# Repeated code in the program's own code, as docs/design.md counts it: a
# copy of the tracked non-test .go files without the generated code
# (graph/generated.go, graph/model/models_gen.go), server/assets, testdata
# and e2e/, scanned by `duplicates` (this workplace's copy-paste scan, not
# a Go tool: not part of make test). Prints the pairs, then the count of
# those not marked boilerplate, and how many of these are only the lines
# of an import block (the scan passes over import lines but not the
# package paths between `import (` and `)`).
DUPS_MOST ?= 200
dups:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git ls-files '*.go' | grep -v -e '_test\.go$$' -e '^e2e/' -e '^testdata/' -e '/testdata/' -e '^server/assets/' \
		-e '^graph/generated\.go$$' -e '^graph/model/models_gen\.go$$' | \
	while read -r f; do mkdir -p "$$tmp/$$(dirname "$$f")"; cp "$$f" "$$tmp/$$f"; done; \
	duplicates --repo "$$tmp" --most $(DUPS_MOST) --seconds 120 > "$$tmp.out"; \
	cat "$$tmp.out"; \
	imports=0; \
	for side in $$(grep -E '^D[0-9]+ ' "$$tmp.out" | grep -v boilerplate | awk '{print $$2}'); do \
		f=$${side%:*}; r=$${side##*:}; \
		sed -n "$${r%-*},$${r#*-}p" "$$tmp/$$f" | grep -qvE '^[[:space:]]*(([A-Za-z_.][A-Za-z0-9_]* )?"[^"]*")?[[:space:]]*$$' || imports=$$((imports+1)); \
	done; \
	echo "not marked boilerplate: $$(grep -E '^D[0-9]+ ' "$$tmp.out" | grep -vc boilerplate) of $$(grep -cE '^D[0-9]+ ' "$$tmp.out") listed ($$imports of them lines of an import block)"; \
	rm -f "$$tmp.out"

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin data
