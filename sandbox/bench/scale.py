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
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_queues import keys
from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.tools import pulumi_cli
from sandbox import pulumi_stack as sandbox_stack
from sandbox.paths import KUBECONFIG, KUBECTL, ROOT, STATE

BENCH = STATE / "bench"
TRIVIAL_PROGRAM = ROOT / "sandbox" / "bench" / "scale_trivial.py"
DEFAULT_TEAMS = (10, 50, 200)
K8S_TYPE_PREFIX = "kubernetes:"


# --- the generated stacks ----------------------------------------------------------------


def team_config(teams: int, prefix: str) -> dict[str, Any]:
    """Raw stack config (keys without the project prefix) of `teams` teams in one cohort."""
    flavor, cohort = f"{prefix}-gpu", f"{prefix}-pool"
    return {
        keys.KEY_KUEUE: {"install": False, "readinessTimeoutSeconds": 120},
        keys.KEY_FLAVORS: [
            {
                "name": flavor,
                "capacity": {"cpu": teams, "memory": f"{4 * teams}Gi", "nvidia.com/gpu": teams},
            }
        ],
        keys.KEY_COHORT: {"name": cohort},
        keys.KEY_TEAMS: [
            {
                "name": f"{prefix}-t{i:03d}",
                "namespace": f"{prefix}-t{i:03d}",
                "clusterQueue": f"{prefix}-t{i:03d}-cq",
                "localQueue": "queue",
                "cohort": cohort,
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": {
                                    "cpu": {"nominalQuota": 1},
                                    "memory": {"nominalQuota": "4Gi"},
                                    "nvidia.com/gpu": {"nominalQuota": 1, "borrowingLimit": 1},
                                },
                            }
                        ],
                    }
                ],
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
                "submitters": [{"kind": "User", "name": f"user-{prefix}-{i:03d}"}],
            }
            for i in range(teams)
        ],
    }


def stack_file(raw: dict[str, Any]) -> str:
    """A Pulumi.<stack>.yaml holding `raw` under the project's config namespace."""
    return yaml.safe_dump(
        {"config": {f"{keys.PROJECT}:{k}": v for k, v in raw.items()}}, sort_keys=False
    )


# --- the program under mocks -------------------------------------------------------------


@dataclass
class _Recorder:
    objects: list[dict[str, Any]] = field(default_factory=list)


def _mocks(recorder: _Recorder) -> Any:
    import pulumi

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            if args.typ.startswith(K8S_TYPE_PREFIX):
                recorder.objects.append(args.inputs)
            return f"{args.name}-id", args.inputs

        def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
            return {}, None

    return Mocks()


def _under_mocks(program: Callable[[], None], project: str) -> list[dict[str, Any]]:
    """Run `program` under Pulumi mocks; the Kubernetes objects it registered, in order."""
    import pulumi

    recorder = _Recorder()
    pulumi.runtime.set_mocks(_mocks(recorder), project=project, stack="bench", preview=False)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> None:
        program()

    run()
    return recorder.objects


# Registration fields the program does not decide: where in the source a resource was
# declared, and what the SDK and provider versions announce about themselves.
_NOT_THE_PROGRAMS = (
    "sourcePosition",
    "stackTrace",
    "parentStackTrace",
    "version",
    "acceptSecrets",
    "acceptResources",
    "supportsPartialValues",
    "supportsResultReporting",
)


def _canonical(message: Any) -> dict[str, Any]:
    """A monitor request as a dict, without the fields the program does not decide and with
    dependency lists as sorted sets (depends_on is a set: its order is not registered)."""
    from google.protobuf.json_format import MessageToDict

    entry: dict[str, Any] = MessageToDict(message, preserving_proto_field_name=False)
    for key in _NOT_THE_PROGRAMS:
        entry.pop(key, None)
    if "dependencies" in entry:
        entry["dependencies"] = sorted(set(entry["dependencies"]))
    for deps in entry.get("propertyDependencies", {}).values():
        deps["urns"] = sorted(set(deps.get("urns", [])))
    return entry


