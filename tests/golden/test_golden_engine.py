"""What the fast what-if engine answers on the committed mixes, pinned byte for byte (issue 38,
item 8): the restructure that moves the what-if into the library, and the engine's own move to
a Go module, must leave every answer as it was. The records were made by the code as it stood
before either moved; a change meant to alter an answer rewrites them on purpose
(`python -m tests.golden.test_golden_engine`), and the diff shows what changed. The sandbox
engine is held to the same answers by tests/rehearse/test_committed_mixes.py, which requires
both engines to agree on these mixes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

DATA = Path(__file__).parent / "data"
# (stack, (its folder, its mix)): the committed days, and the e2e test's hand-worked mix on its
# stack (tests/e2e/stacks/Pulumi.local-whatif.yaml).
CASES = {
    "staging": (".", "workloads/staging"),
    "prod": (".", "workloads/prod"),
    "local-whatif": ("tests/e2e/stacks", "tests/e2e/whatif/mix"),
}
WHICH = ("report.md", "report.json")


def answer(stack: str, which: str) -> str:
    from tests.golden import recording

    folder, mix = CASES[stack]
    return recording.engine_report_of(recording.engine_run_of(stack, folder, mix), which)


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("stack", sorted(CASES))
def test_the_fast_engine_answers_the_committed_mixes_as_before(stack: str, which: str):
    assert answer(stack, which) == (DATA / f"engine-{stack}-{which}").read_text()


def test_the_records_hold_the_days_they_are_about():
    """A record reduced to nothing would pass anything: each names its mix's workloads."""
    assert "finetune-summarizer" in (DATA / "engine-staging-report.md").read_text()
    assert '"outcome": "finished"' in (DATA / "engine-prod-report.json").read_text()
    assert "a-train" in (DATA / "engine-local-whatif-report.md").read_text()


if __name__ == "__main__":
    for stack in CASES:
        for which in WHICH:
            (DATA / f"engine-{stack}-{which}").write_text(answer(stack, which))
    sys.exit(0)
