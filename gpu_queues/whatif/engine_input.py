"""What a stack gives an engine to replay: the Kueue objects the program renders for it, the
manager Configuration and CRDs of its Kueue release, its namespaces and the nodes it declares
(gpu_queues.whatif.nodes), and the mix's entries the fast engine replays (with the runtimes
its TrainJobs name); and why a stack or an entry cannot be replayed honestly. The fast
engine's driver (gpu_queues.whatif.fast) sends this; the sandbox's engine
(sandbox/replay/engine.py) reads the integrations and GPUs the same way.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpu_queues import yamlio
from gpu_queues.config.model import StackConfig
from gpu_queues.config.render import kueue_objects, team_labels
from gpu_queues.release import catalogue
from gpu_queues.release.allowlist import find
from gpu_queues.release.catalogue import CONTROLLER_DEPLOYMENT, KUEUE_NAMESPACE, MANAGER_CONTAINER
from gpu_queues.release.manifest import (
    ManifestError,
    PreparedManifest,
    apply_placement,
    load_release,
    render_manager_config,
)
from gpu_queues.release.module import ROOT, RenderError, module_dir, wrapper_dir
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.gpus import is_gpu
from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.nodes import NodeNameClash, nodes
from gpu_queues.whatif.trainjob import distinct

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
FAST_KINDS = frozenset(
    {
        "Job",
        "Pod",
        "JobSet",
        "PyTorchJob",
        "RayJob",
        "MPIJob",
        "TFJob",
        "XGBoostJob",
        "PaddleJob",
        "JAXJob",
        "RayCluster",
        "TrainJob",
        "StatefulSet",
        "Deployment",
        "LeaderWorkerSet",
    }
)


class FastEngineError(Exception):
    """The fast engine cannot run; the message says why and what to do."""


def frameworks(configuration: str) -> list[str]:
    """The integrations a Kueue manager Configuration (its YAML) turns on; Kueue's default,
    batch/job, when it names none. Both engines read them so."""
    loaded = yamlio.load(configuration, "the manager Configuration") or {}
    found = ((loaded.get("integrations") or {}) if isinstance(loaded, dict) else {}).get(
        "frameworks"
    )
    return [str(f) for f in found] if isinstance(found, list) and found else ["batch/job"]


def flavor_gpus(config: StackConfig) -> dict[str, int]:
    """GPUs each flavor's nodes offer (count x per-node GPUs, or the declared capacity)."""
    return {
        f.name: int(sum(v for r, v in f.effective_capacity().items() if is_gpu(r)))
        for f in config.flavors
    }


def controller_pods(config: StackConfig, root: Path = ROOT) -> list[dict[str, Any]]:
    """The pod specs of Kueue's controller, one per replica, as the cluster runs them: they
    take room on a node like any pod (the scheduler puts them where its scores say, a GPU
    node when that scores best), so the engine places them before the mix."""
    key = (config.kueue.model_dump_json(), root)  # what the answer depends on
    if key not in _CONTROLLER_PODS:  # read once: the quota advisor replays one stack often
        _CONTROLLER_PODS[key] = _controller_pods(config, root)
    return [dict(p) for p in _CONTROLLER_PODS[key]]


_CONTROLLER_PODS: dict[tuple[str, Path], tuple[dict[str, Any], ...]] = {}


def prepared_release(config: StackConfig, root: Path = ROOT) -> PreparedManifest | None:
    """The stack's Kueue manifest as the program installs it (load_release), or None when it
    cannot be read here. Read once per process for each Kueue config: the manager
    Configuration and the controller's pods both come from it, and reading it is the what-if's
    largest fixed cost (a 2 MB manifest parsed and checked, 0.5 s on a quiet machine; downloaded
    first when the stack names a URL), which each of them paid."""
    key = (config.kueue.model_dump_json(), root)  # what the answer depends on
    if key not in _RELEASES:
        try:
            _RELEASES[key] = load_release(config.kueue, root)
        except (ManifestError, OSError):
            _RELEASES[key] = None
    return _RELEASES[key]


