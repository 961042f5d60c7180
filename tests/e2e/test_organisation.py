"""An organisation's queues on the real Kueue (issue 39 item 5), on every supported release.

The local-org stack (tests/e2e/stacks) is deployed next to `local`: a three-level cohort tree
(a root with quota of its own, a research division with quota of its own that it lends to no
one and a limit on what it takes from above, a product division without any; four teams, one
of them with a LocalQueue in each of its two namespaces), its flavor's three nodes added to the
sandbox as the simulated cloud shapes them. For each supported release, the pin first, `local`
is moved once (one `pulumi up`: the release's manifest, and fair sharing switched on in the
manager) and every scenario below runs at that release before the next move:

- borrowing: a team borrows its division's unused quota and the division's own before the
  division borrows from the root, which lends the rest to the other division;
- weights: two teams of weights 2 and 1 contending for the root's idle GPUs end where Kueue's
  fair sharing says, at equal weighted shares, with the heavier one holding twice the GPUs;
- stopPolicy through `pulumi up`: Hold admits nothing new while what runs keeps running,
  HoldAndDrain evicts it, None admits everything again;
- the second namespace: a job there is admitted through the LocalQueue of its own namespace.

At the end `local` is as committed (the pin, no overrides), no job is left in the stack's
namespaces and its nodes are gone; the stack stays deployed, as every stack of the session does.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.kueue.versions import supported
from gpu_queues.release.catalogue import KUEUE_NAMESPACE, MANAGER_CONFIGMAP
from gpu_queues.whatif.nodes import flavor_nodes
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECTL
from sandbox.walkthrough import KUEUE, KubeSession, condition, is_true, job
from tests.e2e.deployments import Deployments
from tests.e2e.settled import probe, quota_held, remove_probe
from tests.e2e.test_upgrade import PINNED, controller_image, overrides

pytestmark = pytest.mark.e2e

STACK = "local-org"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
FLAVOR = "org-gpu"
# The pin first, then every other supported release (oldest first).
RELEASES = [PINNED, *(v for v in supported() if v != PINNED)]
# Kueue's fair sharing in the manager, with its two preemption strategies (Kueue's default
# order, written out): a team's head preempts a sibling's borrowed workload while its share
# after admission is at most the sibling's after losing it (S2-a), or below the sibling's
# share before (S2-b).
FAIR_SHARING = {
    "gpu-queues:kueue.manager.fairSharing.preemptionStrategies[0]": "LessThanOrEqualToFinalShare",
    "gpu-queues:kueue.manager.fairSharing.preemptionStrategies[1]": "LessThanInitialShare",
}
VISION_STOP = "gpu-queues:teams[1].stopPolicy"  # vision: committed as None

# Namespaces and LocalQueues of the stack's teams.
LLM, VISION, SEARCH = "org-llm", "org-vision", "org-search"
ADS_TRAIN, ADS_EVAL = "org-ads-train", "org-ads-eval"
NAMESPACES = (LLM, VISION, SEARCH, ADS_TRAIN, ADS_EVAL)

# The stack's GPU quotas, as the scenarios count with them.
ROOT_GPUS = 6  # org-acme's own: all the root can lend (research lends nothing up)
RESEARCH_GPUS = 2  # org-research's own, lendingLimit 0
RESEARCH_FROM_ABOVE = 2  # org-research's borrowingLimit
TEAM_GPUS = 2  # llm's and vision's nominal quota (search and ads: 0)


def kubectl(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


# --- Kueue's fair sharing, as its code defines it (pkg/cache/scheduler/fair_sharing.go) -----


def precise_share(borrowed: int, lendable: int, weight: float) -> float:
    """A node's dominant resource share: what it uses above its quota, per 1000 of what its
    parent cohort could lend it, divided by its weight (here the GPUs are the dominant
    resource: every team's cpu and memory cover its jobs)."""
    return borrowed * 1000.0 / lendable / weight


def weighted_share(borrowed: int, lendable: int, weight: float) -> int:
    """status.fairSharing.weightedShare: the precise share rounded up."""
    return math.ceil(precise_share(borrowed, lendable, weight))


def fair_split(lendable: int, heavy: float, light: float) -> tuple[int, int]:
    """Where fair sharing's preemption leaves two sibling teams with no quota of their own,
    the light one holding all `lendable` GPUs in 1-GPU jobs and the heavy one asking for as
    many: the heavy team's head preempts one of the light team's jobs while S2-a or S2-b
    holds."""
    h, left = 0, lendable
    while left > 0:
        new = precise_share(h + 1, lendable, heavy)
        s2a = new <= precise_share(left - 1, lendable, light)
        s2b = new < precise_share(left, lendable, light)
        if not (s2a or s2b):
            break
        h, left = h + 1, left - 1
    return h, left


# --- reading the cluster --------------------------------------------------------------------


def cq_status(k: KubeSession, cq: str) -> dict[str, Any]:
    status: dict[str, Any] = k.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", cq).get(
        "status", {}
    )
    return status


