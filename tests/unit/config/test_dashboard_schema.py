"""The generated Grafana dashboard against Grafana's dashboard schema (issue 26, item 3).

No Grafana server can be run here: Grafana is AGPL (not to be used by this project) and no
registry reachable from this machine packages one (Debian does not ship it). So the JSON is
checked against the schema Grafana publishes as TypeScript types, pinned in tests/js/grafana/
(@grafana/schema 13.2.3: the dashboard model and the time series panel's options; the
foundation SDK 0.0.21: the Prometheus query), with the pinned TypeScript compiler: the
dashboard becomes one object literal whose panels and queries are each marked `satisfies`
their type, so an unknown or misspelt field fails as a wrong type does. Broken dashboards are
fed too: the check must refuse them, or this test could not fail.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / ".cache" / "node" / "grafana"
PRELUDE = ROOT / "tests" / "js" / "grafana" / "schema.ts"
TSC = MODULES / "node_modules" / "typescript" / "bin" / "tsc"


def _literal(value: Any) -> str:
    return json.dumps(value, indent=1)


def _with(obj: dict[str, Any], key: str, items: list[str]) -> str:
    """`obj` as an object literal with `key` holding the given element expressions."""
    rest = {k: v for k, v in obj.items() if k != key}
    head = _literal(rest)[:-1].rstrip()
    comma = "," if rest else ""
    elements = ",\n".join(items)
    return f"{head}{comma}\n {json.dumps(key)}: [\n{elements}]\n}}"


def typescript(board: dict[str, Any]) -> str:
    """The dashboard as TypeScript: each panel and query checked against its type."""
    panels = []
    for panel in board.get("panels", []):
        if panel.get("type") == "row":
            panels.append(f"({_literal(panel)}) satisfies Row")
            continue
        queries = [f"({_literal(t)}) satisfies PromQuery" for t in panel.get("targets", [])]
        panels.append(f"({_with(panel, 'targets', queries)}) satisfies TimeSeries")
    body = _with(board, "panels", panels)
    return f"{PRELUDE.read_text()}\nexport const dashboard: Board = {body};\n"


def check(boards: dict[str, dict[str, Any]]) -> dict[str, str]:
    """tsc's complaints about each dashboard ('' when it fits the schema), in one compiler run
    (it reads Grafana's types once)."""
    node = shutil.which("node")
    if node is None or not (MODULES / ".stamp").exists():
        pytest.fail("Grafana's schema is not installed here: run `make grafana` (make test does)")
    with tempfile.TemporaryDirectory(dir=MODULES, prefix="check-") as work:
        files = {}
        for name, board in boards.items():
            files[name] = Path(work) / f"{name}.ts"
            files[name].write_text(typescript(board))
        config = {
            "compilerOptions": {
                "strict": True,
                "noEmit": True,
                "module": "nodenext",
                "moduleResolution": "nodenext",
                "target": "es2022",
                "skipLibCheck": True,
                "types": [],
            },
            "files": [str(f) for f in files.values()],
        }
        (Path(work) / "tsconfig.json").write_text(json.dumps(config))
        done = subprocess.run(
            [node, str(TSC), "-p", str(Path(work) / "tsconfig.json"), "--pretty", "false"],
            capture_output=True, text=True, timeout=300, check=False, cwd=work,
        )  # fmt: skip
    assert done.returncode in (0, 1, 2), done.stderr  # 1, 2: type errors were reported
    found = {name: "" for name in boards}
    owner = None
    for line in done.stdout.splitlines():
        if not line[:1].isspace():  # an error's first line names its file; the rest indent
            owner = next((n for n in boards if line.startswith(f"{n}.ts(")), None)
        if owner is not None:
            found[owner] += line + "\n"
    return found


def prod_board() -> dict[str, Any]:
    raw = stack_raw("prod")
    raw["kueue"] = {**raw.get("kueue", {}), "metrics": {"dashboard": {"enabled": True}}}
    return dashboard(load_config(raw))


def org_board() -> dict[str, Any]:
    """The worked organisation's (docs/organisations.md): a panel per cohort of its tree and
    per LocalQueue of its teams."""
    path = ROOT / "docs" / "examples" / "organisation" / "Pulumi.org.yaml"
    raw = parse_config(path.read_text(encoding="utf-8"), path.name)
    raw["kueue"] = {**raw.get("kueue", {}), "metrics": {"dashboard": {"enabled": True}}}
    return dashboard(load_config(raw))


@pytest.fixture(scope="module")
def board() -> dict[str, Any]:
    return prod_board()


def test_the_prod_dashboard_fits_grafanas_schema(complaints: dict[str, str]) -> None:
    assert complaints["prod"] == ""


def test_a_cohort_trees_dashboard_fits_grafanas_schema(complaints: dict[str, str]) -> None:
    board = org_board()
    titles = [p["title"] for p in board["panels"]]
    assert "Cohort research: GPUs reserved / subtree quota" in titles
    assert "LocalQueue llm-eval/evaluation" in titles
    assert complaints["org"] == ""


def broken(board: dict[str, Any], change: str) -> dict[str, Any]:
    bad = copy.deepcopy(board)
    panel = next(p for p in bad["panels"] if p["type"] == "timeseries")
    if change == "misspelt panel field":
        panel["gridPoss"] = panel.pop("gridPos")
    elif change == "misspelt query field":
        panel["targets"][0]["legend"] = panel["targets"][0].pop("legendFormat")
    elif change == "wrong type":
        panel["options"]["legend"]["showLegend"] = "yes"
    elif change == "unknown legend mode":
        panel["options"]["legend"]["displayMode"] = "sideways"
    elif change == "query without expr":
        del panel["targets"][0]["expr"]
    elif change == "row without collapsed":
        del next(p for p in bad["panels"] if p["type"] == "row")["collapsed"]
    return bad


CHANGES = {
    "misspelt panel field": "'\"gridPoss\"' does not exist",
    "misspelt query field": "'\"legend\"' does not exist",
    "wrong type": "not assignable to type 'boolean'",
    "unknown legend mode": '"sideways"',
    "query without expr": "'expr'",
    "row without collapsed": "'collapsed'",
}


@pytest.fixture(scope="module")
def complaints(board: dict[str, Any]) -> dict[str, str]:
    boards = {"prod": board, "org": org_board()}
    boards |= {c.replace(" ", "-"): broken(board, c) for c in CHANGES}
    return check(boards)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("misspelt panel field", "'\"gridPoss\"' does not exist"),
        ("misspelt query field", "'\"legend\"' does not exist"),
        ("wrong type", "not assignable to type 'boolean'"),
        ("unknown legend mode", '"sideways"'),
        ("query without expr", "'expr'"),
        ("row without collapsed", "'collapsed'"),
    ],
)
def test_a_broken_dashboard_is_refused(complaints: dict[str, str], change: str, words: str) -> None:
    found = complaints[change.replace(" ", "-")]
    assert "error TS" in found and words in found, found
