# eventrelay — run `make` for the list of targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO      ?= go
TOOL    := $(GO) tool -modfile=tools/go.mod
PKGS    ?= ./...
# The other Go modules of the repository whose tests, vet and gofmt
# make test and make verify run with the root's (deploy/check runs in
# make deploy-check).
MODULES := bench e2e examples/orders examples/catalog-demo console-test
# The catalog reference demo: its own module (service, projector, relayctl).
DEMO := examples/catalog-demo
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

.PHONY: pg-start pg-stop
pg-start: ## Start the private Postgres (idempotent) and print its env
	@scripts/pg.sh start
pg-stop: ## Stop the private Postgres
	@scripts/pg.sh stop

.PHONY: demo
demo: build-demo ## Run the catalog demo's whole pipeline on this machine: Postgres, the Pub/Sub emulator, catalog, 2 publishers, projector; ~30 s workload, summary, verify
	@bin/demo/relaydemo $(DEMOFLAGS)

.PHONY: test
# Every pstest server of the tests sits behind the strict Pub/Sub double
# (internal/gpubsub/strict); each appends its counts to PUBSUB_DOUBLE_REPORT
# and the total is printed (refused must be 0: a test fails on a refusal it
# did not provoke). PUBSUB_DOUBLE_RTT=15ms adds a round trip to every call.
# The modules of the instruments (bench, e2e: the fault suite itself needs
# the e2e build tag, see make e2e) and the examples run their tests too.
test: ## Run all tests (and those of the bench, e2e, examples/orders and examples/catalog-demo modules) against a private Postgres (started if needed) and pstest behind the strict Pub/Sub double
	@pgenv=$$(scripts/pg.sh start) || exit 1; eval "$$pgenv"; report=$$(mktemp) || exit 1; \
	PUBSUB_DOUBLE_REPORT=$$report $(GO) test $(TESTFLAGS) $(PKGS); rc=$$?; \
	for m in $(MODULES); do (cd $$m && PUBSUB_DOUBLE_REPORT=$$report $(GO) test $(TESTFLAGS) ./...) || rc=1; done; \
	awk '{r+=$$2; m+=$$4; f+=$$6; e+=$$8} END {printf "strict Pub/Sub double: %d Publish requests (%d messages), %d refused (+%d provoked on purpose by tests of the double)\n", r, m, f, e}' $$report; \
	rm -f $$report; exit $$rc

# Fuzz targets of every decoder of untrusted input, each run for FUZZTIME
# (the seed corpora also run in `make test`), in the module holding the
# package. A crasher is written to the package's testdata/fuzz/ and fails
# the target. FuzzResolveCatalogEvent
# (examples/catalog-demo/projection: attributes + registry decode together) is
# left out: its fuzz-instrumented build (go-elasticsearch) takes minutes;
# its parts are fuzzed here and its seeds run in `make test`.
FUZZTIME ?= 10s
FUZZ_TARGETS := \
	./projection:FuzzParseAttributes \
	./$(DEMO)/events:FuzzDecode \
	./$(DEMO)/internal/server:FuzzDecodeJSONBody \
	./settings:FuzzLoad \
	./$(DEMO)/cmd:FuzzLoadDaemonConfigs

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 10s): envelope, attributes, catalog JSON, config
	@GO=$(GO) scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: generate
generate: ## Regenerate protobuf (buf), sqlc and wire output (the root's and the examples') and the key tables of docs/configuration.md
	$(TOOL) buf generate
	cd sqlc && $(GO) tool -modfile=../tools/go.mod sqlc generate
	cd e2e/sqlc && $(GO) tool -modfile=../../tools/go.mod sqlc generate
	$(TOOL) wire gen ./cmd/... >/dev/null
	cd $(DEMO) && $(GO) tool -modfile=../../tools/go.mod buf generate
	cd $(DEMO) && $(GO) tool -modfile=../../tools/go.mod sqlc generate
	cd $(DEMO) && $(GO) tool -modfile=../../tools/go.mod wire gen ./cmd/... >/dev/null
	cd $(DEMO) && $(GO) run ./internal/configdocs ../../docs/configuration.md
	cd examples/orders && $(GO) tool -modfile=../../tools/go.mod buf generate
	cd examples/orders/sqlc && $(GO) tool -modfile=../../../tools/go.mod sqlc generate

.PHONY: depcheck
depcheck: ## Fail if a generic package (tests included) depends on an example (the catalog demo among them) or Elasticsearch, or an import runs against the layers (scripts/layercheck.sh)
	@scripts/depcheck.sh
	@scripts/layercheck-test.sh

