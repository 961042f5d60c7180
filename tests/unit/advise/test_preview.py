"""How the advisor reads a failed `pulumi preview` (gpu_queues/advise/preview.py, failure)."""

from __future__ import annotations

import pytest

from gpu_queues.advise.preview import failure

pytestmark = pytest.mark.unit

POLICY_RUN = """\
Previewing update (prod):
    gpu-queues@v0.1.0 [mandatory]  clusterqueue-namespace-selector-not-all  (kubernetes:...)
    gpu-queues@v0.1.0 [advisory]  kueue-release-checksum  (kubernetes:...)
    gpu-queues@v0.1.0 [mandatory]  clusterqueue-covers-cpu-memory  (kubernetes:...)
    gpu-queues@v0.1.0 [mandatory]  clusterqueue-namespace-selector-not-all  (kubernetes:...)
error: preview failed
KeyboardInterrupt
"""


def test_the_mandatory_policies_violated_are_named_once_each_in_order() -> None:
    assert failure(POLICY_RUN, 255) == (
        "mandatory policy violated: clusterqueue-namespace-selector-not-all, "
        "clusterqueue-covers-cpu-memory (error: preview failed)"
    )


def test_without_a_policy_the_first_error_line_is_the_reason() -> None:
    said = "Previewing update (prod):\nerror: configured Kubernetes cluster is unreachable\n" \
        "error: preview failed\nbye\n"  # fmt: skip
    assert failure(said, 255) == "error: configured Kubernetes cluster is unreachable"


def test_without_an_error_line_the_last_line_or_the_exit_status() -> None:
    assert failure("one\ntwo\n", 3) == "two"
    assert failure("\n", 3) == "exit 3"