def gpu_usage(k: KubeSession, cq: str) -> tuple[int, int] | None:
    """The ClusterQueue's reported nvidia.com/gpu use in the flavor: (total, borrowed)."""
    for flavor in cq_status(k, cq).get("flavorsUsage", []):
        for r in flavor["resources"]:
            if flavor["name"] == FLAVOR and r["name"] == "nvidia.com/gpu":
                return int(r.get("total", 0)), int(r.get("borrowed", 0))
    return None


def cq_share(k: KubeSession, cq: str) -> int | None:
    fair = cq_status(k, cq).get("fairSharing")
    return None if fair is None else int(fair["weightedShare"])


def cohort_share(k: KubeSession, cohort: str) -> int | None:
    obj = k.custom.get_cluster_custom_object(*KUEUE, "cohorts", cohort)
    fair = obj.get("status", {}).get("fairSharing")
    return None if fair is None else int(fair["weightedShare"])


def admitted(k: KubeSession, names: list[str], ns: str) -> list[str]:
    return [n for n in names if is_true(k.workload_for(n, ns), "Admitted")]


def submit(k: KubeSession, prefix: str, count: int, ns: str, queue: str) -> list[str]:
    """`count` 1-GPU jobs (2 cpu, 8Gi each) to the LocalQueue."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for n in names:
        k.submit(job(n, namespace=ns, queue=queue, gpus=1, claim=None))
    return names


def wait_admitted(k: KubeSession, names: list[str], ns: str, count: int) -> None:
    k.wait(
        f"{count} of {len(names)} jobs in {ns} admitted",
        lambda: len(admitted(k, names, ns)) == count,
        namespace=ns,
        timeout=180,
    )


def running(k: KubeSession, name: str, ns: str) -> bool:
    pods = k.job_pods(name, ns)
    return bool(pods) and all(p.status.phase == "Running" for p in pods)


def clear_jobs(k: KubeSession) -> None:
    """No job and no workload left in the stack's namespaces."""
    for ns in NAMESPACES:
        for j in k.batch.list_namespaced_job(ns).items:
            k.delete_job(j.metadata.name, ns)
    for ns in NAMESPACES:
        k.wait(f"no workloads in {ns}", lambda n=ns: not k.workloads(n), namespace=ns, timeout=120)


# --- the stack, the nodes and the release ---------------------------------------------------


def up_org(stacks: Deployments, overrides: dict[str, str] | None = None) -> None:
    done = stacks.up(STACK, source=SOURCE, overrides=overrides)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def org(cluster: KubeSession, stacks: Deployments) -> Iterator[KubeSession]:
    """The stack's nodes in the sandbox (the stack is deployed at each release). Afterwards:
    no job of the stack, `local` back as committed, the stack as committed, its nodes
    removed."""
    nodes = flavor_nodes(fake_cluster.load_stack(SOURCE))
    kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(n) for n in nodes))
    try:
        cluster.wait(
            "the org nodes Ready",
            lambda: all(
                any(
                    c.type == "Ready" and c.status == "True"
                    for c in cluster.core.read_node(n["metadata"]["name"]).status.conditions or []
                )
                for n in nodes
            ),
            timeout=120,
        )
        yield cluster
    finally:
        try:
            clear_jobs(cluster)
        finally:
            restored = stacks.up("local")
            org_back = stacks.up(STACK, source=SOURCE)
            kubectl("delete", "node", "--ignore-not-found", *(n["metadata"]["name"] for n in nodes))
            assert restored.returncode == 0, restored.stdout + restored.stderr
            assert org_back.returncode == 0, org_back.stdout + org_back.stderr


