"""Teams sharing GPUs through a cohort, on the real Kueue: borrowing up to the limit,
reclaim by preemption, namespace isolation, RBAC, and quota changes through `pulumi up`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.paths import KUBECTL
from sandbox.walkthrough import KUEUE, KubeSession, condition, is_true, job
from tests.builders import LocalQueue
from tests.e2e.deployments import Deployments
from tests.e2e.settled import probe, quota_held, remove_probe

pytestmark = pytest.mark.e2e

STACK = "local-teams"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
ALPHA_GPUS = (
    'gpu-queues:teams[0].resourceGroups[0].flavors[0].resources["nvidia.com/gpu"].nominalQuota'
)


def up(stacks: Deployments, overrides: dict[str, str] | None = None) -> None:
    done = stacks.up(STACK, source=SOURCE, overrides=overrides)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def teams(cluster: KubeSession, stacks: Deployments) -> Iterator[KubeSession]:
    """The stack as committed; afterwards no outsiders and no job of the teams (the stack
    stays deployed, as every stack of the session does)."""
    up(stacks)
    yield cluster
    for j in cluster.batch.list_namespaced_job("outsiders").items:
        cluster.delete_job(j.metadata.name, "outsiders")
    subprocess.run(
        [str(KUBECTL), "delete", "namespace", "outsiders", "--ignore-not-found", "--wait=false"],
        check=False,
        capture_output=True,
    )
    clear_team_jobs(cluster)


@pytest.fixture
def fresh(teams: KubeSession) -> KubeSession:
    """Each test starts with the teams' queues empty and no outsiders' jobs: none depends on
    what an earlier one left."""
    clear_team_jobs(teams)
    if teams.core.list_namespace(field_selector="metadata.name=outsiders").items:
        for j in teams.batch.list_namespaced_job("outsiders").items:
            teams.delete_job(j.metadata.name, "outsiders")
        teams.wait(
            "no workloads in outsiders",
            lambda: not teams.workloads("outsiders"),
            namespace="outsiders",
        )
    return teams


def clear_team_jobs(k: KubeSession) -> None:
    """No job and no workload left in the teams' namespaces (their queues hold nothing)."""
    for ns in ("team-alpha", "team-beta"):
        for j in k.batch.list_namespaced_job(ns).items:
            k.delete_job(j.metadata.name, ns)
    for ns in ("team-alpha", "team-beta"):
        k.wait(f"no workloads in {ns}", lambda n=ns: not k.workloads(n), namespace=ns)


def submit_alpha(k: KubeSession, count: int, prefix: str) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for n in names:
        k.submit(job(n, namespace="team-alpha", queue="alpha-queue", gpus=1, claim=None))
    k.wait(
        "alpha's workloads evaluated",
        lambda: all(condition(k.workload_for(n, "team-alpha"), "QuotaReserved") for n in names),
        namespace="team-alpha",
    )
    return names


def gpu_usage(k: KubeSession, cq: str) -> dict[str, object]:
    """The ClusterQueue's reported use of nvidia.com/gpu (total, borrowed), {} before any."""
    status = k.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", cq).get("status", {})
    for flavor in status.get("flavorsUsage", []):
        for r in flavor["resources"]:
            if r["name"] == "nvidia.com/gpu":
                return dict(r)
    return {}


def admitted(k: KubeSession, names: list[str], ns: str = "team-alpha") -> list[str]:
    return [n for n in names if is_true(k.workload_for(n, ns), "Admitted")]


def test_team_a_borrows_idle_gpus_up_to_its_borrowing_limit_then_b_reclaims(
    fresh: KubeSession,
) -> None:
    k = fresh
    names = submit_alpha(k, 6, "alpha-borrow")
    # 3 nominal + 2 borrowed: five 1-GPU jobs, though beta still has a GPU idle.
    k.wait(
        "five of alpha's six jobs admitted",
        lambda: len(admitted(k, names)) == 5,
        namespace="team-alpha",
    )
    # The sixth stays held: a later 2-GPU probe in the same queue is decided after it, held
    # for the same reason, and still only five run.
    decided = probe(k, "alpha-borrow-probe", namespace="team-alpha", queue="alpha-queue", gpus=2)
    assert (decided["status"], decided["message"]) == ("False", quota_held("pool-gpu", 2)), decided
    assert len(admitted(k, names)) == 5, k.describe("team-alpha")
    remove_probe(k, "alpha-borrow-probe", namespace="team-alpha")
    # Kueue writes the ClusterQueue's status on its own time: 2 of the 5 are borrowed.
    k.wait(
        "alpha-cq's status showing 2 GPUs borrowed",
        lambda: gpu_usage(k, "alpha-cq").get("borrowed") in (2, "2"),
        namespace="team-alpha",
    )

    # beta asks for its own 3 GPUs: Kueue preempts alpha's borrowed work to give them back.
    k.submit(job("beta-reclaims", namespace="team-beta", queue="beta-queue", gpus=3, claim=None))
    k.wait(
        "beta admitted",
        lambda: is_true(k.workload_for("beta-reclaims", "team-beta"), "Admitted"),
        namespace="team-beta",
        timeout=90,
    )
    k.wait(
        "alpha back within its nominal quota",
        lambda: len(admitted(k, names)) == 3,
        namespace="team-alpha",
    )
    evicted = [
        n
        for n in names
        if (c := condition(k.workload_for(n, "team-alpha"), "Evicted"))
        and c["status"] == "True"
        and c["reason"] == "Preempted"
    ]
    assert len(evicted) == 2, k.describe("team-alpha")


