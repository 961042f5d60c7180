"""The real-CLI test programs, run under Pulumi mocks and fed through the pack.

This stands in for `pulumi preview --policy-pack policies` until the CLI is built: it checks
that each program registers the objects it claims and that the pack gives the expected verdict.
"""

import json
import subprocess
import sys

import pytest
from policy_harness import REPO, Analyzer, mandatory

from policies import rules

pytestmark = pytest.mark.policy

PROGRAMS = REPO / "tests" / "fixtures" / "policy-programs"


# Runs in a child process: Pulumi mocks are process-wide, and other test modules set their own.
# One child runs every program, each under mocks of its own (a child per program cost ~0.3 s).
_RUN_UNDER_MOCKS = """
import json, os, runpy, sys
import pulumi

class Recorder(pulumi.runtime.Mocks):
    def __init__(self):
        self.resources = []
    def new_resource(self, args):
        if not args.typ.startswith("pulumi:providers:"):
            self.resources.append([args.typ, args.name, dict(args.inputs)])
        return args.name + "-id", dict(args.inputs)
    def call(self, args):
        return {}

found = {}
for program, render_dir in json.loads(sys.argv[1]).items():
    os.environ["POLICY_PROGRAM_RENDER_DIR"] = render_dir
    os.chdir(program)
    recorder = Recorder()
    pulumi.runtime.set_mocks(recorder, project="policy-program", stack="test", preview=True)

    @pulumi.runtime.test
    def run():
        runpy.run_path(os.path.join(program, "__main__.py"), run_name="__main__")

    run()
    found[os.path.basename(program)] = recorder.resources
print(json.dumps(found))
"""

Registered = dict[str, list[tuple[str, str, dict]]]


@pytest.fixture(scope="module")
def registered(tmp_path_factory) -> Registered:
    """What each program registers when run under mocks (as a preview); each renders into a
    directory of its own."""
    programs = {
        str(p): str(tmp_path_factory.mktemp(p.name))
        for p in sorted(PROGRAMS.iterdir())
        if p.is_dir()
    }
    done = subprocess.run(
        [sys.executable, "-c", _RUN_UNDER_MOCKS, json.dumps(programs)],
        capture_output=True,
        text=True,
        cwd=PROGRAMS,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: [tuple(r) for r in resources] for name, resources in found.items()}


def test_passing_program_passes(registered):
    resources = registered["passing"]
    assert {n for _, n, _ in resources} == {"gpu-flavor", "gpu-cluster-queue", "gpu-queue"}
    found = Analyzer().preview(resources)
    assert found == [], [d.message for d in found]


def test_gpu_only_program_fails_with_rule_1_only(registered):
    found = mandatory(Analyzer().preview(registered["gpu-only-clusterqueue"]))
    assert [d.policyName for d in found] == [rules.COVERS_CPU_MEMORY]
    assert (
        '[clusterqueue-covers-cpu-memory] ClusterQueue "gpu-only-cluster-queue"' in found[0].message
    )
    assert "do not include cpu, memory" in found[0].message


def test_missing_cluster_queue_program_fails_with_rule_4_only(registered):
    found = mandatory(Analyzer().preview(registered["missing-clusterqueue"]))
    assert [d.policyName for d in found] == [rules.CLUSTERQUEUE_EXISTS]
    assert '[localqueue-clusterqueue-exists] LocalQueue "default/orphan-queue"' in found[0].message
    assert '"no-such-cluster-queue"' in found[0].message
