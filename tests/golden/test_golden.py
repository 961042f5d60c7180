"""What users see, pinned from before the restructure (issue 22, item 8).

The tree was reorganised with behaviour unchanged; these records were made by the code as it
stood before anything moved, and must stay byte-identical:
- the objects every committed stack (dev, staging, prod, local) registers under Pulumi mocks,
  Kueue release included (the unit-test manifest, pinned by its digest, as the policy tests do);
- what `make quota-diff` and `make promote ... ARGS=--dry-run` print for the committed stacks;
- the what-if report (report.md, report.json) of a fixed replay of the committed e2e mix
  (tests/e2e/whatif/mix), the outcome the e2e test works out by hand.
A change meant to alter one of them rewrites the records on purpose:
`python -m tests.golden.test_golden` (and the diff shows what changed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
STACKS = ("dev", "staging", "prod", "local")
COMMANDS = {
    "quota-diff-staging-prod": ["quota-diff", "OLD=staging", "NEW=prod"],
    "quota-diff-dev-staging": ["quota-diff", "OLD=dev", "NEW=staging"],
    "quota-diff-prod-dev-changes": ["quota-diff", "OLD=prod", "NEW=dev", "ARGS=--changes-only"],
    "promote-dev-staging": ["promote", "FROM=dev", "TO=staging", "ARGS=--dry-run"],
    "promote-staging-prod": ["promote", "FROM=staging", "TO=prod", "ARGS=--dry-run"],
}
REPLAY = DATA / "whatif-replay.json"


def registered(stack: str) -> dict[str, Any]:
    from tests.golden import recording

    return recording.through_aliases(recording.registrations_of(stack))


def command_output(name: str) -> str:
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", *COMMANDS[name]],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"


def report(which: str) -> str:
    from tests.golden import recording

    return recording.report_of(json.loads(REPLAY.read_text()), which)


def _record(path: Path, text: str) -> None:
    path.write_text(text)


def _jsonl(found: dict[str, Any]) -> str:
    return "".join(
        json.dumps({"urn": urn, "registered": found[urn]}, sort_keys=True) + "\n"
        for urn in sorted(found)
    )


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_registers_what_it_did_before_the_restructure(stack: str):
    found = _jsonl(registered(stack))
    wanted = (DATA / f"registrations-{stack}.jsonl").read_text()
    assert found.count("\n") == wanted.count("\n"), "resources added or gone"
    assert found == wanted


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_tools_print_what_they_printed_before(name: str):
    assert command_output(name) == (DATA / f"{name}.txt").read_text()


@pytest.mark.parametrize("which", ["report.md", "report.json", "compare.md", "compare.json"])
def test_the_whatif_report_reads_as_before(which: str):
    assert report(which) == (DATA / f"whatif-{which}").read_text()


def test_the_records_hold_what_the_checks_are_about():
    """A record reduced to nothing would pass anything: each holds the objects it is about."""
    dev = [json.loads(line)["registered"] for line in
           (DATA / "registrations-dev.jsonl").read_text().splitlines()]  # fmt: skip
    types = [e["register"]["type"] for e in dev if "register" in e]
    for kind in ("ClusterQueue", "LocalQueue", "ResourceFlavor", "PersistentVolumeClaim",
                 "CustomResourceDefinition", "Deployment"):  # fmt: skip
        assert any(t.endswith(f":{kind}") for t in types), kind
    assert (
        "| research | h100 | nvidia.com/gpu | 4 → **16**"
        in (DATA / "quota-diff-staging-prod.txt").read_text()
    )
    assert "nothing to do" in (DATA / "promote-staging-prod.txt").read_text()
    md = (DATA / "whatif-report.md").read_text()
    assert "a-train" in md and "b-small" in md


if __name__ == "__main__":
    for stack in STACKS:
        _record(DATA / f"registrations-{stack}.jsonl", _jsonl(registered(stack)))
    for name in COMMANDS:
        _record(DATA / f"{name}.txt", command_output(name))
    for which in ("report.md", "report.json", "compare.md", "compare.json"):
        _record(DATA / f"whatif-{which}", report(which))
    sys.exit(0)