def registrations(raw: dict[str, Any], manifest: Any = None) -> dict[str, Any]:
    """Everything the gpu-queues program of config `raw` (and the prepared Kueue release
    `manifest`, if any) tells the engine under mocks, by URN: each resource's registration
    (type, name, parent, inputs, dependencies, options) and each component's registered
    outputs. What a change that is only about speed or layout must leave alone."""
    import pulumi
    from pulumi.runtime.mocks import MockMonitor

    from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs

    found: dict[str, Any] = {}

    class Recording(MockMonitor):
        def RegisterResource(self, request: Any) -> Any:
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            found[response.urn] = {"register": _canonical(request)}
            return response

        def RegisterResourceOutputs(self, request: Any) -> Any:
            found.setdefault(request.urn, {})["outputs"] = _canonical(request)
            return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    # A recording of its own: no config and no root stack left by an earlier mocks run.
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_all_config({}, [])
    recorder = _Recorder()
    mocks = _mocks(recorder)
    pulumi.runtime.set_mocks(
        mocks, project=keys.PROJECT, stack="bench", preview=False, monitor=Recording(mocks)
    )

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> None:
        GpuQueues("gpu-queues", GpuQueuesArgs(load_config(raw), manifest, lambda *_: "ready"))

    run()
    # The root stack is the SDK's, registered once per process (not by the program).
    return {urn: entry for urn, entry in found.items() if "::pulumi:pulumi:Stack::" not in urn}


def ours_under_mocks(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The gpu-queues program of config `raw`, as __main__.py builds it (validation included)."""
    from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs

    def program() -> None:
        config: StackConfig = load_config(raw)
        GpuQueues("gpu-queues", GpuQueuesArgs(config, None, lambda *_: "ready (mocks)"))

    return _under_mocks(program, keys.PROJECT)


def trivial_under_mocks(count: int) -> list[dict[str, Any]]:
    def program() -> None:
        module = runpy.run_path(str(TRIVIAL_PROGRAM), run_name="bench_trivial")
        module["register"](count, "bench-trivial-mocks")

    return _under_mocks(program, "bench-trivial")


def shaped_under_mocks(teams: int, prefix: str = "s") -> list[dict[str, Any]]:
    """The trivial program's objects shaped like ours (scale_trivial.register_shaped)."""

    def program() -> None:
        module = runpy.run_path(str(TRIVIAL_PROGRAM), run_name="bench_trivial")
        module["register_shaped"](teams, prefix)

    return _under_mocks(program, "bench-trivial")


# The programs evaluated under mocks, each for a number of teams (the trivial one with as many
# objects as that stack: one namespace and ConfigMaps).
UNDER_MOCKS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "ours": lambda n: ours_under_mocks(team_config(n, "m")),
    "shaped": lambda n: shaped_under_mocks(n),
    "trivial": lambda n: trivial_under_mocks(objects_per_stack(n) - 1),
}
MOCKS_KINDS = tuple(UNDER_MOCKS)


def mocks_main(kind: str, teams: int) -> int:
    """One evaluation in a fresh interpreter; prints {"seconds", "objects"} as JSON.

    A one-team run first imports and warms up everything, so the timed run is the per-object
    cost only (imports are a fixed cost the real runs pay too, shown by the CPU table)."""
    import gc

    evaluate = UNDER_MOCKS[kind]
    evaluate(1)
    # A full collection now, so that whether one falls inside the timed run does not depend on
    # what the imports and the warm-up left (at 10 teams one such collection is a third of
    # the trivial program's time).
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    objects = evaluate(teams)
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - started,
                "cpu": time.process_time() - cpu,
                "objects": len(objects),
            }
        )
    )
    return 0