@pytest.fixture(scope="module", params=RELEASES)
def release(request: pytest.FixtureRequest, org: KubeSession, stacks: Deployments) -> Iterator[str]:
    """`local` at the release with fair sharing in the manager (one `up`), the stack as
    committed; afterwards no job of the stack, so the next move starts empty."""
    version: str = request.param
    moved = stacks.up(
        "local", overrides={**(overrides(version) if version != PINNED else {}), **FAIR_SHARING}
    )
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert controller_image(org) == f"registry.k8s.io/kueue/kueue:{version}"
    configuration = org.core.read_namespaced_config_map(MANAGER_CONFIGMAP, KUEUE_NAMESPACE)
    assert "LessThanOrEqualToFinalShare" in "".join(configuration.data.values())
    up_org(stacks)
    # Fair sharing is on: Kueue reports every ClusterQueue's share (0: nobody borrows yet).
    org.wait(
        "org-search-cq's fair-sharing status",
        lambda: cq_share(org, "org-search-cq") == 0 or None,
        namespace=SEARCH,
    )
    yield version
    clear_jobs(org)


@pytest.fixture
def fresh(release: str, org: KubeSession, stacks: Deployments) -> KubeSession:
    """Each scenario starts with the stack as committed and its queues empty."""
    up_org(stacks)
    clear_jobs(org)
    return org


# --- the scenarios ----------------------------------------------------------------------------


def test_a_team_borrows_its_divisions_quota_first_then_the_roots(fresh: KubeSession) -> None:
    k = fresh
    # llm asks for 10 GPUs: its own 2, vision's idle 2 and the division's own 2 are the
    # division's to give; from the root the division takes at most its borrowingLimit, 2.
    inside = TEAM_GPUS + TEAM_GPUS + RESEARCH_GPUS
    llm = submit(k, "llm-borrow", 10, LLM, "jobs")
    wait_admitted(k, llm, LLM, inside + RESEARCH_FROM_ABOVE)
    decided = probe(k, "llm-borrow-probe", namespace=LLM, queue="jobs", gpus=2)
    assert (decided["status"], decided["message"]) == ("False", quota_held(FLAVOR, 2)), decided
    assert len(admitted(k, llm, LLM)) == 8, k.describe(LLM)
    remove_probe(k, "llm-borrow-probe", namespace=LLM)
    # What Kueue counts: llm borrows 6 beyond its own 2, of the 8 its division could ever give
    # it; the division as a whole borrows only 2 from the root, of the root's 6. Were llm's
    # borrowing charged to the root first, the division's limit would have stopped it at 4.
    k.wait("org-llm-cq's usage", lambda: gpu_usage(k, "org-llm-cq") == (8, 6), namespace=LLM)
    research_lendable = inside + RESEARCH_FROM_ABOVE
    k.wait(
        "org-llm-cq's share",
        lambda: cq_share(k, "org-llm-cq") == weighted_share(6, research_lendable, 1),
        namespace=LLM,
    )
    k.wait(
        "org-research's share: 2 GPUs borrowed from the root",
        lambda: (
            cohort_share(k, "org-research") == weighted_share(RESEARCH_FROM_ABOVE, ROOT_GPUS, 1)
        ),
        namespace=LLM,
    )

    # The root lends the rest of its own quota to the other division: ads, with no quota of
    # its own, gets 6 - 2 = 4 of its 6 jobs, and llm keeps its 8.
    ads = submit(k, "ads-borrow", 6, ADS_TRAIN, "training")
    wait_admitted(k, ads, ADS_TRAIN, ROOT_GPUS - RESEARCH_FROM_ABOVE)
    decided = probe(k, "ads-borrow-probe", namespace=ADS_TRAIN, queue="training", gpus=2)
    assert (decided["status"], decided["message"]) == ("False", quota_held(FLAVOR, 2)), decided
    assert len(admitted(k, ads, ADS_TRAIN)) == 4, k.describe(ADS_TRAIN)
    assert len(admitted(k, llm, LLM)) == 8, k.describe(LLM)
    k.wait("org-ads-cq's usage", lambda: gpu_usage(k, "org-ads-cq") == (4, 4), namespace=ADS_TRAIN)


