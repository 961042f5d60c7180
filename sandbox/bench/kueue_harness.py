"""Benchmark (not a test): Kueue's own scheduler performance harness and the what-if's fast
engine on the same configurations, on this machine, in one run (`make bench-kueue-harness`;
docs/what-if.md, Speed).

    python -m sandbox.bench.kueue_harness [baseline tas large-scale] [--out DIR]
        [--engine-only | --harness-only] [--timeout 60m] [--profile] [--no-topology]

For each configuration of the pinned release's harness (test/performance/scheduler/configs/
<name>/generator.yaml in the sigs.k8s.io/kueue module):

- Kueue's harness as its Makefile-test.mk runs it (run-performance-scheduler and its tas and
  large-scale siblings): its runner, built from the release's module with minimalkueue
  (`toolchain/build.sh kueue_harness`, cached by the pin), starts envtest (the toolchain's
  kube-apiserver and etcd, KUBEBUILDER_ASSETS=.toolchain/bin) and minimalkueue, generates the
  cohorts, queues and workloads in real time and records them, with the Makefile's flags
  (logs to files, metrics scraped every 5 s; --enableTAS for tas) and a longer --timeout (the
  recording's cap: this 2-core machine is slower than Kueue's CI). It runs in a network
  namespace of its own (`unshare --net`, loopback only), as everything here that serves.
- The what-if: the same configuration converted (sandbox/bench/harness_config.py) to a stack
  and a mix of Jobs (tas with its Topology and each class's topology request; without them
  with --no-topology, to see what topology-aware scheduling costs the engine), replayed
  through the whole `make what-if` path (sandbox.replay.cli, fast engine) in a process of its
  own; the run's per-workload timelines are kept (a wrapper around the command's replay, after
  which nothing of the path is left but writing the report).

Printed per configuration: each side's wall time (the harness's whole run and minimalkueue's
own, the figure Kueue's CI checks), their ratio, peak memory, and the harness's summary
figures on both sides: per workload class the average time from creation to admission (to
the last admission, as its recorder counts it) and per ClusterQueue class the usage (cpu used
over time / nominal quota over the span from the first ClusterQueue event to the last).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.config.stackfile import ROOT
from gpu_queues.pins import kueue_version
from gpu_queues.release.module import module_dir
from sandbox.bench.harness_config import Converted, convert

CONFIGS = ("baseline", "tas", "large-scale")
ASSETS = ROOT / ".toolchain" / "bin"  # envtest's KUBEBUILDER_ASSETS: kube-apiserver, etcd
STACK = "harness"
WHY_THEY_DIFFER = (
    "The harness's times are real: each workload waits for minimalkueue's scheduling cycles, "
    "its API calls and the runner's reconciles in wall time, and its workloads are created late "
    "when the API server is busy; the engine's cycles take no simulated time (a workload "
    "admitted in the cycle after its creation waits 0 s) and its submissions are on time, so "
    "its waits are what Kueue's rules alone make of the load."
)
# The child: `make what-if`'s own command, with each side's Run kept for the figures.
CHILD = "sandbox.bench.kueue_harness_child"


def peak_probe(command: list[str], peak: Path) -> list[str]:
    """`command` under a wrapper that writes, into the file `peak`, the peak RSS (KiB) of the
    largest process of its tree and the CPU seconds (user + system) of the whole tree, as the
    kernel counts its children once reaped: on a shared machine the CPU time says more than
    the wall time of what each side costs."""
    probe = (
        "import pathlib, resource, subprocess, sys; "
        "rc = subprocess.run(sys.argv[2:]).returncode; "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "pathlib.Path(sys.argv[1]).write_text(f'{u.ru_maxrss} {u.ru_utime + u.ru_stime}'); "
        "sys.exit(rc)"
    )
    return [sys.executable, "-c", probe, str(peak), *command]


def probed(peak: Path) -> tuple[float, float]:
    """(peak MiB, CPU seconds) that peak_probe wrote."""
    kib, cpu = peak.read_text().split()
    return int(kib) / 1024, float(cpu)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


# --- the what-if side ------------------------------------------------------------------------


def engine_side(name: str, converted: Converted, work: Path, profile: bool) -> dict[str, Any]:
    root = work / name / "engine"
    (root / "toolchain").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "toolchain" / "pins.env", root / "toolchain" / "pins.env")
    (root / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(converted.stack, sort_keys=False))
    mix = root / "mix.yaml"
    # libyaml's dumper: the pure-Python one takes minutes over 50,000 Jobs (not timed anyway)
    mix.write_text(yaml.dump_all(converted.jobs, Dumper=yaml.CSafeDumper, sort_keys=False))
    out, run_file = root / "out", root / "run.json"
    peak = root / "peak-kib"
    command = peak_probe([
        sys.executable, "-m", CHILD, "--run-file", str(run_file), "--",
        "--stack", STACK, "--root", str(root), "--workloads", str(mix), "--out", str(out),
        "--engine", "fast", "--max-bytes", str(10**9),
    ], peak)  # fmt: skip
    before = load()
    started = time.monotonic()
    env = dict(os.environ)
    if profile:  # the engine's CPU profile (go tool pprof -top FILE)
        env["GPUQ_WHATIF_PROFILE"] = str(root / "engine.pprof")
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        return {"error": f"the what-if failed (exit {done.returncode}): {done.stderr[-3000:]}"}
    lines = done.stderr.strip().splitlines()
    peak_mib, cpu = probed(peak)
    kept = float(next(x for x in lines if x.startswith("kept-run-seconds ")).split()[1])
    run = json.loads(run_file.read_text())
    return {
        "wall": wall - kept,
        "engine": float(run["meta"]["wall_seconds"]),
        "simulated": float(run["meta"]["simulated_seconds"]),
        "peak_mib": peak_mib,
        "cpu": cpu,
        "load": f"{before} -> {load()}",
        **engine_figures(converted, run),
    }


def engine_figures(converted: Converted, run: dict[str, Any]) -> dict[str, Any]:
    """The harness's summary figures, from the run's timelines: per workload class the average
    ms from submission to the last admission; per ClusterQueue class the cpu used over time
    against the nominal quota over the span from 0 to the last run's end."""
    by_key = {(w.namespace, w.name): w for w in converted.workloads}
    admit: dict[str, list[float]] = defaultdict(list)
    used: dict[str, float] = defaultdict(float)  # mCPU x ms, per queue
    outcomes: dict[str, int] = defaultdict(int)
    evictions = 0
    end = 0.0
    for r in run["workloads"]:
        w = by_key.get((r["namespace"], r["name"]))
        if w is None:
            continue
        outcomes[r["outcome"]] += 1
        admissions = [float(at) for at, event, _ in r["timeline"] if event == "admitted"]
        evictions += sum(1 for _, event, _ in r["timeline"] if event == "evicted")
        if admissions:
            admit[w.class_name].append((admissions[-1] - w.submit_ms / 1000) * 1000)
        for start, stop in r["intervals"]:
            stop = float(stop) if stop is not None else float(run["meta"]["simulated_seconds"])
            used[w.namespace] += w.cpu_millis * (stop - float(start)) * 1000
            end = max(end, stop)
    usage: dict[str, float] = {}
    nominal: dict[str, int] = defaultdict(int)
    cpu_ms: dict[str, float] = defaultdict(float)
    for q in converted.queues:
        nominal[q.class_name] += q.nominal_millis
        cpu_ms[q.class_name] += used[q.name]
    for cls, total in nominal.items():
        usage[cls] = 100 * cpu_ms[cls] / (total * end * 1000) if total and end else 0.0
    return {
        "admission_ms": {c: sum(v) / len(v) for c, v in admit.items()},
        "admitted": {c: len(v) for c, v in admit.items()},
        "usage": usage,
        "outcomes": dict(outcomes),
        "evictions": evictions,
        "span": end,
    }


