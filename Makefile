# gpu-queues: every entry point. `make demo` and `make test` do all set-up themselves.
include toolchain/pins.env

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/.toolchain/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv lock toolchain test test-unit test-policy test-toolchain schema lint clean

$(VENV)/.stamp: requirements.txt requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt -c requirements.lock
	touch $@

venv: $(VENV)/.stamp

lock: venv
	( echo "# Full resolved Python environment (pip freeze), used as constraints by make venv. Regenerate: make lock"; \
	  $(VENV)/bin/pip freeze ) > requirements.lock

toolchain:
	bash toolchain/build.sh

schema: venv
	$(PY) -m components.schema --write

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test-unit: venv
	$(PY) -m pytest -m "unit or policy" -q

test: venv toolchain
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .toolchain .pulumi
