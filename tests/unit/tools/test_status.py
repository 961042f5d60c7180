"""gpuq status without a cluster: which cluster and teams a stack names, and the errors a
user sees when it cannot tell (the live readings are tested on the sandbox:
tests/e2e/test_whatif.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.tools import status
from tests.conftest import ROOT
from tests.unit.conftest import Write

pytestmark = pytest.mark.unit


def test_a_stack_without_a_kubeconfig_uses_the_ambient_one_and_names_its_teams() -> None:
    kubeconfig, context, teams = status.stack_connection("staging", ROOT)
    assert (kubeconfig, context) == (None, None)
    assert teams == [("research", "research-cq"), ("vision", "vision-cq"), ("nlp", "nlp-cq")]


def test_an_unknown_or_broken_stack_is_a_clear_error(write: Write, project: Path, capsys) -> None:
    with pytest.raises(status.StatusError, match="cannot read stack 'nope'"):
        status.stack_connection("nope", project)
    write("bad", "config:\n  gpu-queues:teams: [{name: x}]\n")
    with pytest.raises(status.StatusError, match="the stack config is invalid"):
        status.stack_connection("bad", project)
    assert status.main(["--stack", "nope", "--project", str(project)]) == 2
    assert "status: cannot read stack 'nope'" in capsys.readouterr().err


def test_a_kubeconfig_the_cli_cannot_read_is_reported_without_its_content(
    write: Write, project: Path
) -> None:
    # A secret of another project (no Pulumi.yaml here): the CLI refuses; nothing of it shows.
    text = (
        (ROOT / "Pulumi.staging.yaml")
        .read_text()
        .replace(
            "config:\n",
            "config:\n  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: v1:AAAA\n",
            1,
        )
    )
    write("staging", text)
    with pytest.raises(status.StatusError) as caught:
        status.stack_connection("staging", project)
    assert "cannot read gpu-queues:kubernetes.kubeconfig of stack 'staging'" in str(caught.value)
    assert "v1:AAAA" not in str(caught.value)


@pytest.mark.parametrize("server", ["https://[::1", "https://", "https://h:99999", "nope"])
def test_a_kubeconfig_whose_server_is_not_a_url_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: str
) -> None:
    # Issue 42, class 4: "https://[::1" was a ValueError traceback; "https://" was sent to the
    # HTTP client ("the cluster did not answer").
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f"clusters: [{{name: k, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: s3cr3t}}]\n"
    )
    assert status.main(["--kubeconfig", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"status: kubeconfig {config}: cluster 'k' needs a `server` URL"), err
    assert err.count("\n") == 1 and "s3cr3t" not in err


class Listing:
    """A cluster that answers one list: the ClusterQueues."""

    def __init__(self, answer: object) -> None:
        self.answer, self.asked = answer, []

    def get(self, path: str) -> object:
        self.asked.append(path)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_admitted_counts_are_kueues_per_cluster_queue_or_why_not(
    monkeypatch: pytest.MonkeyPatch, write: Write, project: Path
) -> None:
    queues = {
        "items": [
            {"metadata": {"name": "ml-cq"}, "status": {"admittedWorkloads": 3}},
            {"metadata": {"name": "cv-cq"}, "spec": {"stopPolicy": "Hold"}, "status": {}},
        ]
    }
    cluster = Listing(queues)
    monkeypatch.setattr(status, "connect", lambda stack, root: (cluster, stack, None))
    assert status.admitted_of("staging", ROOT) == {"ml-cq": 3, "cv-cq": 0}
    assert cluster.asked == ["/apis/kueue.x-k8s.io/v1beta2/clusterqueues"]
    cluster.answer = OSError("connection refused")
    assert status.admitted_of("staging", ROOT) == "the cluster did not answer: connection refused"
    monkeypatch.undo()
    # No stack file: the reason, never a traceback.
    assert status.admitted_of("nope", project).startswith("cannot read stack 'nope'")


def _workload(namespace: str, name: str, queue: str, admitted: bool, created: str) -> object:
    reserved = {
        "type": "QuotaReserved",
        "status": "True" if admitted else "False",
        "lastTransitionTime": "2026-12-05T10:05:00Z",
        "message": ""
        if admitted
        else "couldn't assign flavors to pod set main: insufficient quota",
    }
    status: dict[str, object] = {"conditions": [reserved]}
    if admitted:
        status["admission"] = {
            "clusterQueue": "research-cq",
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "h100"}}],
        }
    return {
        "metadata": {
            "name": f"job-{name}",
            "namespace": namespace,
            "creationTimestamp": created,
            "ownerReferences": [{"kind": "Job", "name": name, "uid": f"uid-{name}"}],
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}]}
                    },
                }
            ],
        },
        "status": status,
    }


class TwoQueues:
    """A cluster where team research has two LocalQueues in two namespaces, gpu-queue in
    team-research and eval-queue in team-research-eval, both of research-cq; vision's queue
    and workload are there too and must stay out of research's reading."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get(self, path: str) -> object:
        self.asked.append(path)
        kueue, visibility = status.KUEUE, status.VISIBILITY
        answers: dict[str, object] = {
            f"{kueue}/localqueues": {
                "items": [
                    {
                        "metadata": {"name": "gpu-queue", "namespace": "team-research"},
                        "spec": {"clusterQueue": "research-cq"},
                    },
                    {
                        "metadata": {"name": "eval-queue", "namespace": "team-research-eval"},
                        "spec": {"clusterQueue": "research-cq"},
                    },
                    {
                        "metadata": {"name": "gpu-queue", "namespace": "team-vision"},
                        "spec": {"clusterQueue": "vision-cq"},
                    },
                ]
            },
            f"{kueue}/workloads": {
                "items": [
                    _workload("team-research", "train", "gpu-queue", True, "2026-12-05T10:00:00Z"),
                    _workload(
                        "team-research-eval", "eval", "eval-queue", False, "2026-12-05T10:01:00Z"
                    ),
                    _workload("team-research", "sweep", "gpu-queue", False, "2026-12-05T10:02:00Z"),
                    _workload("team-vision", "seg", "gpu-queue", True, "2026-12-05T10:03:00Z"),
                ]
            },
            f"{visibility}/clusterqueues/research-cq/pendingworkloads": {
                "items": [
                    {
                        "metadata": {"name": "job-eval", "namespace": "team-research-eval"},
                        "positionInClusterQueue": 0,
                        "positionInLocalQueue": 0,
                    },
                    {
                        "metadata": {"name": "job-sweep", "namespace": "team-research"},
                        "positionInClusterQueue": 1,
                        "positionInLocalQueue": 0,
                    },
                ]
            },
        }
        if path.startswith("/api/v1/namespaces/"):
            return {"items": []}
        return answers[path]


