# Critic — see README.md. `make help` lists the targets.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)

GO        ?= go
BIN       := bin/critic
FUZZTIME  ?= 5s
TEST_TIMEOUT ?= 25m

.PHONY: help run build test test-race lint generate verify bench bench-ingest bench-otlp demo deps

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## install missing system packages (PostgreSQL, protoc, Node.js)
	@scripts/ensure-deps.sh

build: ## build bin/critic
	$(GO) build -o $(BIN) ./cmd/critic

run: deps build ## start the whole platform locally; prints the URL and an API key
	./$(BIN) run

demo: run ## alias of run

test: deps ## run every test (unit, integration, e2e) and bounded fuzzing
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	@scripts/fuzz.sh $(FUZZTIME)

# -race turns on checkptr, which trips on GoMLX's own unsafe matrix packing
# (gomlx/compute nosimd_small_transposed.go), not on a data race; it is
# switched off so the race detector itself can run over everything.
test-race: deps ## every test under the race detector
	$(GO) test -race -gcflags=all=-d=checkptr=0 -count=1 -timeout 40m ./...

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

generate: ## regenerate code (protobuf/Connect)
	scripts/gen-proto.sh

verify: ## fail if regenerating code changes a committed file
	scripts/gen-proto.sh --verify

bench: bench-ingest bench-otlp bench-query bench-train bench-score ## all benchmarks

bench-ingest: deps ## import 10,000 traces × 20 steps end to end vs COPY; latency p50/p99
	$(GO) test -count=1 -run '^$$' -bench BenchmarkIngest -benchtime 1x -timeout 30m ./e2e/

bench-query: deps ## group-by over 1,000,000 steps via POST /query vs direct DuckDB; p50/p99, ratio
	$(GO) test -count=1 -run '^$$' -bench BenchmarkQuery -benchtime 1x -timeout 30m ./e2e/

bench-otlp: deps ## OTLP/HTTP spans/s end to end (512-span protobuf exports, 1 and 4 senders) vs in-process decode
	$(GO) test -count=1 -run '^$$' -bench BenchmarkOTLP -benchtime 1x -timeout 30m ./e2e/

bench-train: ## reward-model train step (tiny config) GoMLX vs PyTorch, same CPUs/threads, ratio; Qwen3-0.6B-shaped scoring seq/s + peak RSS
	gpuworker/scripts/bench_train.sh

bench-score: deps ## 10,000 traces scored through the whole pipeline vs the engine's raw scoring
	$(GO) test -count=1 -run '^$$' -bench BenchmarkScore -benchtime 1x -timeout 30m ./e2e/

chaos: deps ## kill -9 the API, a consumer and the worker under load; every acknowledged write survives (CRITIC_CHAOS_SEED=N repeats)
	CRITIC_CHAOS=1 $(GO) test -count=1 -run '^TestChaos$$' -v -timeout 10m ./e2e/
