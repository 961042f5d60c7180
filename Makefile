# gpu-queues: every entry point. `make demo` and `make test` do all set-up themselves.
include toolchain/pins.env

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SANDBOX := sandbox/sandbox.sh
export PATH := $(CURDIR)/.toolchain/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv lock toolchain schema lint test test-unit test-policy test-toolchain test-e2e \
        sandbox-up sandbox-down sandbox-shell sandbox-status demo bench bench-scale promote \
        quota-diff clean

$(VENV)/.stamp: requirements.txt requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt -c requirements.lock
	touch $@

venv: $(VENV)/.stamp

lock: venv
	( echo "# Full resolved Python environment (pip freeze), used as constraints by make venv. Regenerate: make lock"; \
	  $(VENV)/bin/pip freeze ) > requirements.lock

# Builds (or links from the pin-keyed cache) every pinned binary into .toolchain/bin.
toolchain:
	bash toolchain/build.sh

schema: venv
	$(PY) -m components.schema --write

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# --- the sandbox: a simulated GPU cluster in a network namespace of its own ---------------
sandbox-up: venv toolchain
	bash $(SANDBOX) up

sandbox-down:
	bash $(SANDBOX) down

sandbox-status:
	bash $(SANDBOX) status

sandbox-shell:
	bash $(SANDBOX) shell

# The guide on the sandbox: deploy the local stack, then replay the walkthrough.
demo: sandbox-up
	bash $(SANDBOX) exec $(PY) -m sandbox.stack up --yes --skip-preview
	bash $(SANDBOX) exec $(PY) -m sandbox.walkthrough
	@echo
	@echo "The sandbox is still running. Look around:  make sandbox-shell   (kubectl, pulumi inside)"
	@echo "Stop it:                                    make sandbox-down"

# Fresh-install rounds with timings (sandbox up, pulumi up, walkthrough, down).
ROUNDS ?= 3
bench: venv toolchain
	$(PY) -m sandbox.bench $(ROUNDS)

# Scale (issue 14, docs/scale.md): generated stacks of N teams against kubectl and a trivial
# program on a fresh sandbox, in one run; prints the table, then stops the sandbox.
TEAMS ?= 10 50 200
bench-scale: venv toolchain
	bash $(SANDBOX) up
	bash $(SANDBOX) exec $(PY) -m sandbox.bench_scale $(TEAMS); rc=$$?; bash $(SANDBOX) down; exit $$rc

# --- promotion and PR previews (docs/promotion.md) ---------------------------------------
# make promote FROM=dev TO=staging [ARGS=--dry-run]
promote: venv
	$(PY) -m gpuq.promote $(FROM) $(TO) $(ARGS)

# make quota-diff OLD=prod@origin/main NEW=prod
quota-diff: venv
	$(PY) -m gpuq.quota_diff $(OLD) $(NEW) $(ARGS)

# --- tests ------------------------------------------------------------------------------
test-unit: venv
	$(PY) -m pytest -m "unit or policy" -q

test-policy: venv
	$(PY) -m pytest -m policy -q

test-toolchain: venv toolchain
	$(PY) -m pytest -m toolchain -q

# e2e runs inside the sandbox's namespace: only from there is the cluster reachable.
test-e2e: sandbox-up
	bash $(SANDBOX) exec $(PY) -m pytest -m e2e -q

# Everything CI runs (.ci/run calls exactly this).
test: venv toolchain lint
	$(PY) -m pytest -m "unit or policy or toolchain" -q
	bash $(SANDBOX) up
	bash $(SANDBOX) exec $(PY) -m pytest -m e2e -q; rc=$$?; \
	  if [ $$rc -ne 0 ]; then bash $(SANDBOX) logs; fi; bash $(SANDBOX) down; exit $$rc
	$(PY) -m pytest -m sandbox -q

clean: sandbox-down
	rm -rf $(VENV) .toolchain .pulumi .sandbox