def test_a_team_with_two_local_queues_shows_the_workloads_of_both() -> None:
    cluster = TwoQueues()
    run = status.read_status(cluster, [("research", "research-cq")], 1796464800.0, "test")
    rows = {(w.namespace, w.name): w for w in run.workloads}
    assert sorted(rows) == [
        ("team-research", "sweep"),
        ("team-research", "train"),
        ("team-research-eval", "eval"),
    ]
    assert rows["team-research", "train"].outcome == "admitted"
    assert rows["team-research", "train"].queue == "gpu-queue"
    evaluation = rows["team-research-eval", "eval"]
    assert (evaluation.outcome, evaluation.queue, evaluation.team) == (
        "pending",
        "eval-queue",
        "research",
    )
    assert evaluation.message is not None
    assert evaluation.message.startswith(
        "position 0 in ClusterQueue research-cq, 0 in LocalQueue eval-queue"
    )
    assert (rows["team-research", "sweep"].message or "").startswith(
        "position 1 in ClusterQueue research-cq, 0 in LocalQueue gpu-queue"
    )
    # Kueue's pending list is asked once, of the ClusterQueue both queues feed.
    assert (
        cluster.asked.count(f"{status.VISIBILITY}/clusterqueues/research-cq/pendingworkloads") == 1
    )
    [team] = run.teams
    assert team.team == "research"
    shown = status.render(run)
    assert "team-research-eval" in shown and "eval-queue" in shown
    assert "team-vision" not in shown


def _owned(wl: object, *refs: dict[str, object]) -> dict[str, object]:
    """The workload, owned by `refs` instead of its Job."""
    owned = dict(wl)  # type: ignore[call-overload]
    owned["metadata"] = {**owned["metadata"], "ownerReferences": list(refs)}
    return owned


