# Two commands set everything up on a fresh machine:
#   make demo   create .venv, install, run the demo on the bundled FinQA sample
#   make test   the same install plus every extra and test tool, then the whole suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# Models are loaded from installed packages; never reach for a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast lint bench browser results clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first and pinned: a bare 'torch' requirement would pull a multi-GB CUDA build.
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[demo]'
	touch $@

# llama-cpp-python compiles llama.cpp (minutes on 2 cores). It is built portably: a native
# build (-march=native) on a CPU that advertises AMX in a VM that does not enable it emits
# AMX instructions and dies with SIGILL. For a faster build on a machine you trust, run
#   make test LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON"
# The wheel is kept in a wheelhouse keyed by version and flags, so pip's own cache (keyed by
# source, not flags) can never hand back a build made with other flags.
LLAMA_CPP_VERSION ?= 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
WHEELHOUSE := $(HOME)/.cache/ragcov/wheels/llama-$(LLAMA_CPP_VERSION)-$(shell printf '%s' '$(LLAMA_CMAKE_ARGS)' | cksum | cut -d' ' -f1)

$(VENV)/.test-installed: pyproject.toml Makefile $(VENV)/.demo-installed
	@if ! ls $(WHEELHOUSE)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
	  echo "building llama-cpp-python $(LLAMA_CPP_VERSION) ($(LLAMA_CMAKE_ARGS)); a few minutes"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --quiet --no-deps --no-cache-dir \
	    -w $(WHEELHOUSE) 'llama-cpp-python==$(LLAMA_CPP_VERSION)'; fi
	$(PIP) install --quiet --find-links $(WHEELHOUSE) 'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)'
	$(PIP) install --quiet -e '.[all,dev]'
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/ragcov demo

# Real consumers the tests check against, from Debian: chromium and chromedriver for the
# HTML report, lcov (lcov --summary, genhtml) for the lcov tracefile. Installed when we can.
SYSTEM_TOOLS := chromium chromedriver lcov genhtml
browser:
	@missing=""; for t in $(SYSTEM_TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver lcov >/dev/null) \
	      || echo "warning: could not install$$missing; the tests that need them will be skipped"; \
	  else echo "note:$$missing not found; the tests that need them will be skipped"; fi; \
	fi

# LLM tests run on their own, after the rest, so they never share the CPU with heavy steps.
# The rest run on a worker process per core this process may use (pytest-xdist; at most
# 4, each holds a model), a test file per worker at a time, so a module's fixtures (a
# store, an embedded slice) are built once: much of the suite waits on subprocesses and
# servers, and two workers halve the wall time on two cores (docs/performance.md, "The
# test suite"). `make test TEST_WORKERS=0` runs it in one process, as before.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -gt 4 ] && n=4; [ "$$n" -lt 2 ] && n=0; echo $$n)
test: $(VENV)/.test-installed browser
	$(BIN)/python -m pytest -q -m "not llm" -n $(TEST_WORKERS) --dist loadfile --durations=25
	$(BIN)/python -m pytest -q -m "llm" --durations=5 || [ $$? -eq 5 ]

test-fast: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

lint: $(VENV)/.test-installed
	$(BIN)/ruff check src tests benchmarks research

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/run

# Regenerate every table in results/ and the JSON and plots beside them: the commands
# docs/results.md gives beside each figure. The research harness (research/) is not
# installed; it runs from this checkout. It reads the datasets' original files under
# $(DATA) and needs every extra (the Gemma generation run uses llama.cpp). The first dense
# run on a dataset embeds it (minutes on 2 cores, then cached); the Gemma run is the longest.
DATA ?= ../shared/datasets
RESEARCH := $(BIN)/python -m research
GENERATION := generation --dataset pubmedqa --data $(DATA)/pubmedqa --docs 150 \
	--arms coverage,coverage-isolated,random,overlap --thresholds 25,50,60,70,75,80

