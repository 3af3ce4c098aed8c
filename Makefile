# Both entry points build (or reuse) the same .venv from nothing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first and pinned: the CPU build; an unpinned torch pulls a CUDA build of several GB.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[embeddings,model,charts,dev,mini,mcp]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m reflect.demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	for b in capture_recall hung_provider recall search predictor replay hooks; do \
		$(BIN)/python bench/$$b.py || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
