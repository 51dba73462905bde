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

.PHONY: demo test test-fast lint bench browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first and pinned: a bare 'torch' requirement would pull a multi-GB CUDA build.
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[demo]'
	touch $@

# llama-cpp-python compiles llama.cpp (minutes on 2 cores); pip caches the built wheel.
$(VENV)/.test-installed: pyproject.toml $(VENV)/.demo-installed
	$(PIP) install --quiet -e '.[all,dev]'
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/ragcov demo

# The browser tests need Debian's chromium and chromedriver; install them when we can.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "warning: could not install chromium; browser tests will be skipped"; \
	  else echo "note: chromium/chromedriver not found; browser tests will be skipped"; fi; \
	fi

# LLM tests run on their own, after the rest, so they never share the CPU with heavy steps.
test: $(VENV)/.test-installed browser
	$(BIN)/python -m pytest -q -m "not llm"
	$(BIN)/python -m pytest -q -m "llm" || [ $$? -eq 5 ]

test-fast: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

lint: $(VENV)/.test-installed
	$(BIN)/ruff check src tests benchmarks

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/run

clean:
	rm -rf $(VENV) ragcov-demo ragcov-html .ragcov build *.egg-info