_RELEASES: dict[tuple[str, Path], PreparedManifest | None] = {}


def _controller_pods(config: StackConfig, root: Path) -> tuple[dict[str, Any], ...]:
    prepared = prepared_release(config, root)
    if prepared is not None:
        deployment = find(
            list(prepared.objects), "apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT
        )
    else:  # the release's own Deployment, with the stack's placement and resources
        try:
            module = module_dir(config.kueue.version, root, offline=True)
        except RenderError as exc:
            raise FastEngineError(str(exc)) from None
        text = (module / "config/components/manager/manager.yaml").read_text()
        deployment = next(
            (
                d
                for d in yamlio.load_all(text, "manager.yaml")
                if as_dict(d).get("kind") == "Deployment"
            ),
            None,
        )
        spec = as_dict(as_dict(deployment).get("spec"))
        pod = as_dict(as_dict(spec.get("template")).get("spec"))
        containers = [as_dict(c) for c in as_list(pod.get("containers"))]
        manager = next((c for c in containers if c.get("name") == MANAGER_CONTAINER), {})
        apply_placement(config.kueue, spec, pod, manager)
    spec = as_dict(as_dict(deployment).get("spec"))
    pod = as_dict(as_dict(spec.get("template")).get("spec"))
    replicas = spec.get("replicas")
    return (pod,) * (replicas if isinstance(replicas, int) and replicas >= 0 else 1) if pod else ()


def manager_configuration(config: StackConfig, root: Path = ROOT) -> str:
    """The Kueue manager Configuration the stack's release runs with: the ConfigMap of the
    manifest the program installs, or, when that cannot be read here, the release's own
    Configuration with the stack's settings laid over it the same way."""
    prepared = prepared_release(config, root)
    if prepared is not None:
        for obj in prepared.objects:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "ConfigMap" and meta.get("name") == catalogue.MANAGER_CONFIGMAP:
                return str((obj.get("data") or {}).get(catalogue.MANAGER_CONFIG_KEY) or "")
    try:
        module = module_dir(config.kueue.version, root, offline=True)
    except RenderError as exc:
        raise FastEngineError(str(exc)) from None
    base = (module / "config/components/manager/controller_manager_config.yaml").read_text()
    return render_manager_config(base, config.kueue.manager)


@functools.cache
def release_crds(version: str, root: Path = ROOT) -> list[dict[str, Any]]:
    """The release's CustomResourceDefinitions (its module's config/components/crd), whose
    schemas' defaults the API server would fill in every Kueue object. Read once per process
    (the quota advisor replays hundreds of times): the list is shared, so callers only read it.
    And read from YAML once per machine: the first process writes them as JSON to the user's
    cache (crds_cache), where the next finds them without the YAML (0.3 s on a quiet machine,
    more than a small replay takes) or the go command that finds the module (`go mod download`)."""
    cached = crds_cache(version, root)
    if cached is not None:
        try:
            loaded = json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        if isinstance(loaded, list) and loaded and all(isinstance(d, dict) for d in loaded):
            return loaded
    try:
        module = module_dir(version, root, offline=True)
    except RenderError as exc:
        raise FastEngineError(str(exc)) from None
    out = []
    for path in sorted((module / "config/components/crd/bases").glob("*.yaml")):
        out += [d for d in yamlio.load_all(path.read_text(), path.name) if isinstance(d, dict)]
    if cached is not None and out:
        with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(f".{os.getpid()}.partial")
            partial.write_text(json.dumps(out), encoding="utf-8")
            partial.replace(cached)
    return out


def crds_cache(version: str, root: Path = ROOT) -> Path | None:
    """Where release_crds keeps the JSON of `version`'s CRDs: the user's cache (the
    toolchain's, $GPU_QUEUES_CACHE or ~/.cache/gpu-queues), keyed by the version and its
    wrapper's go.sum, which the go command holds the module's content to; None without a
    wrapper (module_dir then says why)."""
    try:
        sums = (wrapper_dir(version, root) / "go.sum").read_bytes()
    except OSError:
        return None
    base = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gpu-queues")
    key = hashlib.sha256(sums).hexdigest()[:16]
    return base / "whatif" / f"crds-{version}-{key}.json"


