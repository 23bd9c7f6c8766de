# Consensus: see README.md. `make run` serves locally; `make test` checks everything.
SHELL := /bin/bash
GO ?= go
SQLC := $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1

.PHONY: help build run test test-deploy test-client stress drill upgrade-test fuzz generate verify lint lint-contract bench bench-go demo

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{n[NR] = $$1; d[NR] = $$2; if (length($$1) > w) w = length($$1)} END {f = "  make %-" w "s  %s\n"; for (i = 1; i <= NR; i++) printf f, n[i], d[i]}'

# -buildvcs=auto: stamp the git revision that --version prints, also where
# GOFLAGS turns stamping off; outside a checkout the build still works.
build: ## build consensusd and consensus into bin/
	$(GO) build -buildvcs=auto -o bin/ ./cmd/...

run: build ## serve on http://localhost:8080 with a private PostgreSQL under .data/
	deploy/local/run.sh

test: ## run every check against a private PostgreSQL it starts itself
	deploy/local/test.sh

test-deploy: ## check deploy/: render the Kubernetes overlays, Dockerfile, systemd unit (own Go module)
	cd deploy/kubernetes && $(GO) vet ./... && $(GO) test -count=1 ./...

test-client: ## the generated Go client's tests against a real server, through Prism too (own Go module)
	cd internal/fwtest/goclient && $(GO) vet ./... && $(GO) test -race -count=1 ./...

stress: ## internal/stress at full size (STRESS=1): 300 agreements on 3 replicas, crashes, outages, hostile input
	@mkdir -p .data && chmod 711 .data
	CONSENSUS_TEST_DATABASE_URL="$${CONSENSUS_TEST_DATABASE_URL:-$$(deploy/local/pg.sh start $(CURDIR)/.data/pgtest --fast)}" \
		STRESS=1 $(GO) test -count=1 -timeout 30m -v ./internal/stress/

drill: ## the failover drill (SPEC §22): 3 replicas under load, the primary SIGKILLed, its standby promoted; DRILL_ASYNC=1 with an asynchronous standby prints what it lost
	set -o pipefail; DRILL_ASYNC=$(DRILL_ASYNC) $(GO) test -count=1 -timeout 10m -v -run '^TestFailoverDrill$$' ./internal/stress/ | grep -v '^=== \|proctest: using'

upgrade-test: ## the rolling upgrade (SPEC §22): the previous release (CHANGELOG.md) and this tree side by side under load, replicas replaced one at a time
	set -o pipefail; UPGRADE=1 $(GO) test -count=1 -timeout 20m -v -run '^TestRollingUpgrade$$' ./internal/stress/ | grep -v '^=== \|proctest: using'

fuzz: ## run every fuzz target for FUZZTIME each (default 30s; FUZZ=regexp picks targets)
	deploy/local/fuzz.sh

generate: ## regenerate sqlc code, the generated parts of llms-full.txt (internal/httpapi/docs_generated.go) and api/components.yaml, openapi.json, openapi-agent.json, its Go client, the clients' typed credentials, docs/cli.md, docs/configuration.md and tools/dist/verify-record.mjs
	cd db && $(SQLC) generate
	$(GO) run ./internal/cmd/openapi-bundle -o openapi.json -agent openapi-agent.json -schemas schemas api
	CONSENSUS_UPDATE_ROUTE_DOCS=1 $(GO) test -count=1 -run '^TestDocsAgreeWithRouter$$' ./internal/httpapi >/dev/null
	$(GO) run ./internal/cmd/openapi-bundle -o openapi.json -agent openapi-agent.json -schemas schemas api
	$(GO) run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config internal/fwtest/goclient/oapiclient/oapi-codegen.yaml openapi-agent.json
	$(GO) run ./internal/cmd/client-credentials
	cd internal/fwtest/goclient && $(GO) mod tidy
	$(GO) run ./internal/cli/gendocs -o docs
	$(GO) run ./internal/cmd/verifier-bundle -o tools/dist/verify-record.mjs -docs web/llms-full.txt

verify: generate ## regenerate, then fail if anything generated differs from what is committed
	git diff --exit-code -- internal/store/internal/dbsqlc openapi.json openapi-agent.json internal/fwtest/goclient tools/fw/credentials.gen.mts docs/cli.md docs/configuration.md tools/dist web/llms-full.txt api/components.yaml

lint: ## gofmt, go vet, staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

lint-contract: ## redocly lint openapi.json, ajv-compile schemas/ (installs tools/ on first use)
	tools/lint.sh

BENCH_DURATION ?= 4s
BENCH_ROUNDS ?= 3
BENCH_SCALE ?= 0

bench: ## hot paths vs baselines over the HTTP API (6-8 min): bench/results.md; BENCH_DURATION=4s BENCH_ROUNDS=3 BENCH_SCALE=0
	@command -v wrk >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			echo "make bench: installing wrk (Debian package wrk), the load generator for append, read and 304"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y wrk || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y wrk; }; \
		else \
			echo "make bench needs wrk, its load generator for append, read and 304: install the Debian package wrk (sudo apt-get install wrk), or run make bench as root to have it installed" >&2; exit 1; \
		fi; }
	@command -v ssh-agent >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 && command -v ssh-add >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			echo "make bench: installing openssh-client (ssh-keygen, ssh-agent, ssh-add), with which the log's witness signs"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y openssh-client || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y openssh-client; }; \
		else \
			echo "make bench needs ssh-keygen, ssh-agent and ssh-add for the log's witness: install the Debian package openssh-client (sudo apt-get install openssh-client), or run make bench as root to have it installed" >&2; exit 1; \
		fi; }
	@mkdir -p .data && chmod 711 .data
	$(GO) build -o .data/bench/bin/consensus-bench ./internal/cmd/consensus-bench
	.data/bench/bin/consensus-bench -duration $(BENCH_DURATION) -rounds $(BENCH_ROUNDS) -scale $(BENCH_SCALE) \
		-invocation "make bench BENCH_DURATION=$(BENCH_DURATION) BENCH_ROUNDS=$(BENCH_ROUNDS)$(if $(filter-out 0,$(BENCH_SCALE)), BENCH_SCALE=$(BENCH_SCALE))"

bench-go: ## run the Go microbenchmarks against the private PostgreSQL
	BENCH=1 deploy/local/test.sh

demo: build ## two agents agree over SMTP+IMAP (in-process mail, private PostgreSQL under .data/)
	@mkdir -p .data && chmod 711 .data
	DATABASE_URL="$${DATABASE_URL:-$$(deploy/local/pg.sh start $(CURDIR)/.data/pg)}" $(GO) run ./cmd/consensus-demo -consensus bin/consensus
