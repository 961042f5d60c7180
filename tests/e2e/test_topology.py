"""Topology-aware scheduling on the sandbox, with the real Kueue and kube-scheduler (issue 26,
part 1): the local-tas stack (tests/e2e/stacks) deployed next to `local`, its flavor's nodes
added to the sandbox as the simulated cloud shapes them (sandbox.shape: 8 kwok nodes of 4 GPUs,
2 blocks of 2 racks, a rack 8 GPUs).

- A job asking for one rack (kueue.x-k8s.io/podset-required-topology) of 4 pods x 2 GPUs is
  admitted and all its pods run on the two nodes of one rack: Kueue ungates them with that
  rack's nodeSelector and kube-scheduler binds them there.
- A job of 3 pods x 4 GPUs fits the team's quota (32) but no rack (8): it waits, not admitted,
  with Kueue's own message, instead of being admitted to pods that cannot run together
  (kueue#4329).
- The what-if's sandbox engine replays a mix on this stack (whatif/tas-mix: a rack filled, a
  job no rack holds, one that prefers a rack and spreads over a block) with those outcomes, and
  the fast engine, which plays Kueue's own TAS, with the same ones.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import StackConfig
from gpu_queues.whatif import fast
from gpu_queues.whatif.nodes import flavor_nodes
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECTL
from sandbox.replay.engine import replay_mix
from sandbox.walkthrough import KubeSession, condition, is_true
from tests.builders import Job
from tests.e2e.deployments import Deployments

pytestmark = pytest.mark.e2e

STACK = "local-tas"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
MIX = Path(__file__).parent / "whatif" / "tas-mix"
NAMESPACE = "tas-team"
RACK = "cloud.example.com/topology-rack"


def kubectl(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def config() -> StackConfig:
    return fake_cluster.load_stack(SOURCE)


@pytest.fixture(scope="module")
def tas(cluster: KubeSession, config: StackConfig, stacks: Deployments) -> Iterator[KubeSession]:
    """The stack's nodes in the sandbox and the stack deployed; afterwards no job of it and
    no node of its (the stack stays deployed, as every stack of the session does)."""
    nodes = flavor_nodes(config)
    kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(n) for n in nodes))
    cluster.wait(
        "the TAS nodes Ready",
        lambda: all(
            any(
                c.type == "Ready" and c.status == "True"
                for c in cluster.core.read_node(n["metadata"]["name"]).status.conditions or []
            )
            for n in nodes
        ),
        timeout=120,
    )
    up = stacks.up(STACK, source=SOURCE)
    assert up.returncode == 0, up.stdout + up.stderr
    yield cluster
    wipe(cluster)
    kubectl("delete", "node", "--ignore-not-found", *(n["metadata"]["name"] for n in nodes))


def wipe(k: KubeSession) -> None:
    for j in k.batch.list_namespaced_job(NAMESPACE).items:
        k.delete_job(j.metadata.name, NAMESPACE)
    k.wait("no workloads left", lambda: not k.workloads(NAMESPACE), namespace=NAMESPACE, timeout=90)


def rack_job(name: str, pods: int, gpus: int) -> dict[str, Any]:
    """`pods` pods of `gpus` GPUs that must share one rack."""
    resources = {"gpu": str(gpus), "cpu": "1", "memory": "1Gi"}
    return (
        Job(name, NAMESPACE).queue("tas-queue").parallelism(pods).completions(pods).suspend()
        .required_topology(RACK).container("train").requests(**resources).limits(**resources)
        .obj()
    )  # fmt: skip


def test_the_topology_and_the_flavor_are_deployed_as_declared(tas: KubeSession) -> None:
    topo = tas.custom.get_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "topologies", "gpu-topology"
    )
    assert topo["spec"]["levels"] == [
        {"nodeLabel": "cloud.example.com/topology-block"},
        {"nodeLabel": RACK},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    rf = tas.custom.get_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "resourceflavors", "tas-gpu"
    )
    assert rf["spec"]["topologyName"] == "gpu-topology"
    racks = {
        n.metadata.name: n.metadata.labels.get(RACK)
        for n in tas.core.list_node(label_selector="gpu-queues.dev/pool=tas").items
    }
    assert sorted(racks.values()) == sorted(f"rack-{i}" for i in range(4) for _ in range(2))


def test_a_job_asking_for_a_rack_runs_all_its_pods_on_one_rack(tas: KubeSession) -> None:
    tas.submit(rack_job("one-rack", pods=4, gpus=2))
    tas.wait(
        "job one-rack admitted",
        lambda: is_true(tas.workload_for("one-rack", NAMESPACE), "Admitted"),
        namespace=NAMESPACE,
    )
    pods = tas.wait(
        "the 4 pods of one-rack bound to nodes",
        lambda: (
            ps
            if len(ps := tas.job_pods("one-rack", NAMESPACE)) == 4
            and all(p.spec.node_name for p in ps)
            else None
        ),
        namespace=NAMESPACE,
    )
    nodes = {p.spec.node_name for p in pods}
    racks = {tas.core.read_node(n).metadata.labels[RACK] for n in nodes}
    assert len(racks) == 1, f"pods on {nodes}, racks {racks}"
    assert len(nodes) == 2  # a rack's 2 nodes, 4 GPUs each: 4 pods of 2 GPUs fill it
    tas.delete_job("one-rack", NAMESPACE)
    tas.wait(
        "one-rack gone",
        lambda: tas.workload_for("one-rack", NAMESPACE) is None,
        namespace=NAMESPACE,
    )


def test_a_job_that_fits_in_no_rack_waits_with_kueues_message(tas: KubeSession) -> None:
    tas.submit(rack_job("too-wide", pods=3, gpus=4))  # 12 GPUs: within quota, over a rack's 8
    cond = tas.wait(
        "Kueue to try to place too-wide",
        lambda: (
            c
            if (c := condition(tas.workload_for("too-wide", NAMESPACE), "QuotaReserved"))
            and "topology" in c.get("message", "")
            else None
        ),
        namespace=NAMESPACE,
    )
    assert cond["status"] == "False"
    assert cond["reason"] == "Pending"
    assert cond["message"] == (
        'couldn\'t assign flavors to pod set main: topology "gpu-topology" allows to fit only '
        "2 out of 3 pod(s)"
    )
    assert tas.get_job("too-wide", NAMESPACE).spec.suspend is True


def test_both_engines_replay_the_tas_mix_with_one_outcome(
    tas: KubeSession, config: StackConfig
) -> None:
    wipe(tas)
    for run in (
        replay_mix(config, MIX, stack=STACK, label=STACK),
        fast.replay_mix(config, MIX, stack=STACK, label=STACK),
    ):
        got = {r.name: (r.outcome, r.flavor, r.wait_seconds) for r in run.workloads}
        assert got == {
            "r-rack": ("finished", "tas-gpu", 0),
            "r-too-wide": ("pending", None, None),
            "r-block": ("admitted", "tas-gpu", 0),
        }, run.workloads
        too_wide = next(r for r in run.workloads if r.name == "r-too-wide")
        assert too_wide.message is not None
        assert 'topology "gpu-topology" allows to fit only 2 out of 3 pod(s)' in too_wide.message