def test_weights_two_to_one_give_the_heavier_team_twice_the_borrowed_gpus(
    fresh: KubeSession,
) -> None:
    k = fresh
    # ads (weight 1) takes all 6 GPUs the root can lend the product division.
    ads = submit(k, "ads-weights", ROOT_GPUS, ADS_TRAIN, "training")
    wait_admitted(k, ads, ADS_TRAIN, ROOT_GPUS)
    k.wait(
        "org-ads-cq's share with all 6",
        lambda: cq_share(k, "org-ads-cq") == weighted_share(ROOT_GPUS, ROOT_GPUS, 1),
        namespace=ADS_TRAIN,
    )
    # search (weight 2) asks for as many: its heads preempt ads's jobs until the shares meet.
    heavy, light = fair_split(ROOT_GPUS, 2, 1)
    assert (heavy, light) == (4, 2)  # the rules' fixed point: twice the GPUs at weight 2
    search = submit(k, "search-weights", ROOT_GPUS, SEARCH, "jobs")
    k.wait(
        f"search holding {heavy} and ads {light}",
        lambda: (
            len(admitted(k, search, SEARCH)) == heavy and len(admitted(k, ads, ADS_TRAIN)) == light
        ),
        namespace=SEARCH,
        timeout=240,
    )
    # Settled: a later 2-GPU job of search's is decided (held: no rule lets it preempt more)
    # and the split is still 4 and 2.
    decided = probe(k, "search-weights-probe", namespace=SEARCH, queue="jobs", gpus=2)
    assert (decided["status"], decided["message"]) == ("False", quota_held(FLAVOR, 2)), decided
    assert len(admitted(k, search, SEARCH)) == heavy, k.describe(SEARCH)
    assert len(admitted(k, ads, ADS_TRAIN)) == light, k.describe(ADS_TRAIN)
    remove_probe(k, "search-weights-probe", namespace=SEARCH)
    # Each of ads's jobs that lost its GPUs was preempted by fair sharing.
    for n in sorted(set(ads) - set(admitted(k, ads, ADS_TRAIN))):
        preempted = condition(k.workload_for(n, ADS_TRAIN), "Preempted")
        assert preempted and (preempted["status"], preempted["reason"]) == (
            "True",
            "InCohortFairSharing",
        ), k.describe(ADS_TRAIN)
    # Kueue's own account: all borrowed, and equal weighted shares (4/6 over 2, 2/6 over 1).
    k.wait(
        "the ClusterQueues' usage",
        lambda: (
            gpu_usage(k, "org-search-cq") == (heavy, heavy)
            and gpu_usage(k, "org-ads-cq") == (light, light)
        ),
        namespace=SEARCH,
    )
    share = weighted_share(heavy, ROOT_GPUS, 2)
    assert share == weighted_share(light, ROOT_GPUS, 1) == 334
    k.wait(
        "equal weighted shares",
        lambda: cq_share(k, "org-search-cq") == share and cq_share(k, "org-ads-cq") == share,
        namespace=SEARCH,
    )