.PHONY: verify
verify: generate ## Fail if generated code drifts from its sources, a generic package depends on an example, a tracked file over 1 MB is not documented test data or the root module holds a hand-written twin (scripts/twins.sh); lint protos, vet, gofmt
	@git add -N . >/dev/null 2>&1 || true
	@git diff --exit-code --stat -- api internal cmd e2e/e2edb examples/orders/api examples/orders/internal $(DEMO)/api $(DEMO)/catalogdb $(DEMO)/cmd docs/configuration.md || { echo "generated code is out of date: run make generate and commit"; exit 1; }
	$(TOOL) buf lint
	@# The root's protobuf contract is the envelope (api/eventrelay); the examples' APIs are checked in their modules.
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
		$(TOOL) buf breaking --against '.git#branch=main' --path api/eventrelay; \
	else echo "buf breaking: no main branch with buf.yaml to compare against yet"; fi
	cd examples/orders && $(GO) tool -modfile=../../tools/go.mod buf lint
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:examples/orders/buf.yaml 2>/dev/null; then \
		cd examples/orders && $(GO) tool -modfile=../../tools/go.mod buf breaking --against '../../.git#branch=main,subdir=examples/orders'; \
	else echo "buf breaking (examples/orders): no main branch with examples/orders/buf.yaml to compare against yet"; fi
	cd $(DEMO) && $(GO) tool -modfile=../../tools/go.mod buf lint
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:$(DEMO)/buf.yaml 2>/dev/null; then \
		cd $(DEMO) && $(GO) tool -modfile=../../tools/go.mod buf breaking --against '../../.git#branch=main,subdir=$(DEMO)'; \
	else echo "buf breaking ($(DEMO)): no main branch with $(DEMO)/buf.yaml to compare against yet"; fi
	$(GO) vet ./...
	@scripts/depcheck.sh
	@scripts/layercheck-test.sh
	@scripts/sizecheck.sh
	@scripts/twins.sh
	for m in $(MODULES); do (cd $$m && $(GO) build ./... && $(GO) vet ./...) || exit 1; done
	cd e2e && $(GO) vet -tags e2e ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v -E '\.pb\.go$$')); [ -z "$$out" ] || { echo "gofmt needed: $$out"; exit 1; }

# VERSION is stamped into every binary (--version) and image tag (the demo's
# binaries carry it in main.version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X github.com/eventrelay/eventrelay/internal/version.Version=$(VERSION) -X main.version=$(VERSION)

.PHONY: build build-e2e build-demo
build: ## Build eventrelay's daemons (publisher, relayctl) into bin/ (version stamped from git describe)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...
build-e2e: ## Build the demo driver and the Elasticsearch test server (e2e/ module) into bin/
	$(GO) -C e2e build -o ../bin/ ./cmd/...
# bin/demo/relayctl is the catalog's (relayctl with the catalog's hooks).
build-demo: ## Build what the catalog demo runs into bin/demo/: the publisher, the demo's catalog, projector and relayctl, the demo driver and the Elasticsearch test server
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/demo/ ./cmd/publisher
	$(GO) -C $(DEMO) build -ldflags "$(LDFLAGS)" -o ../../bin/demo/ ./cmd/...
	$(GO) -C e2e build -o ../bin/demo/ ./cmd/...