# --- Kueue's harness -------------------------------------------------------------------------


def harness_binaries() -> tuple[Path, Path] | str:
    """The runner and minimalkueue of the pin, built into the cache when not there; or why not."""
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "toolchain/build.sh", "kueue_harness"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return f"toolchain/build.sh kueue_harness failed: {done.stderr.strip()[-2000:]}"
    took = time.monotonic() - started
    print(f"bench-kueue-harness: harness binaries ready in {took:.0f}s", file=sys.stderr)
    return Path(lines[0]), Path(lines[1])


def assets_problem() -> str | None:
    missing = [b for b in ("kube-apiserver", "etcd") if not os.access(ASSETS / b, os.X_OK)]
    if missing:
        return f"{', '.join(missing)} not built in .toolchain/bin (make toolchain)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is missing: the harness runs in a network namespace of its own"
    if os.geteuid() != 0:
        return "not root: the harness runs in a network namespace of its own (unshare --net)"
    return None


def harness_side(
    name: str, binaries: tuple[Path, Path], module: Path, work: Path, timeout: str
) -> dict[str, Any]:
    out = (work / name / "harness").resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Under the names Kueue's Makefile gives them: the runner names minimalkueue's files
    # (<name>.stats.yaml, its logs) after the binary.
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    runner, minimal = bin_dir / "performance-scheduler-runner", bin_dir / "minimalkueue"
    for link, target in zip((runner, minimal), binaries, strict=True):
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    scheduler = module / "test" / "performance" / "scheduler"
    flags = [
        f"--o={out}",
        f"--crds={module / 'config' / 'components' / 'crd' / 'bases'}",
        f"--generatorConfig={scheduler / 'configs' / name / 'generator.yaml'}",
        f"--minimalKueue={minimal}",
        "--withLogs=true",
        "--logToFile=true",
        "--metricsScrapeInterval=5s",
        f"--timeout={timeout}",
    ]
    if name == "tas":
        flags.append("--enableTAS=true")
    # A network namespace of its own, gone with the process, with loopback alone. kube-apiserver
    # wants an address on the interface of a default route to advertise: a documentation address
    # (TEST-NET-1, routed nowhere) on lo, and the default route to lo, so nothing leaves.
    inner = (
        "ip link set lo up && ip addr add 192.0.2.1/32 dev lo && ip route add default dev lo && "
        'exec "$@"'
    )
    peak = out / "peak-kib"
    command = peak_probe(
        ["unshare", "--net", "--", "sh", "-c", inner, "sh", str(runner), *flags], peak
    )
    env = {**os.environ, "KUBEBUILDER_ASSETS": str(ASSETS.resolve())}
    before = load()
    started = time.monotonic()
    with (out / "runner.log").open("w") as log:
        # From the module's root, as its Makefile runs it: Kueue's test utilities, which the
        # runner imports, look for the project's Makefile upwards from there when they load.
        done = subprocess.run(command, cwd=module, env=env, stdout=log, stderr=log, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0 or not (out / "summary.yaml").exists():
        return {"error": f"the harness failed (exit {done.returncode}); see {out / 'runner.log'}"}
    stats = yaml.safe_load((out / "minimalkueue.stats.yaml").read_text())
    peak_mib, cpu = probed(peak)
    summary = yaml.safe_load((out / "summary.yaml").read_text())
    usage = {}
    for cls, s in (summary.get("clusterQueueClasses") or {}).items():
        span = _ms(s["lastEventTime"]) - _ms(s["firstEventTime"])
        usage[cls] = 100 * s["cpuUsed"] / (s["nominalQuota"] * span) if span else 0.0
    classes = summary.get("workloadClasses") or {}
    return {
        "wall": wall,
        "minimalkueue_wall": stats["wallMs"] / 1000,
        "minimalkueue_cpu": (stats["userMs"] + stats["sysMs"]) / 1000,
        "minimalkueue_mib": stats["maxrss"] / 1024,
        "peak_mib": peak_mib,
        "cpu": cpu,
        "load": f"{before} -> {load()}",
        "admission_ms": {c: float(s["averageTimeToAdmissionMs"]) for c, s in classes.items()},
        "admitted": {c: int(s["count"]) for c, s in classes.items()},
        "evictions": sum(int(s.get("totalEvictions") or 0) for s in classes.values()),
        "usage": usage,
        "dropped": summary.get("droppedWorkloadEvents", 0),
    }


def _ms(stamp: Any) -> float:
    """A summary time (RFC 3339, as YAML reads it: a datetime or a string) in ms."""
    if isinstance(stamp, str):
        from datetime import datetime

        stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return float(stamp.timestamp() * 1000)


# --- the table -------------------------------------------------------------------------------


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f} s"


