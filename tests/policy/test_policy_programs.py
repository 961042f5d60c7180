"""The real-CLI test programs, run under Pulumi mocks and fed through the pack.

This stands in for `pulumi preview --policy-pack policies` until the CLI is built: it checks
that each program registers the objects it claims and that the pack gives the expected verdict.
"""

import json
import os
import subprocess
import sys

import pytest
from policy_harness import REPO, Analyzer, mandatory

from policies import rules

pytestmark = pytest.mark.policy

PROGRAMS = REPO / "tests" / "fixtures" / "policy-programs"


# Runs in a child process: Pulumi mocks are process-wide, and other test modules set their own.
_RUN_UNDER_MOCKS = """
import json, runpy, sys
import pulumi

class Recorder(pulumi.runtime.Mocks):
    resources = []
    def new_resource(self, args):
        if not args.typ.startswith("pulumi:providers:"):
            self.resources.append([args.typ, args.name, dict(args.inputs)])
        return args.name + "-id", dict(args.inputs)
    def call(self, args):
        return {}

recorder = Recorder()
pulumi.runtime.set_mocks(recorder, project="policy-program", stack="test", preview=True)

@pulumi.runtime.test
def run():
    runpy.run_path(sys.argv[1], run_name="__main__")

run()
print(json.dumps(recorder.resources))
"""


def registered(program: str, tmp_path) -> list[tuple[str, str, dict]]:
    """Run a program under mocks (as a preview) and return what it registered."""
    env = {**os.environ, "POLICY_PROGRAM_RENDER_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN_UNDER_MOCKS, str(PROGRAMS / program / "__main__.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROGRAMS / program,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


def test_passing_program_passes(tmp_path):
    resources = registered("passing", tmp_path)
    assert {n for _, n, _ in resources} == {"gpu-flavor", "gpu-cluster-queue", "gpu-queue"}
    found = Analyzer().preview(resources)
    assert found == [], [d.message for d in found]


def test_gpu_only_program_fails_with_rule_1_only(tmp_path):
    found = mandatory(Analyzer().preview(registered("gpu-only-clusterqueue", tmp_path)))
    assert [d.policyName for d in found] == [rules.COVERS_CPU_MEMORY]
    assert (
        '[clusterqueue-covers-cpu-memory] ClusterQueue "gpu-only-cluster-queue"' in found[0].message
    )
    assert "do not include cpu, memory" in found[0].message


def test_missing_cluster_queue_program_fails_with_rule_4_only(tmp_path):
    found = mandatory(Analyzer().preview(registered("missing-clusterqueue", tmp_path)))
    assert [d.policyName for d in found] == [rules.CLUSTERQUEUE_EXISTS]
    assert '[localqueue-clusterqueue-exists] LocalQueue "default/orphan-queue"' in found[0].message
    assert '"no-such-cluster-queue"' in found[0].message
