"""LeaderWorkerSets on the fast engine, from the mix a user writes to the report (one row per
LWS: admitted once all its groups are, each group a Workload of Kueue's), held to truths worked
out by hand; and the docs' example as its comment says. The engine's own truths, to the second,
are in toolchain/go/whatif/lws_test.go; tests/e2e/test_lws.py holds both engines to one story."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.whatif import fast
from tests.toolchain.test_whatif_engine import by_name, one_queue, replay, waits

pytestmark = pytest.mark.toolchain


def lws(name: str, groups: int, size: int, gpus: int, at: int, runs: int | None) -> dict[str, Any]:
    """Team a's LWS of `groups` groups of `size` pods (a leader and size - 1 workers) of `gpus`
    GPUs each, submitted `at`, kept `runs` seconds after all its groups run (to the end
    without)."""
    notes = {"gpu-queues.dev/submit-at": f"{at}s"}
    if runs is not None:
        notes["gpu-queues.dev/duration"] = f"{runs}s"
    res = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": str(gpus)}}

    def template(role: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": role, "image": "x", "resources": res}]}}

    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "team-a", "annotations": notes,
                     "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
        "spec": {"replicas": groups, "leaderWorkerTemplate": {
            "size": size, "leaderTemplate": template("leader"),
            "workerTemplate": template("worker")}},
    }  # fmt: skip


def job(name: str, gpus: int, at: int, runs: int) -> dict[str, Any]:
    """Team a's Job of one pod of `gpus` GPUs, submitted `at`, running `runs` seconds."""
    res = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team-a",
                     "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"},
                     "annotations": {"gpu-queues.dev/submit-at": f"{at}s",
                                     "gpu-queues.dev/duration": f"{runs}s"}},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "m", "image": "x", "resources": res}]}}},
    }  # fmt: skip


def test_an_lws_is_admitted_when_its_last_group_is(tmp_path: Path) -> None:
    """One queue of 8 GPUs: Job a (4 GPUs) runs 0-600 s; LWS w (two groups of a leader and a
    worker of 1 GPU, 2 GPUs a group) at 60 s: group 0 is admitted at once (4+2), group 1 too
    (4+2+2 = 8); LWS v (one group of 2 pods of 2 GPUs, 4 GPUs) at 120 s waits for a (8 in use)
    and is admitted at 600 s. w's row: admitted at 60 s, 4 GPUs; v's: waited 480 s."""
    run = replay(
        one_queue("BestEffortFIFO"),
        [job("a", 4, 0, 600), lws("w", 2, 2, 1, 60, None), lws("v", 1, 2, 2, 120, 300)],
        tmp_path,
        until=3600,
    )
    rows = by_name(run)
    assert waits(run) == {"a": 0, "w": 0, "v": 480}
    assert (rows["w"].outcome, rows["w"].gpus, rows["w"].message) == ("admitted", 4, None)
    assert (rows["v"].outcome, rows["v"].gpus) == ("finished", 4)
    assert rows["v"].intervals == [(600, 900)]  # deleted 300 s after its group ran


def test_an_lws_short_of_quota_for_a_group_is_pending_counting_its_groups(tmp_path: Path) -> None:
    """One queue of 8 GPUs: LWS w (three groups of 2 pods of 2 GPUs, 4 GPUs a group) at 0 s:
    two groups admitted, the third never; the row is pending, saying so with Kueue's
    message."""
    run = replay(one_queue("BestEffortFIFO"), [lws("w", 3, 2, 2, 0, None)], tmp_path, until=600)
    (w,) = run.workloads
    assert (w.outcome, w.gpus) == ("pending", 12)
    assert (w.message or "").startswith("2 of 3 groups admitted: couldn't assign flavors"), (
        w.message
    )


def test_the_docs_lws_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/leaderworkerset.yaml on staging as it stands: unsupported, naming
    leaderworkerset; with it added, research's 4 H100 are free, so both groups (a leader and a
    worker of one H100 each) are admitted the second it is submitted (1h); it serves its 3h (to
    4h) and, deleted then by its user, is finished."""
    from sandbox.shape import load_stack

    root = Path(__file__).resolve().parents[2]
    example = root / "docs" / "examples" / "mixes" / "leaderworkerset.yaml"
    staging = (root / "Pulumi.staging.yaml").read_text()
    (w,) = fast.replay_mix(
        load_stack(root / "Pulumi.staging.yaml"), example, stack="staging", label="example"
    ).workloads
    assert (w.kind, w.outcome) == ("LeaderWorkerSet", "unsupported")
    assert "leaderworkerset.x-k8s.io/leaderworkerset is not enabled" in (w.message or "")
    framework = "kubeflow.org/pytorchjob, leaderworkerset.x-k8s.io/leaderworkerset]"
    added = staging.replace("kubeflow.org/pytorchjob]", framework)
    assert added != staging
    (tmp_path / "Pulumi.staging.yaml").write_text(added)
    config = load_stack(tmp_path / "Pulumi.staging.yaml")
    (w,) = fast.replay_mix(config, example, stack="staging", label="example").workloads
    assert (w.kind, w.outcome, w.flavor, w.wait_seconds, w.gpus, w.message) == (
        "LeaderWorkerSet", "finished", "h100", 0, 4, None,
    )  # fmt: skip
    assert w.intervals == [(3600, 14400)]


def test_the_e2e_lws_mix_on_the_fast_engine_admits_serve_wide_group_by_group() -> None:
    """tests/e2e/whatif/lws-mix on the local stack (one queue of 8 GPUs), serve-wide included:
    serve-a (5 GPUs) from 0 s; at 3m serve-wide's group 0 (2 GPUs) fits the 3 left, group 1
    not; batch-a (4), the head, and serve-b (5) wait. serve-a deleted at 30m frees 5: batch-a
    is admitted (6 free, 2 left), then serve-wide's group 1 (2): the row is admitted at 30m,
    waited 27m. batch-a ends at 40m: 4 free, serve-b's 5 do not fit, and it is pending with
    Kueue's message for its worker pod set (its leader's 1 GPU assigned first), alone: one
    group is one Workload, as the sandbox's row of it says."""
    from sandbox.shape import load_stack

    root = Path(__file__).resolve().parents[2]
    config = load_stack(root / "Pulumi.local.yaml")
    mix = root / "tests" / "e2e" / "whatif" / "lws-mix"
    rows = by_name(fast.replay_mix(config, mix, stack="local", label="local"))
    got = {k: (r.outcome, r.wait_seconds) for k, r in rows.items()}
    assert got == {
        "serve-a": ("finished", 0),
        "batch-a": ("finished", 1740),
        "serve-b": ("pending", None),
        "serve-wide": ("admitted", 1620),
        "serve-bad": ("invalid", None),
    }
    assert rows["serve-wide"].intervals == [(1800, None)]  # both groups running from 30m
    assert rows["serve-b"].message == (
        "couldn't assign flavors to pod set worker: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu-flavor, 1 more needed"
    )