def _ref(kind: str, name: str, controller: bool = True) -> dict[str, object]:
    return {"kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}


def _unschedulable_pod(name: str, *refs: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "ownerReferences": list(refs)},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": f"0/4 nodes are available ({name})",
                }
            ],
        },
    }


def _evicted_then_gone(wl: dict[str, object]) -> dict[str, object]:
    """The workload preempted once, then finished because its owner is gone."""
    conditions = [
        {"type": "Evicted", "status": "False", "reason": "Preempted", "message": "preempted"},
        {
            "type": "Finished",
            "status": "True",
            "reason": "OwnerNotFound",
            "lastTransitionTime": "2026-12-05T10:30:00Z",
            "message": "owner gone",
        },
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": ""},
    ]
    wl["status"] = {
        "conditions": conditions,
        "schedulingStats": {"evictions": [{"reason": "Preempted", "count": 1}]},
    }
    return wl


class Kinds:
    """A team's cluster of every shape of owner: a JobSet whose pod (owned by one of its Jobs)
    the scheduler cannot place; a pod group (a Workload owned by its two Pods); a RayCluster
    its user deleted after an earlier preemption; a plain Pod Kueue preempted (deleted)."""

    def get(self, path: str) -> object:
        train = _owned(
            _workload("ml", "train", "q", True, "2026-12-05T10:00:00Z"), _ref("JobSet", "train")
        )
        group = _owned(
            _workload("ml", "grp", "q", False, "2026-12-05T10:01:00Z"),
            _ref("Pod", "grp-0", False),
            _ref("Pod", "grp-1", False),
        )
        group["metadata"]["name"] = "grp"  # type: ignore[index]
        ray = _owned(
            _workload("ml", "ray", "q", False, "2026-12-05T10:02:00Z"), _ref("RayCluster", "ray")
        )
        pod = _owned(_workload("ml", "p", "q", False, "2026-12-05T10:03:00Z"), _ref("Pod", "p"))
        answers: dict[str, object] = {
            f"{status.KUEUE}/localqueues": {
                "items": [
                    {
                        "metadata": {"name": "q", "namespace": "ml"},
                        "spec": {"clusterQueue": "ml-cq"},
                    }
                ]
            },
            f"{status.KUEUE}/workloads": {
                "items": [train, group, _evicted_then_gone(ray), _evicted_then_gone(pod)]
            },
            f"{status.VISIBILITY}/clusterqueues/ml-cq/pendingworkloads": {"items": []},
            "/api/v1/namespaces/ml/pods?fieldSelector=status.phase%3DPending": {
                "items": [_unschedulable_pod("train-workers-0-0", _ref("Job", "train-workers-0"))]
            },
            "/apis/batch/v1/namespaces/ml/jobs": {
                "items": [
                    {
                        "metadata": {
                            "name": "train-workers-0",
                            "uid": "uid-train-workers-0",
                            "ownerReferences": [_ref("JobSet", "train")],
                        }
                    }
                ]
            },
        }
        return answers[path]


def test_every_owner_kind_is_named_and_read_as_kueue_treats_it() -> None:
    run = status.read_status(Kinds(), [("ml", "ml-cq")], 1796464800.0, "test")
    rows = {w.name: w for w in run.workloads}
    assert sorted(rows) == ["grp", "p", "ray", "train"]
    # The JobSet's pod is found through its Job: admitted, but its pods fit no node.
    train = rows["train"]
    assert (train.kind, train.outcome) == ("JobSet", "unschedulable")
    assert train.message == "0/4 nodes are available (train-workers-0-0)"
    # A pod group is named by its Workload (the group's name), its kind Pod.
    assert (rows["grp"].kind, rows["grp"].outcome) == ("Pod", "pending")
    # Deleted by its user after a preemption: finished, not "preempted" (Kueue suspends a
    # RayCluster to preempt it; only a plain Pod is deleted for one).
    assert (rows["ray"].kind, rows["ray"].outcome) == ("RayCluster", "finished")
    assert (rows["p"].kind, rows["p"].outcome) == ("Pod", "preempted")
    assert "nothing makes a plain Pod again" in (rows["p"].message or "")