# SDK work counted per object by `mocks-profile`: registrations, Outputs, event-loop callbacks,
# property serialisations, and the unknowns walk every Output runs over its value.
PROFILED = {
    # once per resource registered, components included (the mock monitor's own methods run
    # in executor threads, which cProfile does not see)
    "resources registered": ("pulumi/runtime/resource.py", "_get_stack_trace"),
    "Outputs": ("pulumi/output.py", "__post_init__"),
    "loop callbacks": ("asyncio/events.py", "_run"),
    "serialize_property": ("pulumi/runtime/rpc.py", "serialize_property"),
    "contains_unknowns": ("pulumi/runtime/rpc.py", "impl"),
}


def _collector_timed(run: Callable[[int], object], teams: int) -> tuple[float, float, int]:
    """CPU seconds of run(teams), the part of them the garbage collector took, and the objects it
    collected (gc.callbacks brackets every collection)."""
    import gc

    spent, started, collected = [0.0], [0.0], [0]

    def clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            spent[0] += time.process_time() - started[0]
            collected[0] += info["collected"]

    gc.collect()
    gc.callbacks.append(clock)
    cpu = time.process_time()
    try:
        run(teams)
    finally:
        gc.callbacks.remove(clock)
    return time.process_time() - cpu, spent[0], collected[0]


def mocks_profile_main(teams: int) -> int:
    """Per object, for ours, the shaped and the plain trivial program: the counts of PROFILED
    (cProfile, garbage collection off), then CPU ms with the collector on and the share of it
    spent collecting (gc.callbacks), and the cyclic garbage collected."""
    import cProfile
    import gc
    import pstats

    kinds = UNDER_MOCKS
    for run in kinds.values():
        run(1)
    objects = objects_per_stack(teams)
    print(f"per object, {teams} teams ({objects} objects)")
    print("| | " + " | ".join(kinds) + " |\n" + "|---" * (len(kinds) + 1) + "|")
    counts: dict[str, list[str]] = {label: [] for label in PROFILED}
    timing: dict[str, list[str]] = {"CPU": [], "of which GC": [], "garbage objects": []}
    for run in kinds.values():
        gc.collect()
        gc.disable()
        profile = cProfile.Profile()
        profile.enable()
        run(teams)
        profile.disable()
        gc.enable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        for label, (path, function) in PROFILED.items():
            calls = sum(v[1] for k, v in stats.items() if k[0].endswith(path) and k[2] == function)
            counts[label].append(f"{calls / objects:.1f}")
        cpu, collecting, collected = _collector_timed(run, teams)
        timing["CPU"].append(f"{cpu / objects * 1000:.2f} ms")
        timing["of which GC"].append(f"{collecting / objects * 1000:.2f} ms")
        timing["garbage objects"].append(f"{collected / objects:.0f}")
    for label, cells in {**counts, **timing}.items():
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


def objects_per_stack(teams: int) -> int:
    """Kubernetes objects of a generated stack: 7 per team, the flavor and the cohort."""
    return 7 * teams + 2


# --- running and measuring one step --------------------------------------------------------

# CPU seconds are summed per role over the measured process tree, by command name.
ROLES = (
    ("pulumi-resource", "provider"),
    ("pulumi-language", "language host"),
    ("pulumi", "engine"),
    ("python", "program"),
    ("kubectl", "kubectl"),
)
# The sandbox processes that serve the requests (their CPU is counted for every step).
CLUSTER_COMMANDS = ("kube-apiserver", "etcd", "kueue")
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(parent pid, command name, CPU seconds so far) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    comm = text[text.index("(") + 1 : text.rindex(")")]
    return int(fields[1]), comm, (int(fields[11]) + int(fields[12])) / TICK


