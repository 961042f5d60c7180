"""The scale benchmark's tables and goals (issue 14), from the measured sizes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sandbox.bench.generated import objects_per_stack
from sandbox.bench.measure import Step
from sandbox.bench.under_mocks import MOCKS_KINDS


@dataclass
class Size:
    teams: int
    steps: dict[str, Step] = field(default_factory=dict)
    mocks: dict[str, float] = field(default_factory=dict)
    """CPU seconds to evaluate the program under mocks: "ours", "shaped" (the trivial program
    with objects shaped like ours) and "trivial"."""

    @property
    def objects(self) -> int:
        return objects_per_stack(self.teams)

    def s(self, step: str) -> float:
        return self.steps[step].seconds


PREVIEW, UP, NOOP_UP, NOOP_PREVIEW = "preview", "up", "no-op up", "no-op preview"
K_APPLY, K_NOOP = "kubectl apply", "kubectl no-op"
T_PREVIEW, T_UP, T_NOOP_UP = "trivial preview", "trivial up", "trivial no-op up"
NO_CHANGES = "--expect-no-changes"  # a no-op step that changes anything fails the benchmark


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f} s"


def _x(ratio: float) -> str:
    return f"{ratio:.1f}x"


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _times(sizes: Sequence[Size]) -> list[str]:
    """Wall time of every step, per size, with the load it ran under."""
    lines = [
        "| teams (objects) | pulumi preview (create) | pulumi up (create) "
        "| kubectl apply (create) | no-op up | no-op preview | no-op kubectl apply "
        "| trivial preview | trivial up | trivial no-op up | load (1 min) |",
        "|---" * 11 + "|",
    ]
    for z in sizes:
        loads = [st.load for st in z.steps.values()]
        cells = [
            f"{z.teams} ({z.objects:,})",
            *(seconds_text(z.s(k)) for k in (PREVIEW, UP, K_APPLY, NOOP_UP, NOOP_PREVIEW, K_NOOP)),
            *(seconds_text(z.s(k)) for k in (T_PREVIEW, T_UP, T_NOOP_UP)),
            f"{min(loads):.1f}-{max(loads):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _ratios(sizes: Sequence[Size]) -> list[str]:
    """Ours against kubectl and per object, and under mocks against the trivial program."""
    lines = [
        "",
        "| teams | up / kubectl | up per object | trivial up per object "
        "| no-op up / kubectl no-op | no-op preview / kubectl no-op "
        "| mocks: ours CPU per object | mocks: trivial CPU per object | ours / trivial |",
        "|---" * 9 + "|",
    ]
    for z in sizes:
        ours_m, triv_m = z.mocks["ours"] / z.objects, z.mocks["trivial"] / z.objects
        lines.append(
            "| "
            + " | ".join(
                [
                    str(z.teams),
                    _x(z.s(UP) / z.s(K_APPLY)),
                    f"{z.s(UP) / z.objects * 1000:.0f} ms",
                    f"{z.s(T_UP) / z.objects * 1000:.0f} ms",
                    _x(z.s(NOOP_UP) / z.s(K_NOOP)),
                    _x(z.s(NOOP_PREVIEW) / z.s(K_NOOP)),
                    f"{ours_m * 1000:.1f} ms",
                    f"{triv_m * 1000:.1f} ms",
                    f"{ours_m / triv_m:.2f}",
                ]
            )
            + " |"
        )
    return lines


def _shapes(sizes: Sequence[Size]) -> list[str]:
    """Under mocks: ours, the trivial program's objects shaped like ours, plain ConfigMaps."""
    lines = [
        "",
        "Under mocks, against a trivial program registering objects of our shape (the same seven "
        "objects per team, flavor and cohort, same inputs and dependencies, flat): the floor",
        "",
        "| teams | mocks: ours CPU per object | mocks: same shape CPU per object "
        "| mocks: trivial CPU per object | ours / same shape | same shape / trivial |",
        "|---" * 6 + "|",
    ]
    for z in sizes:
        ours_m, shape_m, triv_m = (z.mocks[k] / z.objects for k in MOCKS_KINDS)
        lines.append(
            f"| {z.teams} | {ours_m * 1000:.1f} ms | {shape_m * 1000:.1f} ms | "
            f"{triv_m * 1000:.1f} ms | {ours_m / shape_m:.2f} | {shape_m / triv_m:.2f} |"
        )
    return lines


def _cpu(sizes: Sequence[Size]) -> list[str]:
    """CPU seconds per step, split by role, and the sandbox's meanwhile."""
    lines = [
        "",
        "CPU seconds (load-independent): the measured command's process tree, split by role, and "
        "the sandbox's API server + etcd + Kueue during the step",
        "",
        "| teams | step | wall | CPU (tree) | engine | provider | program | kubectl | cluster |",
        "|---" * 9 + "|",
    ]
    for z in sizes:
        for label in (PREVIEW, UP, NOOP_UP, NOOP_PREVIEW, K_APPLY, K_NOOP, T_UP):
            st = z.steps[label]
            role = st.cpu_by_role.get
            lines.append(
                f"| {z.teams} | {label} | {seconds_text(st.seconds)} | {st.cpu:.1f} | "
                f"{role('engine', 0):.1f} | {role('provider', 0):.1f} | "
                f"{role('program', 0):.1f} | {role('kubectl', 0):.1f} | {st.cluster_cpu:.1f} |"
            )
    return lines


def _goals(sizes: Sequence[Size]) -> list[str]:
    """The goals of issue 14 at the largest size, each met or not."""
    small, big = sizes[0], sizes[-1]
    growth = (big.s(UP) / big.objects) / (small.s(UP) / small.objects)
    mocks = big.mocks["ours"] / big.mocks["trivial"]
    shape, floor = (
        big.mocks["ours"] / big.mocks["shaped"],
        big.mocks["shaped"] / big.mocks["trivial"],
    )
    worst_noop = max(big.s(NOOP_UP), big.s(NOOP_PREVIEW)) / big.s(K_NOOP)
    lines = [
        "",
        f"Goals at {big.teams} teams (issue 14):",
        f"- up (create) {seconds_text(big.s(UP))}, within 60 s: {_verdict(big.s(UP) <= 60)}; "
        f"{_x(big.s(UP) / big.s(K_APPLY))} kubectl, within 6x: "
        f"{_verdict(big.s(UP) <= 6 * big.s(K_APPLY))}",
        f"- time per object, {big.teams} vs {small.teams} teams: {growth:.2f}x, within 1.5x: "
        f"{_verdict(growth <= 1.5)}",
        f"- no-op up and preview: at most {_x(worst_noop)} kubectl's no-op apply, within 3x: "
        f"{_verdict(worst_noop <= 3)}",
        f"- program under mocks: {mocks:.2f}x the trivial program per object, within 1.3x: "
        f"{_verdict(mocks <= 1.3)} (objects of our shape: {floor:.2f}x, the floor; ours is "
        f"{shape:.2f}x them)",
    ]
    return lines


def report(sizes: Sequence[Size]) -> str:
    """Every table, then the goals."""
    parts = [_times, _ratios, _shapes, _cpu, _goals]
    return "\n".join(line for part in parts for line in part(sizes))
