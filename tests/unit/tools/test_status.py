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
