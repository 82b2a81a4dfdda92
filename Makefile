# council: `make test` sets everything up and runs the whole suite (unit, shared cases,
# integration against a real redis-server and real celery workers).

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test unit lint bench redis-server bubblewrap chromium clean

test: $(STAMP) redis-server bubblewrap chromium
	$(PY) -m pytest

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/cases

lint: $(STAMP)
	$(VENV)/bin/ruff check council workers tests bench
	$(VENV)/bin/mypy

bench: $(STAMP) redis-server
	$(PY) bench/harvest.py
	$(PY) bench/evidence.py
	$(PY) bench/overhead.py
	$(PY) bench/concurrency.py

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The integration tests start their own redis-server on a free port: they only need the binary.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else \
	    echo "redis-server is missing: install it with 'sudo apt-get install redis-server' (Debian/Ubuntu) or 'brew install redis' (macOS)"; \
	    exit 1; \
	  fi; }

# Reviewer programs run in bubblewrap's sandbox (Debian's package bubblewrap); the sandbox
# tests run the real one.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "bubblewrap is missing: install it with 'sudo apt-get install bubblewrap'"; \
	    echo "(Debian/Ubuntu); outside CI the sandbox tests are skipped without it"; \
	  fi; }

# The console's browser test drives Debian's chromium with Playwright (Playwright's own
# browser download is not used); outside CI it is skipped without the binary.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing: install it with 'sudo apt-get install chromium'"; \
	    echo "(Debian/Ubuntu); outside CI the console's browser test is skipped without it"; \
	  fi; }

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tests/artifacts
