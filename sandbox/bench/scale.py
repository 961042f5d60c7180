"""Scale benchmark (issue 14): what gpu-queues costs per team, next to kubectl and a trivial
Pulumi program, on the sandbox, in one run.

For each N it generates a stack of N teams in one cohort (one flavor; per team a namespace,
ClusterQueue, LocalQueue and RBAC; `kueue.install: false`: the local stack installs Kueue
first), and times, with the real CLI, provider and file backend:
  pulumi preview (create), pulumi up (create), no-op up, no-op preview,
  kubectl apply --server-side of the very same objects (rendered from the program under
  mocks, from the same generated config with other names) and its no-op re-apply,
  the trivial program (one namespace + ConfigMaps, as many objects) up and preview,
  and the program evaluation under Pulumi mocks, ours and the trivial one, per object.
Every row records the load average: the absolute numbers are only comparable at equal load.

Usage (inside the sandbox's namespace, see `make bench-scale`):
  python -m sandbox.bench.scale [N ...]            the table (default 10 50 200)
  python -m sandbox.bench.scale mocks ours|shaped|trivial N   one mocks evaluation (a subprocess)

Its parts: the generated stacks (sandbox/bench/generated.py), the programs under mocks
(under_mocks.py), one measured step (measure.py), the three ways to apply the objects
(projects.py) and the tables (scale_report.py); the trivial program is scale_trivial.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from gpu_queues.tools import pulumi_cli
from sandbox import pulumi_stack as sandbox_stack
from sandbox.bench.generated import BENCH, objects_per_stack, team_config
from sandbox.bench.measure import Step, StepFailed, measure
from sandbox.bench.projects import (
    RUN,
    OursStack,
    TrivialStack,
    delete_objects,
    kubectl_argv,
    pulumi_env,
    rendered_manifest,
)
from sandbox.bench.scale_report import (
    K_APPLY,
    K_NOOP,
    NO_CHANGES,
    NOOP_PREVIEW,
    NOOP_UP,
    PREVIEW,
    T_NOOP_UP,
    T_PREVIEW,
    T_UP,
    UP,
    Size,
    report,
    seconds_text,
)
from sandbox.bench.under_mocks import MOCKS_KINDS, UNDER_MOCKS, mocks_main, mocks_profile_main
from sandbox.paths import KUBECONFIG, ROOT

DEFAULT_TEAMS = (10, 50, 200)


def mocks_seconds(kind: str, teams: int) -> float:
    """CPU seconds of one evaluation under mocks, in a fresh interpreter (imports not counted).

    CPU rather than wall time: the evaluation is one process, so its CPU time does not grow
    with the machine's load the way its wall time does."""
    done = subprocess.run(
        [sys.executable, "-m", "sandbox.bench.scale", "mocks", kind, str(teams)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["objects"] != objects_per_stack(teams):
        raise StepFailed(f"mocks {kind} {teams}: {result['objects']} objects, expected more")
    return float(result["cpu"])


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {message}", file=sys.stderr)


def bench_size(teams: int, run_id: str) -> Size:
    size = Size(teams)
    progress(f"{teams} teams ({size.objects} objects): program under mocks")
    size.mocks = {kind: mocks_seconds(kind, teams) for kind in MOCKS_KINDS}

    manifest = BENCH / f"kubectl-{teams}-{run_id}.yaml"
    manifest.write_text(rendered_manifest(team_config(teams, f"k{teams}-{run_id}")))
    ours_objects = BENCH / f"pulumi-{teams}-{run_id}.yaml"
    ours_objects.write_text(rendered_manifest(team_config(teams, f"p{teams}-{run_id}")))
    ours = OursStack(f"scale-{teams}-{run_id}", team_config(teams, f"p{teams}-{run_id}"))
    trivial_ns = f"t{teams}-{run_id}"
    trivial = TrivialStack(f"trivial-{teams}-{run_id}", size.objects - 1, trivial_ns)
    apply = kubectl_argv("apply", "--server-side", "--field-manager=bench", "-f", str(manifest))
    try:
        plan: list[tuple[str, Callable[[], Step]]] = [
            (K_APPLY, lambda: measure(apply, cwd=ROOT)),
            (PREVIEW, lambda: ours.run("preview")),
            (UP, lambda: ours.run("up", "--yes", "--skip-preview")),
            (NOOP_UP, lambda: ours.run("up", "--yes", "--skip-preview", NO_CHANGES)),
            (NOOP_PREVIEW, lambda: ours.run("preview", NO_CHANGES)),
            (K_NOOP, lambda: measure(apply, cwd=ROOT)),
            (T_PREVIEW, lambda: trivial.run("preview")),
            (T_UP, lambda: trivial.run("up", "--yes", "--skip-preview")),
            (
                T_NOOP_UP,
                lambda: trivial.run("up", "--yes", "--skip-preview", "--expect-no-changes"),
            ),
        ]
        for label, step in plan:
            progress(f"{teams} teams: {label}")
            size.steps[label] = step()
    finally:
        progress(f"{teams} teams: cleaning up")
        for path in (manifest, ours_objects):
            delete_objects(path)
        subprocess.run(
            kubectl_argv("delete", "namespace", trivial_ns, "--ignore-not-found", "--wait=false"),
            capture_output=True,
            check=False,
        )
        ours.remove()
        trivial.remove()
    return size


def engine_settings() -> str:
    """The engine and provider options toolchain/run puts in effect (callers may override)."""
    done = subprocess.run(
        [str(RUN), "env"], env=pulumi_env(), capture_output=True, text=True, check=True
    )
    keep = ("PULUMI_SKIP_CHECKPOINTS", "PULUMI_PARALLEL", "PULUMI_K8S_CLIENT_")
    lines = [x for x in done.stdout.splitlines() if x.startswith(keep)]
    return ", ".join(sorted(lines)) or "(CLI defaults)"


# --- the upstream causes, without a cluster ------------------------------------------------

UPSTREAM_VARIANTS: dict[str, dict[str, str]] = {
    "CLI defaults": {"PULUMI_SKIP_CHECKPOINTS": "false"},
    "skip checkpoints": {"PULUMI_SKIP_CHECKPOINTS": "true"},
    "settle": {"PULUMI_SKIP_CHECKPOINTS": "false", "BENCH_SETTLE": "true"},
    "both": {"PULUMI_SKIP_CHECKPOINTS": "true", "BENCH_SETTLE": "true"},
}


def upstream_main(sizes: Sequence[int]) -> int:
    """`pulumi up` of the trivial program in render mode (no cluster: engine, SDK and backend
    only) for each object count, with and without each workaround; prints a table."""
    state = BENCH / "upstream"
    rows = []
    for objects in sizes:
        cells = []
        for k, (variant, variant_env) in enumerate(UPSTREAM_VARIANTS.items()):
            overrides = dict(variant_env)
            name = f"repro-{objects}-{k}"
            settle = overrides.pop("BENCH_SETTLE", None) == "true"
            env = {**pulumi_cli.private_state(state), **overrides}
            stack = TrivialStack(
                name,
                objects - 1,
                f"repro-{objects}",
                render_dir=str(state / "render" / name),
                settle=settle,
                env=env,
            )
            try:
                progress(f"{objects} objects, {variant}")
                step = stack.run("up", "--yes", "--skip-preview")
            finally:
                stack.remove()
                shutil.rmtree(state / "render" / name, ignore_errors=True)
            cells.append(
                f"{seconds_text(step.seconds)} ({step.cpu_by_role.get('engine', 0):.0f}/"
                f"{step.cpu_by_role.get('program', 0):.0f} s CPU)"
            )
        rows.append(f"| {objects:,} | " + " | ".join(cells) + f" | {os.getloadavg()[0]:.1f} |")
    print(
        "`pulumi up` (create) of the trivial program in render mode; in brackets the CPU "
        "seconds of the engine / the program"
    )
    print()
    print("| objects | " + " | ".join(UPSTREAM_VARIANTS) + " | load |")
    print("|---" * (len(UPSTREAM_VARIANTS) + 2) + "|")
    print("\n".join(rows))
    return 0


def main(argv: Sequence[str]) -> int:
    if argv and argv[0] == "mocks-profile":
        return mocks_profile_main(int(argv[1]))
    if argv and argv[0] == "mocks":
        if argv[1] not in UNDER_MOCKS:
            print(f"mocks: one of {', '.join(MOCKS_KINDS)}, not {argv[1]!r}", file=sys.stderr)
            return 2
        return mocks_main(argv[1], int(argv[2]))
    if argv and argv[0] == "upstream":
        return upstream_main([int(a) for a in argv[1:]] or [100, 400, 1600])
    teams = [int(a) for a in argv] or list(DEFAULT_TEAMS)
    if not KUBECONFIG.exists():
        print(
            "the sandbox is not up: run `make sandbox-up` (make bench-scale does)", file=sys.stderr
        )
        return 2
    BENCH.mkdir(parents=True, exist_ok=True)
    progress("installing Kueue with the local stack (a no-op when it is there)")
    sandbox_stack.pulumi("up", "--yes", "--skip-preview", capture=True)
    run_id = f"{int(time.time()) % 0xFFFFF:05x}"
    sizes = []
    try:
        for n in teams:
            sizes.append(bench_size(n, run_id))
    except StepFailed as error:
        print(f"benchmark step failed: {error}", file=sys.stderr)
        return 1
    cpus = os.cpu_count()
    print(f"Engine options: {engine_settings()}")
    print(f"Machine: {cpus} CPUs; load average when each step started is in the last column.\n")
    print(report(sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
