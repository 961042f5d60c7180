"""The programs of the scale benchmark evaluated under Pulumi mocks: ours (as __main__.py builds
it), the trivial program's ConfigMaps, and the trivial program's objects shaped like ours
(sandbox/bench/scale_trivial.py); what each registers (`registrations`, the golden records'
and the registration-set test's view), the timed evaluation in a fresh interpreter
(`mocks_main`) and the SDK's work per object (`mocks_profile_main`).
"""

from __future__ import annotations

import json
import runpy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpu_queues import keys
from gpu_queues.config.model import StackConfig, load_config
from sandbox.bench.generated import TRIVIAL_PROGRAM, objects_per_stack, team_config

K8S_TYPE_PREFIX = "kubernetes:"


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
