# council: `make test` sets everything up and runs the whole suite (unit, shared cases,
# integration against a real redis-server and real celery workers).

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test unit lint bench redis-server bubblewrap chromium jq clean

# What `make test` runs, said before it starts (the README states the same).
SHARED_CASES = $${COUNCIL_SHARED_CASES:-../shared/cases}

test: $(STAMP) redis-server bubblewrap chromium jq
	@echo "make test: the whole suite, about 20 minutes on a 2-core machine:"
	@echo "  tests/unit         unit tests (fakeredis, replay reviewers, the real bubblewrap sandbox)"
	@echo "  tests/cases        the shared cases, read from $(SHARED_CASES)"
	@echo "  tests/integration  a real redis-server and real celery workers, the CI recipes"
	@echo "  tests/faults       faults injected: a worker killed mid-review, Redis gone, programs that hang"
	$(PY) -m pytest

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/cases

lint: $(STAMP)
	$(VENV)/bin/ruff check council reviewers workers tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Every bench, one after another (bench/all.py), each printing its baseline measured in
# the same run and the ratio; the end prints every headline as a table and each bench's
# time against the 20-minute budget. BENCH_FLAGS=--quick: a smoke run of each;
# BENCH_FLAGS=--readme writes the table into bench/README.md.
BENCH_FLAGS ?=

bench: $(STAMP) redis-server
	$(PY) bench/all.py $(BENCH_FLAGS)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# What the tests need from Debian's packages, installed when missing and we are root
# (apt-get), else said with how to get it. $(1): the command, $(2): the package,
# $(3): what happens without it.
define debian_package
	@command -v $(1) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $(2) from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	  else \
	    echo "$(2) is missing: install it with 'sudo apt-get install $(2)' (Debian/Ubuntu); $(3)"; \
	  fi; }
endef

# The integration tests start their own redis-server on a free port: they only need the binary.
redis-server:
	$(call debian_package,redis-server,redis-server,the integration tests fail without it)

# Reviewer programs run in bubblewrap's sandbox; the sandbox tests run the real one.
bubblewrap:
	$(call debian_package,bwrap,bubblewrap,outside CI the sandbox tests are skipped without it)

# The console's browser test drives Debian's chromium with Playwright (Playwright's own
# browser download is not used); outside CI it is skipped without the binary.
chromium:
	$(call debian_package,chromium,chromium,outside CI the browser test is skipped without it)

# The worker log's jq recipes (docs/operating.md) are tested with the real jq.
jq:
	$(call debian_package,jq,jq,outside CI the recipes' test is skipped without it)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tests/artifacts