results: $(VENV)/.test-installed
	$(RESEARCH) rq1 --dataset finqa     --data $(DATA)/finqa     --out results/rq1-finqa-dense-k5
	$(RESEARCH) rq1 --dataset convfinqa --data $(DATA)/convfinqa --out results/rq1-convfinqa-dense-k5
	$(RESEARCH) rq1 --dataset finqa     --data $(DATA)/finqa     --retriever bm25 --out results/rq1-finqa-bm25-k5
	$(RESEARCH) rq1 --dataset convfinqa --data $(DATA)/convfinqa --retriever bm25 --out results/rq1-convfinqa-bm25-k5
	$(RESEARCH) rq1 --dataset finqa     --data $(DATA)/finqa     --retriever bm25 -k 10 --out results/rq1-finqa-bm25-k10
	$(RESEARCH) rq1 --dataset convfinqa --data $(DATA)/convfinqa --retriever bm25 -k 10 --out results/rq1-convfinqa-bm25-k10
	$(RESEARCH) rq2 --dataset finqa     --data $(DATA)/finqa     --out results/rq2-finqa-dense-k5
	$(RESEARCH) rq2 --dataset convfinqa --data $(DATA)/convfinqa --out results/rq2-convfinqa-dense-k5
	$(RESEARCH) rq2 --dataset finqa     --data $(DATA)/finqa     --retriever bm25 --out results/rq2-finqa-bm25-k5
	$(RESEARCH) rq2 --dataset convfinqa --data $(DATA)/convfinqa --retriever bm25 --out results/rq2-convfinqa-bm25-k5
	$(RESEARCH) rq2 --dataset finqa     --data $(DATA)/finqa     --retriever bm25 -k 10 --out results/rq2-finqa-bm25-k10
	$(RESEARCH) rq2 --dataset convfinqa --data $(DATA)/convfinqa --retriever bm25 -k 10 --out results/rq2-convfinqa-bm25-k10
	$(RESEARCH) rq3 --dataset finqa     --data $(DATA)/finqa     --out results/rq3-finqa-dense-k5
	$(RESEARCH) rq3 --dataset finqa     --data $(DATA)/finqa     -k 10 --out results/rq3-finqa-dense-k10
	$(RESEARCH) rq3 --dataset finqa     --data $(DATA)/finqa     --retriever bm25 --out results/rq3-finqa-bm25-k5
	$(RESEARCH) rq3 --dataset convfinqa --data $(DATA)/convfinqa --out results/rq3-convfinqa-dense-k5
	$(RESEARCH) rq3 --dataset convfinqa --data $(DATA)/convfinqa -k 10 --out results/rq3-convfinqa-dense-k10
	$(RESEARCH) rq3 --dataset convfinqa --data $(DATA)/convfinqa --retriever bm25 --out results/rq3-convfinqa-bm25-k5
	$(RESEARCH) rq3-verdict results/rq3-finqa-dense-k5 results/rq3-finqa-dense-k10 \
	  results/rq3-finqa-bm25-k5 results/rq3-convfinqa-dense-k5 results/rq3-convfinqa-dense-k10 \
	  results/rq3-convfinqa-bm25-k5
	$(RESEARCH) rq3 --dataset pubmedqa  --data $(DATA)/pubmedqa  --retriever bm25 --out results/rq3-pubmedqa-bm25-k5
	$(RESEARCH) rq3 --dataset pubmedqa  --data $(DATA)/pubmedqa  --out results/rq3-pubmedqa-dense-k5
	$(RESEARCH) rq3-verdict results/rq3-pubmedqa-bm25-k5 results/rq3-pubmedqa-dense-k5 \
	  --out results/rq3-verdict-pubmedqa.md
	$(RESEARCH) $(GENERATION) --generator extractive --budget 150 --repeats 2 \
	  --out results/generation-extractive-pubmedqa150
	$(RESEARCH) $(GENERATION) --generator llama-cpp --budget 100 --repeats 3 \
	  --out results/generation-gemma-pubmedqa150
	$(RESEARCH) topics --dataset finqa    --data $(DATA)/finqa    --retriever bm25 --out results/topics-finqa-bm25-k5
	$(RESEARCH) topics --dataset finqa    --data $(DATA)/finqa    --out results/topics-finqa-dense-k5
	$(RESEARCH) topics --dataset pubmedqa --data $(DATA)/pubmedqa --retriever bm25 --out results/topics-pubmedqa-bm25-k5
	$(RESEARCH) topics --dataset pubmedqa --data $(DATA)/pubmedqa --out results/topics-pubmedqa-dense-k5

clean:
	rm -rf $(VENV) ragcov-demo ragcov-html .ragcov build *.egg-info