def test_hold_keeps_what_runs_hold_and_drain_evicts_it_none_admits_again(
    fresh: KubeSession, stacks: Deployments
) -> None:
    k = fresh
    cq = "org-vision-cq"
    runs = submit(k, "vision-runs", TEAM_GPUS, VISION, "jobs")
    wait_admitted(k, runs, VISION, TEAM_GPUS)
    k.wait(
        "vision's pods Running", lambda: all(running(k, n, VISION) for n in runs), namespace=VISION
    )

    def active() -> dict[str, Any] | None:
        return condition({"status": cq_status(k, cq)}, "Active")

    try:
        # Hold: the ClusterQueue stops; a new job is refused, the two keep running.
        up_org(stacks, {VISION_STOP: "Hold"})
        stopped = k.wait(
            "org-vision-cq stopped",
            lambda: (c := active()) and c["status"] == "False" and c,
            namespace=VISION,
        )
        assert stopped["reason"] == "Stopped", stopped
        held = probe(k, "vision-held", namespace=VISION, queue="jobs", gpus=1)
        # (A workload without quota is judged against Kueue's cache: "inactive", not "stopped".)
        assert (held["status"], held["message"]) == ("False", f"ClusterQueue {cq} is inactive")
        for n in runs:
            wl = k.workload_for(n, VISION)
            assert is_true(wl, "Admitted") and not is_true(wl, "Evicted"), k.describe(VISION)
            assert running(k, n, VISION), k.describe(VISION)
            assert k.get_job(n, VISION).spec.suspend is False

        # HoldAndDrain: the running jobs are evicted, suspended, their pods gone.
        up_org(stacks, {VISION_STOP: "HoldAndDrain"})
        k.wait(
            "vision's jobs evicted",
            lambda: all(
                (c := condition(k.workload_for(n, VISION), "Evicted"))
                and c["status"] == "True"
                and c["reason"] == "ClusterQueueStopped"
                for n in runs
            ),
            namespace=VISION,
        )
        k.wait(
            "vision's jobs suspended, their pods gone, their quota given back",
            lambda: (
                all(
                    k.get_job(n, VISION).spec.suspend is True and not k.job_pods(n, VISION)
                    for n in runs
                )
                and not admitted(k, [*runs, "vision-held"], VISION)
            ),
            namespace=VISION,
        )
        k.wait(
            "org-vision-cq's usage back to 0",
            lambda: gpu_usage(k, cq) in (None, (0, 0)),
            namespace=VISION,
        )
    finally:
        # None (as committed): everything is admitted again, the third job on the division's
        # own quota (vision's 2 plus 1 borrowed).
        up_org(stacks)
    wait_admitted(k, [*runs, "vision-held"], VISION, TEAM_GPUS + 1)
    k.wait(
        "vision's three jobs Running",
        lambda: all(running(k, n, VISION) for n in [*runs, "vision-held"]),
        namespace=VISION,
    )
    k.wait("org-vision-cq's usage", lambda: gpu_usage(k, cq) == (3, 1), namespace=VISION)


def test_a_job_in_the_second_namespace_is_admitted_through_its_own_localqueue(
    fresh: KubeSession,
) -> None:
    k = fresh
    k.submit(job("ads-train", namespace=ADS_TRAIN, queue="training", gpus=1, claim=None))
    k.submit(job("ads-eval", namespace=ADS_EVAL, queue="evaluation", gpus=1, claim=None))
    for name, ns, queue in (
        ("ads-train", ADS_TRAIN, "training"),
        ("ads-eval", ADS_EVAL, "evaluation"),
    ):
        wl = k.wait(
            f"{name} admitted",
            lambda n=name, s=ns: (w := k.workload_for(n, s)) and is_true(w, "Admitted") and w,
            namespace=ns,
        )
        assert wl["spec"]["queueName"] == queue
        assert wl["status"]["admission"]["clusterQueue"] == "org-ads-cq"
    # The first namespace's queue is not the second's: named there, it does not exist.
    wrong = probe(k, "ads-eval-wrong-queue", namespace=ADS_EVAL, queue="training", gpus=2)
    assert (wrong["status"], wrong["message"]) == ("False", "LocalQueue training doesn't exist")
    for name, ns, queue in (
        ("ads-train", ADS_TRAIN, "training"),
        ("ads-eval", ADS_EVAL, "evaluation"),
    ):
        k.wait(
            f"{queue}'s status counting {name}",
            lambda s=ns, q=queue: (
                k.custom.get_namespaced_custom_object(*KUEUE, s, "localqueues", q)
                .get("status", {})
                .get("admittedWorkloads")
                == 1
            ),
            namespace=ns,
        )
    k.wait("org-ads-cq's usage", lambda: gpu_usage(k, "org-ads-cq") == (2, 2), namespace=ADS_EVAL)