def test_raising_a_quota_with_pulumi_up_admits_held_work_and_lowering_it_evicts_nothing(
    fresh: KubeSession, stacks: Deployments
) -> None:
    k = fresh
    # Its own jobs, on queues nothing else uses (the fixture emptied them). Beta idle, alpha's
    # six 1-GPU jobs get 3 of its own and 2 borrowed: one is held.
    names = submit_alpha(k, 6, "alpha-quota")
    k.wait(
        "five of alpha's six jobs admitted",
        lambda: len(admitted(k, names)) == 5,
        namespace="team-alpha",
    )
    before = len(admitted(k, names))
    assert before < len(names), "nothing is held; the quota change would prove nothing"
    up(stacks, {ALPHA_GPUS: "5"})
    k.wait(
        "held alpha work admitted after the quota rise",
        lambda: len(admitted(k, names)) > before,
        namespace="team-alpha",
        timeout=90,
    )
    raised = admitted(k, names)
    up(stacks, {ALPHA_GPUS: "3"})
    # Kueue has taken the lower quota in (the ClusterQueue's status counts what alpha now
    # uses beyond 3 as borrowed) and has decided a later probe in the same queue: still
    # everything that ran runs, and nothing was evicted.
    k.wait(
        "alpha-cq's status on the lowered quota",
        lambda: gpu_usage(k, "alpha-cq").get("borrowed") in (len(raised) - 3, str(len(raised) - 3)),
        namespace="team-alpha",
    )
    decided = probe(k, "alpha-quota-probe", namespace="team-alpha", queue="alpha-queue", gpus=2)
    assert (decided["status"], decided["message"]) == ("False", quota_held("pool-gpu", 2)), decided
    assert admitted(k, names) == raised, k.describe("team-alpha")
    assert not [n for n in names if is_true(k.workload_for(n, "team-alpha"), "Evicted")]


def test_a_namespace_no_cluster_queue_selects_is_not_admitted(fresh: KubeSession) -> None:
    k = fresh
    manifest = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "outsiders"}},
        # beta-cq selects only team-beta. (It has no backlog here: behind alpha-cq's backlog of
        # preemption-blocked work, Kueue v0.18.3 was seen not to evaluate the outsider at all.)
        LocalQueue("sneaky-queue", "outsiders", "beta-cq").obj(),
    ]
    subprocess.run(
        [str(KUBECTL), "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifest}),
        text=True,
        check=True,
        capture_output=True,
    )
    k.wait(
        "the outsiders' LocalQueue active",
        lambda: condition(
            k.custom.get_namespaced_custom_object(
                *KUEUE, "outsiders", "localqueues", "sneaky-queue"
            ),
            "Active",
        ),
        namespace="outsiders",
    )
    k.submit(job("outsider", namespace="outsiders", queue="sneaky-queue", gpus=1, claim=None))
    cond = k.wait(
        "outsider's workload evaluated",
        lambda: condition(k.workload_for("outsider", "outsiders"), "QuotaReserved"),
        namespace="outsiders",
    )
    assert cond["status"] == "False"
    assert cond["message"] == "Workload namespace doesn't match ClusterQueue selector"
    # Decided again for a later job in the same queue, the same way: the first is still held.
    later = probe(k, "outsider-later", namespace="outsiders", queue="sneaky-queue", gpus=2)
    assert (later["status"], later["message"]) == ("False", cond["message"])
    assert not is_true(k.workload_for("outsider", "outsiders"), "Admitted")
    assert k.get_job("outsider", "outsiders").spec.suspend is True


def kubectl_as(user: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--as={user}", *args], input=stdin, text=True, capture_output=True
    )


def test_a_team_member_submits_jobs_but_cannot_edit_queues(fresh: KubeSession) -> None:
    manifest = json.dumps(
        job("alice-job", namespace="team-alpha", queue="alpha-queue", gpus=1, claim=None)
    )
    created = kubectl_as("alice", "create", "-f", "-", stdin=manifest)
    assert created.returncode == 0, created.stderr
    assert (
        kubectl_as("alice", "get", "localqueue", "alpha-queue", "-n", "team-alpha").returncode == 0
    )
    for args in (
        [
            "patch",
            "localqueue",
            "alpha-queue",
            "-n",
            "team-alpha",
            "--type=merge",
            "-p",
            '{"spec":{"stopPolicy":"Hold"}}',
        ],
        [
            "patch",
            "clusterqueue",
            "alpha-cq",
            "--type=merge",
            "-p",
            '{"spec":{"stopPolicy":"Hold"}}',
        ],
        ["delete", "localqueue", "alpha-queue", "-n", "team-alpha"],
    ):
        denied = kubectl_as("alice", *args)
        assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), (
            args,
            denied.stderr,
        )
    other = kubectl_as(
        "alice",
        "create",
        "-f",
        "-",
        stdin=json.dumps(
            job("alice-elsewhere", namespace="team-beta", queue="beta-queue", gpus=1, claim=None)
        ),
    )
    assert other.returncode != 0 and "forbidden" in other.stderr.lower(), other.stderr