def _process_table() -> dict[int, tuple[int, str, float]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            table[int(entry)] = stat
    return table


def _descendants(root: int, table: dict[int, tuple[int, str, float]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cluster_cpu() -> float:
    """CPU seconds used so far by the sandbox's API server, etcd and Kueue (0 with no sandbox:
    the `upstream` mode needs none)."""
    try:
        state = json.loads((STATE / "state.json").read_text())
    except FileNotFoundError:
        return 0.0
    table = _process_table()
    total = 0.0
    for entry in state.get("processes", {}).values():
        pid = int(entry["pid"])
        for p in {pid, *_descendants(pid, table)}:
            if p in table and table[p][1].startswith(CLUSTER_COMMANDS):
                total += table[p][2]
    return total


@dataclass
class Step:
    seconds: float
    cpu: float
    """CPU seconds of the whole process tree (rusage of the reaped children)."""
    cpu_by_role: dict[str, float]
    """CPU seconds per role, from polling /proc (short-lived processes may be missed)."""
    cluster_cpu: float
    load: float
    """1-minute load average when the step started."""
    output: str


class StepFailed(Exception):
    """A measured command failed; the benchmark stops rather than report a broken number."""


def measure(argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None) -> Step:
    """Run argv to completion and measure it: wall time, CPU, the load it ran under."""
    import resource
    import threading

    load = os.getloadavg()[0]
    cluster_before = cluster_cpu()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen: dict[int, tuple[str, float]] = {}
    chunks: list[str] = []
    started = time.monotonic()
    with subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        out = proc.stdout
        reader = threading.Thread(target=lambda: chunks.append(out.read() if out else ""))
        reader.start()
        while proc.poll() is None:
            table = _process_table()
            for pid in {proc.pid, *_descendants(proc.pid, table)} & table.keys():
                seen[pid] = (table[pid][1], table[pid][2])
            time.sleep(0.25)
        seconds = time.monotonic() - started
        reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_role: dict[str, float] = {}
    for comm, cpu in seen.values():
        role = next((r for prefix, r in ROLES if comm.startswith(prefix)), "other")
        by_role[role] = by_role.get(role, 0.0) + cpu
    output = "".join(chunks)
    if proc.returncode != 0:
        raise StepFailed(f"`{' '.join(argv)}` exited {proc.returncode}:\n{output[-4000:]}")
    return Step(
        seconds=seconds,
        cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        cpu_by_role=by_role,
        cluster_cpu=cluster_cpu() - cluster_before,
        load=load,
        output=output,
    )


# --- the three ways to apply the same objects ------------------------------------------------


def pulumi_env() -> dict[str, str]:
    return sandbox_stack.environment()


class OursStack:
    """A generated gpu-queues stack in the sandbox's shadow project (sandbox.pulumi_stack)."""

    def __init__(self, name: str, raw: dict[str, Any]) -> None:
        self.name = name
        self.source = BENCH / f"Pulumi.{name}.yaml"
        self.source.parent.mkdir(parents=True, exist_ok=True)
        self.source.write_text(stack_file(raw))
        sandbox_stack.prepare(name, source=self.source)

    def run(self, *args: str) -> Step:
        return measure(
            pulumi_cli.argv(args, stack=self.name), cwd=sandbox_stack.SHADOW, env=pulumi_env()
        )

    def remove(self) -> None:
        pulumi_cli.run(
            ["stack", "rm", "--force", "--yes"],
            stack=self.name,
            cwd=sandbox_stack.SHADOW,
            env=pulumi_env(),
            check=False,
        )
        (sandbox_stack.SHADOW / f"Pulumi.{self.name}.yaml").unlink(missing_ok=True)


TRIVIAL_PROJECT = "bench-trivial"


class TrivialStack:
    """The trivial program as a Pulumi project of its own under .sandbox/bench/trivial."""

    def __init__(
        self,
        name: str,
        configmaps: int,
        namespace: str,
        *,
        settle: bool = True,
        render_dir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name, self.dir, self.env = name, BENCH / "trivial", env or pulumi_env()
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "Pulumi.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": TRIVIAL_PROJECT,
                    "runtime": {
                        "name": "python",
                        "options": {"toolchain": "pip", "virtualenv": str(ROOT / ".venv")},
                    },
                }
            )
        )
        main = self.dir / "__main__.py"
        if not main.is_symlink():
            main.symlink_to(TRIVIAL_PROGRAM)
        config = {
            f"{TRIVIAL_PROJECT}:count": str(configmaps),
            f"{TRIVIAL_PROJECT}:namespace": namespace,
            f"{TRIVIAL_PROJECT}:settle": str(settle).lower(),
        }
        if render_dir is not None:
            config[f"{TRIVIAL_PROJECT}:renderDir"] = render_dir
        (self.dir / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
        pulumi_cli.run(["stack", "select", "--create", name], cwd=self.dir, env=self.env)

    def run(self, *args: str) -> Step:
        return measure(pulumi_cli.argv(args, stack=self.name), cwd=self.dir, env=self.env)

    def remove(self) -> None:
        pulumi_cli.run(
            ["stack", "rm", "--force", "--yes"],
            stack=self.name,
            cwd=self.dir,
            env=self.env,
            check=False,
        )
        (self.dir / f"Pulumi.{self.name}.yaml").unlink(missing_ok=True)


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def rendered_manifest(raw: dict[str, Any]) -> str:
    """The program's objects for config `raw` (under mocks, in registration order) as YAML."""
    objects = [_drop_none(o) for o in ours_under_mocks(raw)]
    return yaml.safe_dump_all(objects, sort_keys=False)


def kubectl_argv(*args: str) -> list[str]:
    return [str(KUBECTL), "--kubeconfig", str(KUBECONFIG), *args]


def delete_objects(manifest: Path) -> None:
    """Remove what a run created (namespaces go last, asynchronously)."""
    subprocess.run(
        kubectl_argv("delete", "-f", str(manifest), "--ignore-not-found", "--wait=false"),
        capture_output=True,
        check=False,
    )


# --- the benchmark ---------------------------------------------------------------------------


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
        [str(ROOT / pulumi_cli.RUN), "env"],
        env=pulumi_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    keep = ("PULUMI_SKIP_CHECKPOINTS", "PULUMI_PARALLEL", "PULUMI_K8S_CLIENT_")
    lines = [x for x in done.stdout.splitlines() if x.startswith(keep)]
    return ", ".join(sorted(lines)) or "(CLI defaults)"


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s"


def _x(ratio: float) -> str:
    return f"{ratio:.1f}x"


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(sizes: Sequence[Size]) -> str:
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
            *(_s(z.s(k)) for k in (PREVIEW, UP, K_APPLY, NOOP_UP, NOOP_PREVIEW, K_NOOP)),
            *(_s(z.s(k)) for k in (T_PREVIEW, T_UP, T_NOOP_UP)),
            f"{min(loads):.1f}-{max(loads):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")

    lines += [
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

    lines += [
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

    lines += [
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
                f"| {z.teams} | {label} | {_s(st.seconds)} | {st.cpu:.1f} | "
                f"{role('engine', 0):.1f} | {role('provider', 0):.1f} | "
                f"{role('program', 0):.1f} | {role('kubectl', 0):.1f} | {st.cluster_cpu:.1f} |"
            )

    small, big = sizes[0], sizes[-1]
    growth = (big.s(UP) / big.objects) / (small.s(UP) / small.objects)
    mocks = big.mocks["ours"] / big.mocks["trivial"]
    shape, floor = (
        big.mocks["ours"] / big.mocks["shaped"],
        big.mocks["shaped"] / big.mocks["trivial"],
    )
    worst_noop = max(big.s(NOOP_UP), big.s(NOOP_PREVIEW)) / big.s(K_NOOP)
    lines += [
        "",
        f"Goals at {big.teams} teams (issue 14):",
        f"- up (create) {_s(big.s(UP))}, within 60 s: {_verdict(big.s(UP) <= 60)}; "
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
    return "\n".join(lines)


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
                f"{_s(step.seconds)} ({step.cpu_by_role.get('engine', 0):.0f}/"
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
