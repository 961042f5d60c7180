"""A rehearsal's results: a cell per check (what it found, what the cluster said when it
failed), a row per team, and the table printed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Cell:
    ok: bool
    text: str
    said: str = ""
    """What the cluster said, when the check failed."""


@dataclass
class Row:
    team: str
    cluster_queue: str
    flavors: str
    quota: str
    admitted: Cell
    held: Cell
    too_big: Cell | None
    rbac: Cell

    def cells(self) -> dict[str, Cell]:
        out = {"job admitted": self.admitted, "job held": self.held, "RBAC": self.rbac}
        if self.too_big is not None:
            out["one pod > a node"] = self.too_big
        return out

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells().values())


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[Row]) -> str:
    head = [
        "team",
        "ClusterQueue",
        "flavor",
        "nominal / borrowing limit",
        "job admitted",
        "job held + message",
        "one pod > a node",
        "RBAC",
        "result",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        values = [
            r.team,
            r.cluster_queue,
            r.flavors,
            r.quota,
            r.admitted.text,
            r.held.text,
            r.too_big.text if r.too_big else "-",
            r.rbac.text,
            "pass" if r.ok else "FAIL",
        ]
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines)