def table(name: str, converted: Converted, harness: dict[str, Any], engine: dict[str, Any]) -> str:
    h_err, e_err = harness.get("error"), engine.get("error")
    lines = [
        f"### {name}: {len(converted.queues)} ClusterQueues, "
        f"{len(converted.workloads):,} workloads",
        "",
        "| | Kueue's harness | fast engine (whole make what-if) |",
        "| --- | ---: | ---: |",
    ]
    if h_err or e_err:
        lines += [f"| error | {h_err or ''} | {e_err or ''} |"]
    h_wall = (
        "-" if h_err else f"{_s(harness['wall'])} (minimalkueue {_s(harness['minimalkueue_wall'])})"
    )
    e_wall = "-" if e_err else f"{_s(engine['wall'])} (engine alone {_s(engine['engine'])})"
    lines.append(f"| wall | {h_wall} | {e_wall} |")
    if not h_err and not e_err:
        lines.append(
            f"| ratio | | {harness['minimalkueue_wall'] / engine['wall']:,.1f}x faster than "
            f"minimalkueue's wall, {harness['wall'] / engine['wall']:,.1f}x than the whole run |"
        )
    h_mem = (
        f"{harness['minimalkueue_mib']:,.0f} MiB minimalkueue, {harness['peak_mib']:,.0f} MiB "
        "largest process"
        if not h_err
        else "-"
    )
    e_mem = f"{engine['peak_mib']:,.0f} MiB" if not e_err else "-"
    lines.append(f"| peak memory | {h_mem} | {e_mem} |")
    h_cpu = (
        "-"
        if h_err
        else f"{_s(harness['cpu'])} all processes (minimalkueue {_s(harness['minimalkueue_cpu'])})"
    )
    lines.append(f"| CPU (user + system) | {h_cpu} | {'-' if e_err else _s(engine['cpu'])} |")
    lines.append(
        f"| load average (1/5 min) before -> after | {harness.get('load', '-')} | "
        f"{engine.get('load', '-')} |"
    )
    if not e_err:
        lines.append(f"| simulated span | | {engine['span']:,.1f} s |")
    lines.append(
        f"| evictions | {harness.get('evictions', '-')} | {engine.get('evictions', '-')} |"
    )
    classes = sorted(
        set(harness.get("admission_ms", {})) | set(engine.get("admission_ms", {})),
        key=lambda c: (
            [w.class_name for w in converted.workloads].index(c)
            if c in {w.class_name for w in converted.workloads}
            else 0
        ),
    )
    for c in classes:
        hv = harness.get("admission_ms", {}).get(c)
        ev = engine.get("admission_ms", {}).get(c)
        lines.append(
            f"| {c}: average time to admission | {_s(None if hv is None else hv / 1000)} | "
            f"{_s(None if ev is None else ev / 1000)} |"
        )
    for c in sorted(set(harness.get("usage", {})) | set(engine.get("usage", {}))):
        hv = harness.get("usage", {}).get(c)
        ev = engine.get("usage", {}).get(c)
        lines.append(
            f"| ClusterQueue class {c}: usage | {'-' if hv is None else f'{hv:.1f}%'} | "
            f"{'-' if ev is None else f'{ev:.1f}%'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.kueue_harness")
    parser.add_argument("configs", nargs="*", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--out", type=Path, help="keep the stacks, mixes, runs and logs here")
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--engine-only", action="store_true")
    side.add_argument("--harness-only", action="store_true")
    parser.add_argument("--timeout", default="60m", help="the harness's recording cap (--timeout)")
    parser.add_argument(
        "--profile", action="store_true", help="the engine's CPU profile: <out>/<config>/engine/"
    )
    parser.add_argument(
        "--no-topology",
        action="store_true",
        help="the what-if without the configuration's topology (tas: the same nodes and pods)",
    )
    args = parser.parse_args(argv)
    work = (args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-harness-"))).resolve()
    version = kueue_version()
    module = module_dir(version)
    binaries: tuple[Path, Path] | str = "not run (--engine-only)"
    if not args.engine_only:
        binaries = assets_problem() or harness_binaries()
    if isinstance(binaries, str):
        print(f"bench-kueue-harness: Kueue's harness is not run: {binaries}", file=sys.stderr)
    print(f"Kueue {version}; {os.cpu_count()} cores; {WHY_THEY_DIFFER}\n")
    for name in args.configs:
        generator = yaml.safe_load(
            (module / "test/performance/scheduler/configs" / name / "generator.yaml").read_text()
        )
        converted = convert(generator, topology=not args.no_topology)
        engine: dict[str, Any] = {"error": "not run (--harness-only)"}
        harness: dict[str, Any] = {"error": binaries if isinstance(binaries, str) else ""}
        if not args.harness_only:
            print(f"bench-kueue-harness: {name}: the what-if ...", file=sys.stderr)
            engine = engine_side(name, converted, work, args.profile)
        if not isinstance(binaries, str):
            print(f"bench-kueue-harness: {name}: Kueue's harness ...", file=sys.stderr)
            harness = harness_side(name, binaries, module, work, args.timeout)
        print(table(name, converted, harness, engine) + "\n", flush=True)
        (work / name).mkdir(parents=True, exist_ok=True)
        (work / name / "figures.json").write_text(
            json.dumps({"harness": harness, "engine": engine}, indent=1)
        )
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