# --- Deployment (deploy/) ---------------------------------------------------
.PHONY: deploy-check
deploy-check: ## Validate deploy/ offline: kustomize render + strict k8s decoding + policies, grace >= drain, Pub/Sub objects, alert rules (promtool), dashboard, systemd units
	@command -v promtool >/dev/null || { echo "deploy-check: installing promtool from Debian's prometheus package (the Go module cmd/promtool does not resolve: hashicorp/nomad/api 403 at the proxy)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null; }
	@cd deploy/check && $(GO) vet ./... && $(GO) test -count=1 ./...

.PHONY: images
images: ## Build one OCI image per daemon (FROM scratch, static, non-root; buildah, no base pull) into .run/images/*.tar and test their filesystems
	@VERSION=$(VERSION) scripts/images.sh
	cd deploy/check && EVENTRELAY_IMAGES_DIR=$(CURDIR)/.run/images $(GO) test -count=1 -run TestImages -v ./...

# --- Web console in a real browser (console-test/: its own module) ---------
# CONSOLE_TEST_REQUIRE_BROWSER=1 turns the tests' skip (no chromium) into a
# failure: here the browser is installed first, so it must run.
.PHONY: console-test console-screenshots
console-test: ## Browser tests of the web console (relayctl ui): headless Chromium, installed from Debian when missing, driven by chromedp; screenshots in .run/console
	@command -v chromium >/dev/null || { echo "console-test: installing chromium from Debian"; \
		apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
	@pgenv=$$(scripts/pg.sh start) || exit 1; eval "$$pgenv"; mkdir -p .run/console; \
	cd console-test && CONSOLE_TEST_REQUIRE_BROWSER=1 $(GO) test -count=1 -v -artifacts -outputdir $(CURDIR)/.run/console ./...
console-screenshots: ## Run console-test and refresh the screenshots in docs/console
	@$(MAKE) --no-print-directory console-test CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console

# --- Benchmarks (bench/: its own module) -------------------------------------
# BENCHFLAGS passes options, e.g. BENCHFLAGS='-only ceilings,scale -runs 1'.
BENCHFLAGS ?=

.PHONY: bench bench-smoke
bench: ## Measure publisher/projector against ceilings in one run (~40 min); JSON in bench/results, table in bench/README.md
	@pgenv=$$(scripts/pg.sh start) && eval "$$pgenv" && $(GO) -C bench run ./cmd/relaybench $(BENCHFLAGS)
bench-smoke: ## The same bench with tiny sizes in seconds (CI: keeps the benchmark from rotting)
	@pgenv=$$(scripts/pg.sh start) && eval "$$pgenv" && $(GO) -C bench run ./cmd/relaybench -smoke $(BENCHFLAGS)

# --- End to end (e2e/: its own module) ---------------------------------------
# DEMOFLAGS passes options to the demo, e.g. DEMOFLAGS='-rate 500 -duration 1m -aggregates 500'.
DEMOFLAGS ?=
E2EFLAGS  ?= -count=1 -timeout 40m -v

.PHONY: e2e
# PUBSUB_DOUBLE_RTT=15ms runs it with a 15 ms round trip through the strict double.
e2e: ## Fault-injection suite: processes + real emulator behind the strict double, >=20k events, kills/restarts/outages, the publishers in the log mode (reader killed, slot dropped and invalidated), then the hardening cases, each on its own stack; asserts convergence (~12-18 min)
	@$(GO) -C e2e test -tags e2e $(E2EFLAGS) -run 'TestFaultSuite$$|TestFaultSuiteLogMode|TestHardeningFaults' .

.PHONY: emulator-start emulator-stop
emulator-start: ## Start the Pub/Sub emulator (idempotent) and print its env
	@scripts/pubsub-emulator.sh start
emulator-stop: ## Stop the Pub/Sub emulator (the whole JVM process group)
	@scripts/pubsub-emulator.sh stop

# run-*: one daemon of the catalog demo in the foreground against the
# private Postgres and the emulator (both started if needed), with its
# configs/<daemon>.yaml (the catalog's daemons' in $(DEMO)/configs).
RUN_ENV = pgenv=$$(scripts/pg.sh start) && eval "$$pgenv" && psenv=$$(scripts/pubsub-emulator.sh start) && eval "$$psenv"

.PHONY: run-migrate run-ensure run-catalog run-publisher run-projector run-es
run-migrate: build-demo ## Apply the catalog's migrations to the private Postgres
	@$(RUN_ENV) && bin/demo/relayctl migrate up -by "$$USER" -why "make run-migrate"
run-ensure: build-demo ## Create the topics and subscriptions of configs/pubsub.yaml on the emulator
	@$(RUN_ENV) && bin/demo/relayctl pubsub ensure -f configs/pubsub.yaml -by "$$USER" -why "make run-ensure"
run-catalog: build-demo ## Run the catalog service (HTTP :8000, gRPC :9000)
	@$(RUN_ENV) && bin/demo/catalog -conf $(DEMO)/configs/catalog.yaml
run-publisher: build-demo ## Run one publisher replica
	@$(RUN_ENV) && bin/demo/publisher -conf configs/publisher.yaml
run-projector: build-demo ## Run the catalog's projector (ELASTIC_URL defaults to the test server of run-es)
	@$(RUN_ENV) && ELASTIC_URL=$${ELASTIC_URL:-http://127.0.0.1:9200} bin/demo/projector -conf $(DEMO)/configs/projector.yaml
run-es: build-demo ## Run the Elasticsearch test server on 127.0.0.1:9200
	@bin/demo/es-testserver -addr 127.0.0.1:9200
