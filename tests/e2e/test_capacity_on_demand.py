"""Capacity on demand on the sandbox, with the real Kueue and Pulumi CLI (issue 26, part 2).

Stack local-provisioning (tests/e2e/stacks) gives team burst quota in flavor on-demand-gpu,
whose nodes do not exist, behind provisioning check `autoscale` (one retry, a second apart).
The test plays the cluster autoscaler: a small controller (`Autoscaler`) that answers each
ProvisioningRequest Kueue creates, by adding kwok nodes labelled like the flavor and setting
Provisioned, or by setting Failed.

- Before the cluster serves the ProvisioningRequest API, preview fails in the validation
  phase, naming the key.
- With the API (our CRD, sandbox/autoscaler.py) and Kueue restarted (it looks for the API only
  at start), `pulumi up` deploys the check, and a preview after it reports no changes.
- A job waits: its workload reserves quota but is not admitted, the check Pending, the job
  suspended, until the autoscaler provisions; then it is admitted and its pod runs on the
  new node.
- When the autoscaler fails the request, Kueue retries once (a second request, attempt 2)
  and then, past backoffLimitCount, rejects the check and deactivates the workload with its
  own message.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpu_queues.components.readiness import probe_webhooks
from gpu_queues.whatif.nodes import node
from sandbox import autoscaler, kueue_pod
from sandbox import pulumi_stack as stack
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KUEUE, KubeSession, condition, is_true, job
from tests.e2e.deployments import Deployments

pytestmark = pytest.mark.e2e

STACK = "local-provisioning"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
NAMESPACE = "team-burst"
QUEUE = "burst-queue"
CHECK = "autoscale"
FLAVOR = "on-demand-gpu"
PR = (autoscaler.GROUP, autoscaler.VERSION)
FAILED_MESSAGE = "the sandbox's autoscaler has no capacity for this request"
PROVISIONED_MESSAGE = "the sandbox's autoscaler added the nodes"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
    }


class Autoscaler:
    """Plays the cluster autoscaler for the test: answers each ProvisioningRequest in the
    team namespace once `answering` is set, by the job it is for (its name holds the
    workload's, job-<job>-<hash>): a job named in `fail` gets Failed, any other gets nodes
    of the flavor (one per pod, labelled and sized like the flavor's nodes) and
    Accepted + Provisioned."""

    def __init__(self, fail: set[str]) -> None:
        self.k = KubeSession(str(KUBECONFIG))
        self.fail = fail
        self.answering = threading.Event()
        self.stopped = threading.Event()
        self.answered: list[tuple[str, str]] = []  # (request name, Failed or Provisioned)
        self.nodes: list[str] = []
        self.error: BaseException | None = None
        flavor = next(f for f in fake_cluster.load_stack(SOURCE).flavors if f.name == FLAVOR)
        self.spare = list(flavor.node_list())
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Autoscaler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)
        for name in self.nodes:
            try:
                self.k.core.delete_node(name)
            except ApiException as error:
                if error.status != 404:
                    raise

    def _run(self) -> None:
        try:
            while not self.stopped.wait(0.25):
                if self.answering.is_set():
                    self._answer_all()
        except BaseException as error:  # shown by the test that waits on it
            self.error = error

    def _answer_all(self) -> None:
        requests = self.k.custom.list_namespaced_custom_object(*PR, NAMESPACE, autoscaler.PLURAL)[
            "items"
        ]
        done = {name for name, _ in self.answered}
        for req in requests:
            name = req["metadata"]["name"]
            if name in done or (req.get("status") or {}).get("conditions"):
                continue
            if any(name.startswith(f"job-{j}-") for j in self.fail):
                conditions = [_condition("Failed", "NoCapacity", FAILED_MESSAGE)]
                outcome = "Failed"
            else:
                for pod_set in req["spec"]["podSets"]:
                    for _ in range(int(pod_set["count"])):
                        self._add_node()
                conditions = [
                    _condition("Accepted", "Accepted", "the sandbox's autoscaler took it"),
                    _condition("Provisioned", "Provisioned", PROVISIONED_MESSAGE),
                ]
                outcome = "Provisioned"
            self.k.custom.patch_namespaced_custom_object_status(
                *PR,
                NAMESPACE,
                autoscaler.PLURAL,
                name,
                {"status": {"conditions": conditions}},
            )
            self.answered.append((name, outcome))

    def _add_node(self) -> None:
        n = self.spare.pop(0)
        body = node(n.name, n.labels, list(n.taints), n.resources, n.flavor)
        self.k.core.create_node(body)
        self.nodes.append(n.name)


def pulumi(*args: str) -> Any:
    return stack.pulumi(*args, stack=STACK, source=SOURCE, check=False, capture=True)


def restart_kueue(k: KubeSession) -> None:
    """Kueue looks for the ProvisioningRequest API only at start: a new controller pod (the
    sandbox's runner starts the binary for it) Ready in place of the old one."""

    def pods() -> list[Any]:
        found: list[Any] = k.core.list_namespaced_pod(
            kueue_pod.NAMESPACE, label_selector=kueue_pod.SELECTOR
        ).items
        return found

    old = pods()
    before = {p.metadata.uid for p in old}
    for pod in old:
        k.core.delete_namespaced_pod(pod.metadata.name, kueue_pod.NAMESPACE, grace_period_seconds=0)

    def fresh_ready() -> bool:
        now = pods()
        return bool(now) and all(
            p.metadata.uid not in before
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
            for p in now
        )

    k.wait(
        "a new Kueue controller pod Ready", fresh_ready, timeout=120, namespace=kueue_pod.NAMESPACE
    )
    # kwok marks the pod Ready at once; the old process serves webhooks while it shuts down,
    # so probing before the runner has started the new one can pass on the old and leave the
    # next test to meet the gap in between ("connection refused").
    k.wait(
        "the runner playing the new pod",
        lambda: kueue_pod.playing({p.metadata.uid for p in pods()}),
        timeout=120,
        namespace=kueue_pod.NAMESPACE,
    )
    # Its webhooks answer again (every Job create goes through them), as pulumi up waits.
    probe_webhooks(None, None, timeout=120)  # $KUBECONFIG: the sandbox_up fixture sets it


def crd_established(ext: Any) -> bool:
    crd = ext.read_custom_resource_definition(autoscaler.CRD_NAME)
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])


@pytest.fixture(scope="module")
def refused(cluster: KubeSession) -> Any:
    """preview of the stack before the cluster serves ProvisioningRequests."""
    ext = client.ApiextensionsV1Api(cluster.core.api_client)
    assert autoscaler.CRD_NAME not in {
        c.metadata.name for c in ext.list_custom_resource_definition().items
    }
    return pulumi("preview")


@pytest.fixture(scope="module")
def on_demand(
    cluster: KubeSession, stacks: Deployments, refused: Any
) -> Iterator[tuple[KubeSession, Any]]:
    """The API served, Kueue restarted, the stack up; afterwards no job of it, the CRD removed
    and Kueue restarted again, as the sandbox was. The stack stays deployed, as every stack of
    the session does: its check is inactive from then on (no controller serves it), and no
    other module's queue names it."""
    ext = client.ApiextensionsV1Api(cluster.core.api_client)
    ext.create_custom_resource_definition(autoscaler.provisioning_request_crd())
    try:
        cluster.wait("the ProvisioningRequest CRD established", lambda: crd_established(ext))
        restart_kueue(cluster)
        done = stacks.up(STACK, source=SOURCE)
        assert done.returncode == 0, done.stdout + done.stderr
        yield cluster, pulumi("preview", "--expect-no-changes", "--diff")
    finally:
        for j in cluster.batch.list_namespaced_job(NAMESPACE).items:
            cluster.delete_job(j.metadata.name, NAMESPACE)
        cluster.wait(
            f"no workloads in {NAMESPACE}",
            lambda: not cluster.workloads(NAMESPACE),
            namespace=NAMESPACE,
        )
        ext.delete_custom_resource_definition(autoscaler.CRD_NAME)
        restart_kueue(cluster)


def check_state(wl: dict[str, Any] | None) -> dict[str, Any] | None:
    for state in (wl or {}).get("status", {}).get("admissionChecks", []):
        if state["name"] == CHECK:
            return dict(state)
    return None


def burst_job(name: str) -> dict[str, Any]:
    return job(name, namespace=NAMESPACE, queue=QUEUE, gpus=4, claim=None)


def test_without_the_provisioning_request_api_the_preview_fails_by_key(refused: Any) -> None:
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert (
        "gpu-queues:provisioning.checks: the cluster does not serve ProvisioningRequests "
        "(autoscaling.x-k8s.io/v1 has no provisioningrequests), so Kueue runs no provisioning "
        "controller" in out
    ), out
    assert "Traceback" not in out


def test_the_check_is_active_and_a_preview_after_up_reports_no_changes(on_demand: Any) -> None:
    k, preview = on_demand
    assert preview.returncode == 0, preview.stdout + preview.stderr
    # The new Kueue starts its controllers once it leads (its old pod's lease runs out first).
    ac = k.wait(
        "the admission check's Active condition",
        lambda: (
            a
            if condition(
                a := k.custom.get_cluster_custom_object(*KUEUE, "admissionchecks", CHECK), "Active"
            )
            else None
        ),
        timeout=120,
        namespace=NAMESPACE,
    )
    active = condition(ac, "Active") or {}
    # Kueue's provisioning controller took the check (admissioncheck_reconciler.go).
    assert (active.get("status"), active.get("reason"), active.get("message")) == (
        "True",
        "Active",
        "The admission check is active",
    ), ac.get("status")
    # The ClusterQueue turns Active once Kueue has seen its check active: wait for it too
    # (read once right after the check, it could still be the status from before).
    cq = k.wait(
        "burst-cq Active",
        lambda: (
            q
            if is_true(
                q := k.custom.get_cluster_custom_object(
                    "kueue.x-k8s.io", "v1beta2", "clusterqueues", "burst-cq"
                ),
                "Active",
            )
            else None
        ),
        timeout=120,
        namespace=NAMESPACE,
    )
    assert is_true(cq, "Active"), cq.get("status")


def test_a_job_waits_for_the_autoscaler_and_runs_on_the_nodes_it_adds(on_demand: Any) -> None:
    k, _ = on_demand
    with Autoscaler(fail=set()) as scaler:
        try:
            provisioned(k, scaler)
        finally:
            # The job and its pod go before the nodes the autoscaler added.
            k.delete_job("burst-ok", NAMESPACE)
            k.wait(
                "burst-ok's workload gone",
                lambda: k.workload_for("burst-ok", NAMESPACE) is None,
                namespace=NAMESPACE,
            )


def requests_for(k: KubeSession, workload: str) -> list[dict[str, Any]]:
    items = k.custom.list_namespaced_custom_object(*PR, NAMESPACE, autoscaler.PLURAL)["items"]
    return [r for r in items if r["metadata"]["name"].startswith(f"{workload}-")]


def provisioned(k: KubeSession, scaler: Autoscaler) -> None:
    k.submit(burst_job("burst-ok"))
    # Quota reserved, a ProvisioningRequest made, the check Pending: not admitted.
    wl = k.wait(
        "burst-ok's workload holding quota with its request made",
        lambda: (
            w
            if is_true(w := k.workload_for("burst-ok", NAMESPACE), "QuotaReserved")
            and (check_state(w) or {}).get("state") == "Pending"
            and requests_for(k, w["metadata"]["name"])
            else None
        ),
        namespace=NAMESPACE,
    )
    assert not is_true(wl, "Admitted"), k.describe(NAMESPACE)
    assert k.get_job("burst-ok", NAMESPACE).spec.suspend is True
    [request] = requests_for(k, wl["metadata"]["name"])
    # Kueue's name for attempt 1, and the class the check's config gives.
    assert request["metadata"]["name"] == f"{wl['metadata']['name']}-{CHECK}-1"
    assert request["spec"]["provisioningClassName"] == (
        "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    )
    assert [p["count"] for p in request["spec"]["podSets"]] == [1]
    assert not k.core.list_node(label_selector="gpu-queues.dev/pool=on-demand").items

    scaler.answering.set()
    wl = k.wait(
        "burst-ok admitted once provisioned",
        lambda: w if is_true(w := k.workload_for("burst-ok", NAMESPACE), "Admitted") else None,
        namespace=NAMESPACE,
    )
    assert scaler.error is None, scaler.error
    assert check_state(wl)["state"] == "Ready"  # type: ignore[index]
    assert check_state(wl)["message"] == PROVISIONED_MESSAGE  # type: ignore[index]
    pod = k.wait(
        "burst-ok's pod running",
        lambda: next(
            (p for p in k.job_pods("burst-ok", NAMESPACE) if p.status.phase == "Running"),
            None,
        ),
        namespace=NAMESPACE,
    )
    assert pod.spec.node_name == scaler.nodes[0] == f"{FLAVOR}-0"
    # Kueue's podSetUpdates tie the pod to the request it was provisioned for.
    annotations = pod.metadata.annotations or {}
    assert (
        annotations.get("autoscaling.x-k8s.io/consume-provisioning-request")
        == (request["metadata"]["name"])
    )
    assert scaler.answered == [(request["metadata"]["name"], "Provisioned")]


def test_a_failed_request_is_retried_once_then_the_workload_is_deactivated(
    on_demand: Any,
) -> None:
    k, _ = on_demand
    with Autoscaler(fail={"burst-fail"}) as scaler:
        scaler.answering.set()
        k.submit(burst_job("burst-fail"))
        wl = k.wait(
            "burst-fail deactivated after its retry",
            lambda: (
                w
                if (w := k.workload_for("burst-fail", NAMESPACE)) is not None
                and w["spec"].get("active") is False
                and is_true(w, "Evicted")
                else None
            ),
            timeout=120,
            namespace=NAMESPACE,
        )
        assert scaler.error is None, scaler.error
        name = wl["metadata"]["name"]
        # backoffLimitCount 1: attempt 1 failed and was retried, attempt 2 failed and was final.
        assert scaler.answered == [
            (f"{name}-{CHECK}-1", "Failed"),
            (f"{name}-{CHECK}-2", "Failed"),
        ]
        # The deactivation evicts it, and eviction puts every check back to Pending
        # (pkg/workload/admissionchecks.go: resetChecksOnEviction), saying what it was.
        state = check_state(wl) or {}
        assert (state.get("state"), state.get("message")) == (
            "Pending",
            "Reset to Pending after eviction. Previously: Rejected",
        ), k.describe(NAMESPACE)
        evicted = condition(wl, "Evicted")
        assert evicted is not None and evicted["status"] == "True", k.describe(NAMESPACE)
        assert (evicted["reason"], evicted["message"]) == (
            "DeactivatedDueToAdmissionCheck",
            f'The workload is deactivated due to AdmissionCheck in Rejected state: "{CHECK}" '
            f"({FAILED_MESSAGE})",
        ), k.describe(NAMESPACE)
        assert not is_true(wl, "Admitted")
        assert k.get_job("burst-fail", NAMESPACE).spec.suspend is True
        assert scaler.nodes == []
        k.delete_job("burst-fail", NAMESPACE)
