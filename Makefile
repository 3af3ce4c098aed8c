# `make test` builds .venv from nothing (torch's CPU build, every extra); `make demo` needs
# only the core (numpy): it reuses .venv when that is built, else builds .venv-demo, a
# venv with no extra, in seconds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pyproject.toml declares ranges; the exact versions tested are in the constraints file.
CONSTRAINTS := .ci/constraints.txt
PIP := python -m pip install --quiet --disable-pip-version-check
DEMO := .venv-demo
# A second venv at the declared lower bounds (.ci/oldest.txt), without the heavy extras.
OLDEST := .venv-oldest
# The pages whose samples of output cog writes (docs/samples.py).
DOCS := README.md docs/*.md

.PHONY: install demo test bench lint clean test-oldest figures docs mcp-listing

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	# torch first and pinned: the CPU build; an unpinned torch pulls a CUDA build of several GB.
	$(BIN)/$(PIP) -c $(CONSTRAINTS) torch==2.13.0
	$(BIN)/$(PIP) -c $(CONSTRAINTS) -e '.[embeddings,model,charts,dev,mini,mcp,postgres]'
	touch $(STAMP)

install: $(STAMP)

$(DEMO)/.installed: pyproject.toml $(CONSTRAINTS)
	rm -rf $(DEMO)
	$(PYTHON) -m venv $(DEMO)
	$(DEMO)/bin/$(PIP) -c $(CONSTRAINTS) -e .
	touch $@

demo:
	@if [ -f $(STAMP) ]; then py=$(BIN)/python; \
	else $(MAKE) --no-print-directory $(DEMO)/.installed && py=$(DEMO)/bin/python; fi; \
	$$py -m reflect.cli.demo

# The suite under coverage (child processes too: [tool.coverage] in pyproject.toml), the
# store's tests on SQLite and on a throwaway PostgreSQL server (.ci/postgres, stopped
# however the run ends). Without a server the PostgreSQL half is skipped, said in one line;
# under CI that is an error. The report closes the run, printed whether or not a test
# failed; the target fails when a test failed or coverage is below the floor.
test: $(STAMP)
	rm -f .coverage .coverage.*
	@if pg=$$(.ci/postgres start); then \
		trap '.ci/postgres stop "$$pg"' EXIT; \
		export REFLECT_TEST_POSTGRES=$$(cat "$$pg/url"); \
	else case "$${CI:-}" in \
		""|0|false|no) echo "PostgreSQL tests skipped: $$pg";; \
		*) echo "PostgreSQL could not be started, and CI needs it: $$pg" >&2; exit 1;; \
	esac; fi; \
	$(BIN)/python -m coverage run -m pytest; tested=$$?; \
	$(BIN)/python -m coverage combine --quiet && \
	$(BIN)/python -m coverage report; covered=$$?; \
	[ $$tested -eq 0 ] && exit $$covered; exit $$tested

bench: $(STAMP)
	for b in capture_recall hung_provider recall search predictor replay hooks bounds; do \
		$(BIN)/python bench/$$b.py || exit 1; done

# Reruns everything the README quotes (replays, the predictor's grid, speed, faults, the
# demo) and prints the README's tables from this run; about an hour here, so not in CI.
figures: $(STAMP)
	$(BIN)/python bench/figures.py

# ruff, then mypy (strict for reflect.index, records and the store; .ci/typecheck), then
# whether every sample of output in the README and docs/ is what its command prints now.
lint: $(STAMP)
	$(BIN)/ruff check .
	MYPY=$(BIN)/mypy .ci/typecheck
	$(BIN)/cog --check --verbosity=1 -I docs $(DOCS)

# Rewrites those samples by running their commands (docs/samples.py).
docs: $(STAMP)
	$(BIN)/cog -r -I docs $(DOCS)

# What `reflect mcp` lists before the SDK is imported, from the SDK server's own lists
# (tests/test_integration_mcp.py fails while the two differ).
mcp-listing: $(STAMP)
	$(BIN)/python -c "from reflect.integrations.mcp import write_listing; write_listing()"

$(OLDEST)/.installed: pyproject.toml .ci/oldest.txt
	rm -rf $(OLDEST)
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/$(PIP) -c .ci/oldest.txt -e '.[model,dev]'
	touch $@

# The core and model tests at the oldest supported numpy, litellm, pytest and respx. No
# embeddings, charts, mini, mcp or postgres extra here: their tests skip, or are left out
# below (the PostgreSQL half runs in `make test`), with the install test, which is about
# the package and not about the lower bounds.
test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -c "from importlib.metadata import version as v; \
		print('oldest:', ', '.join(f'{n} {v(n)}' for n in ('numpy', 'litellm', 'pytest', 'respx')))"
	$(OLDEST)/bin/python -m pytest -q -p no:cacheprovider -m 'not postgresql' \
		--ignore=tests/test_integration_mcp.py --ignore=tests/test_integration_minisweagent.py \
		--ignore=tests/test_install.py

clean:
	rm -rf $(VENV) $(DEMO) $(OLDEST) build *.egg-info
