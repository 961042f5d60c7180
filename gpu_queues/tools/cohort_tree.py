"""The cohort tree of a stack, old against new, for quota-diff and the PR comment: per node
(each Cohort, and each team's ClusterQueue under its cohort) its parent, fair-sharing weight
and own GPU quota (nominal, borrowing and lending limits), as a table and as a Mermaid tree.

Read from the objects the program renders (gpu_queues/config/render.py), so the diff shows what
Kueue gets. Only a stack with a tree (`cohorts`) on either side has the section: the one-cohort
form has no quota or weight of its own to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_queues.config import render
from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.errors import child
from gpu_queues.values import as_list
from gpu_queues.whatif.gpus import is_gpu

ABSENT = "-"
Limits = tuple[str | None, str | None, str | None]


@dataclass(frozen=True)
class Node:
    """A node of the tree: a Cohort or a team's ClusterQueue."""

    kind: str  # "cohort" or "team"
    name: str
    parent: str | None
    weight: str | None
    quotas: dict[tuple[str, str], Limits] = field(default_factory=dict)


def _quotas(obj: Mapping[str, Any]) -> dict[tuple[str, str], Limits]:
    out: dict[tuple[str, str], Limits] = {}
    for group in as_list(child(obj, "spec", "resourceGroups")):
        for flavor in as_list(child(group, "flavors")):
            for quota in as_list(child(flavor, "resources")):
                name = str(child(quota, "name"))
                if is_gpu(name):
                    out[str(child(flavor, "name")), name] = (
                        _str(child(quota, "nominalQuota")),
                        _str(child(quota, "borrowingLimit")),
                        _str(child(quota, "lendingLimit")),
                    )
    return out


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def nodes(config: StackConfig) -> dict[str, Node]:
    """The tree's nodes by name (a team's by its team name), cohorts first, in config order."""
    out: dict[str, Node] = {}
    for obj in render.cohorts(config):
        name = str(obj["metadata"]["name"])
        spec = obj.get("spec", {})
        weight = _str(child(spec, "fairSharing", "weight"))
        out[name] = Node("cohort", name, spec.get("parentName"), weight, _quotas(obj))
    for team in config.teams:
        cq = render.cluster_queue(team)
        weight = _str(child(cq, "spec", "fairSharing", "weight"))
        out[team.name] = Node("team", team.name, team.cohort, weight, _quotas(cq))
    return out


def has_tree(config: StackConfig) -> bool:
    return bool(config.cohorts)


@dataclass(frozen=True)
class TreeRow:
    node: str
    kind: str
    parent: tuple[str | None, str | None]
    weight: tuple[str | None, str | None]
    quota: str  # "flavor resource", or "" for a node without GPU quota
    limits: tuple[Limits | None, Limits | None]
    added: bool
    removed: bool

    @property
    def change(self) -> str:
        if self.added:
            return "added"
        if self.removed:
            return "removed"
        moved = self.parent[0] != self.parent[1] or self.weight[0] != self.weight[1]
        return "changed" if moved or self.limits[0] != self.limits[1] else ""


def tree_rows(before: StackConfig, after: StackConfig) -> list[TreeRow]:
    """One row per node and GPU quota (one for a node without any), old against new."""
    old, new = nodes(before), nodes(after)
    rows: list[TreeRow] = []
    for name in [*old, *(n for n in new if n not in old)]:
        b, a = old.get(name), new.get(name)
        quotas = [*(b.quotas if b else {}), *(a.quotas if a else {})]
        keys: list[tuple[str, str] | None] = list(dict.fromkeys(quotas)) or [None]
        rows += [_row(name, b, a, key) for key in keys]
    return rows


def _row(name: str, b: Node | None, a: Node | None, key: tuple[str, str] | None) -> TreeRow:
    kind = (a or b or Node("team", name, None, None)).kind
    return TreeRow(
        name,
        kind,
        (b.parent if b else None, a.parent if a else None),
        (b.weight if b else None, a.weight if a else None),
        f"{key[0]} {key[1]}" if key else "",
        (b.quotas.get(key) if b and key else None, a.quotas.get(key) if a and key else None),
        added=b is None,
        removed=a is None,
    )


def _cell(before: str | None, after: str | None, row: TreeRow) -> str:
    b = ABSENT if before is None else before
    a = ABSENT if after is None else after
    if row.added:
        return a
    if row.removed:
        return b
    return a if b == a else f"{b} → **{a}**"


def table(rows: list[TreeRow]) -> list[str]:
    """The Markdown table of the tree's rows."""
    lines = [
        "| Node | Parent | Weight | GPU quota | Nominal | Borrowing limit | Lending limit "
        "| Change |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        b = r.limits[0] or (None, None, None)
        a = r.limits[1] or (None, None, None)
        name = r.node if r.kind == "cohort" else f"team {r.node}"
        cells = [
            name,
            _cell(*r.parent, r),
            _cell(*r.weight, r),
            r.quota or ABSENT,
            *(_cell(b[i], a[i], r) for i in range(3)),
            r.change,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _label(text: str) -> str:
    """Text Mermaid shows as written inside a quoted label."""
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def mermaid(before: StackConfig, after: StackConfig) -> list[str]:
    """The new tree as a Mermaid flowchart: cohorts as boxes, teams as rounded nodes, each with
    its weight and own GPUs (old → new where they changed); removed nodes are left out."""
    old, new = nodes(before), nodes(after)
    ids = {name: f"n{i}" for i, name in enumerate(new)}
    lines = ["```mermaid", "flowchart TD"]
    for name, node in new.items():
        was = old.get(name)
        parts = [name if node.kind == "cohort" else f"team {name}"]
        weight = node.weight or "1"
        old_weight = (was.weight or "1") if was else weight
        if weight != "1" or old_weight != "1":
            parts.append(
                f"weight {weight}" if old_weight == weight else f"weight {old_weight} → {weight}"
            )
        gpus = sum(int(float(q[0] or 0)) for q in node.quotas.values())
        old_gpus = sum(int(float(q[0] or 0)) for q in was.quotas.values()) if was else gpus
        if gpus or old_gpus:
            parts.append(f"{gpus} GPUs" if gpus == old_gpus else f"{old_gpus} → {gpus} GPUs")
        text = _label(" · ".join(parts))
        shape = f'["{text}"]' if node.kind == "cohort" else f'("{text}")'
        lines.append(f"    {ids[name]}{shape}")
    for name, node in new.items():
        if node.parent in ids:
            lines.append(f"    {ids[node.parent]} --> {ids[name]}")
    lines.append("```")
    return lines


def section(before: StackConfig, after: StackConfig, changes_only: bool = False) -> list[str]:
    """The tree's Markdown section ([] when neither side has a tree): the table (its changed
    rows only, with `changes_only`), then the whole new tree."""
    if not (has_tree(before) or has_tree(after)):
        return []
    rows = [r for r in tree_rows(before, after) if r.change or not changes_only]
    lines = ["#### Cohort tree", ""]
    lines += [*table(rows), ""] if rows else ["No change in the cohort tree.", ""]
    return [*lines, *mermaid(before, after), ""]
