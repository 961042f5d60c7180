"""What the program registers for the scale benchmark's 10-team stack, pinned.

Changes made for speed (components/, __main__.py) must leave the registrations alone: the
same resources, with the same type, name, parent, inputs, provider, options and dependencies
(depends_on as a set), and the same component outputs. The expected set was recorded from the
program before those changes (tests/unit/components/data/registrations-10-teams.jsonl, one
resource per line, by URN). A change that is meant to alter what is registered rewrites it
deliberately: `python -m tests.unit.components.test_registration_set` (and the diff shows what
changed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox.bench import scale as bench
from sandbox.bench.under_mocks import registrations
from tests.golden.recording import through_aliases

pytestmark = pytest.mark.unit

EXPECTED = Path(__file__).parent / "data" / "registrations-10-teams.jsonl"
TEAMS, PREFIX = 10, "r"


def current() -> dict[str, Any]:
    """As a stack made before matches them (GpuQueues' retyping, through its alias)."""
    return through_aliases(registrations(bench.team_config(TEAMS, PREFIX)))


def expected() -> dict[str, Any]:
    lines = EXPECTED.read_text().splitlines()
    return {entry["urn"]: entry["registered"] for entry in map(json.loads, lines)}


def write(found: dict[str, Any]) -> None:
    EXPECTED.write_text(
        "".join(
            json.dumps({"urn": urn, "registered": found[urn]}, sort_keys=True) + "\n"
            for urn in sorted(found)
        )
    )


def test_the_10_team_stack_registers_what_it_registered_before():
    found, wanted = current(), expected()
    assert sorted(found) == sorted(wanted), "resources added or gone"
    changed = [urn for urn in wanted if found[urn] != wanted[urn]]
    assert not changed, f"{len(changed)} registrations changed, the first: {changed[0]}"
    assert found == wanted


def test_the_record_holds_what_the_check_is_about():
    """The pinned set has every resource a team brings, with parents, inputs and
    dependencies: a record reduced to names would pass anything."""
    wanted = expected()
    registers = [e["register"] for e in wanted.values() if "register" in e]
    kinds = [r["type"] for r in registers]
    assert kinds.count("gpu-queues:queues:TeamQueues") == TEAMS
    assert kinds.count("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue") == TEAMS
    assert len([r for r in registers if r["type"].startswith("kubernetes:")]) == 7 * TEAMS + 2
    queue = next(r for r in registers if r["type"].endswith(":ClusterQueue"))
    assert queue["parent"].endswith("TeamQueues::gpu-queues-r-t000")
    assert queue["object"]["spec"]["resourceGroups"] and queue["dependencies"]
    local = next(r for r in registers if r["type"].endswith(":LocalQueue"))
    assert local["replaceOnChanges"] == ["spec.clusterQueue"] and local["deleteBeforeReplace"]


if __name__ == "__main__":
    write(current())
    sys.exit(0)