CACHE_ENV = "GPU_QUEUES_CACHE"


def namespaces(config: StackConfig) -> list[dict[str, Any]]:
    """The namespaces as they stand once the program ran: each of every team's with its labels
    (the program's own, or the adopted namespace's), and `default`."""
    out: dict[str, dict[str, Any]] = {}
    for team in config.teams:
        for namespace in team.all_namespaces:
            labels = {NAMESPACE_NAME_LABEL: namespace}
            labels.update({k: str(v) for k, v in team_labels({"name": team.name}).items()})
            out[namespace] = labels
    out.setdefault("default", {NAMESPACE_NAME_LABEL: "default"})
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        for ns, labels in sorted(out.items())
    ]


def unmodelled(config: StackConfig) -> str | None:
    """Why a replay of this stack would not be honest (None when it would): a provisioning
    check holds each workload until the cluster autoscaler has its nodes, and neither engine
    (this one, nor the sandbox's) has an autoscaler to answer it."""
    if config.provisioning is None:
        return None
    names = ", ".join(c.name for c in config.provisioning.checks)
    return (
        f"the stack has provisioning checks ({names}): Kueue holds each of their workloads "
        "until the cluster autoscaler has made its nodes, and the what-if has no autoscaler "
        "to model (when it answers, whether it fails, which nodes it adds), so a replay would "
        "show those queues admitting at once or never; replay a copy of the stack without "
        "gpu-queues:provisioning (docs/what-if.md)"
    )


def not_fast(e: Entry) -> str | None:
    """Why the fast engine does not replay a valid entry (None when it does)."""
    if e.kind not in FAST_KINDS:
        kinds = (
            "Jobs, Pods, JobSets, PyTorchJobs, RayJobs, MPIJobs, TFJobs, XGBoostJobs, PaddleJobs, "
            "JAXJobs, RayClusters, StatefulSets, Deployments, LeaderWorkerSets and TrainJobs"
        )
        return f"the fast engine replays {kinds}, not {e.kind}s"
    return None


def declared_nodes(config: StackConfig) -> list[dict[str, Any]]:
    try:
        return nodes(config)
    except NodeNameClash as exc:
        raise FastEngineError(str(exc)) from None


def engine_input(
    config: StackConfig,
    entries: list[Entry],
    configuration: str,
    until: float | None,
    workload_uids: Mapping[tuple[str, str], str] | None = None,
    placement_order: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The engine's input document (toolchain/go/whatif/input.go): the valid entries it
    replays, the stack's objects and nodes, Kueue's controller pods, the release's
    Configuration and CRDs, and (for the cross-check) another run's Workload UIDs and the order
    its cluster saw the admissions in, a (namespace, name) for each."""
    why = unmodelled(config)
    if why:
        raise FastEngineError(why)
    index = {(e.namespace, e.name): e.index for e in entries}
    replayed = [e for e in entries if e.status == "ok" and not_fast(e) is None]
    jobs = [
        {
            "index": e.index,
            "kind": e.kind,
            "manifest": e.manifest,
            "submitAt": e.submit_at,
            "duration": -1 if e.duration is None else e.duration,
            **({"members": list(e.members)} if e.members else {}),
        }
        for e in replayed
    ]
    return {
        "crds": release_crds(config.kueue.version),
        "objects": namespaces(config) + kueue_objects(config),
        "configuration": configuration,
        "nodes": declared_nodes(config),
        "pods": controller_pods(config),
        "jobs": jobs,
        "runtimes": distinct(e.runtime for e in replayed),
        "until": until or 0,
        "workloadUIDs": {
            str(e.index): uid
            for e in entries
            if (uid := (workload_uids or {}).get((e.namespace, e.name)))
        },
        "placementOrder": [index[k] for k in placement_order if k in index],
    }
