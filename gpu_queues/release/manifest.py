"""Kueue release install: the pinned manifest, checked and prepared before anything exists.

`load_release` reads the manifest, verifies its sha256, parses it, refuses every object a
Kueue release does not ship (gpu_queues.release.allowlist) and lays the stack's settings over
it: the manager ConfigMap is re-rendered from stack config and the controller Deployment
gets the stack's replicas, resources and placement. The program calls it in its validation
phase, so a bad manifest registers nothing, not even the provider. gpu_queues.components.kueue
then applies the prepared objects server-side, object by object; what was checked is what is
applied.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues import keys, yamlio
from gpu_queues.config.model import KueueConfig, ManagerConfig
from gpu_queues.files import NotReadable, read_bytes
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.release import custom, digests
from gpu_queues.release.allowlist import check_release, created_namespaces, find
from gpu_queues.release.catalogue import (
    CONTROLLER_DEPLOYMENT,
    IMAGE_REGISTRY,
    KUEUE_NAMESPACE,
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIGMAP,
    MANAGER_CONTAINER,
    Document,
)
from gpu_queues.release.data import problem as data_problem
from gpu_queues.release.module import RENDER_DIR
from gpu_queues.release.reference import PinnedReleases, Releases, ReleaseUnavailable
from gpu_queues.values import as_dict, as_list

PROJECT_ROOT = Path(__file__).resolve().parents[2]

__all__ = [
    "CONTROLLER_DEPLOYMENT",
    "KUEUE_NAMESPACE",
    "MANAGER_CONFIGMAP",
    "MANAGER_CONFIG_KEY",
    "MANAGER_CONTAINER",
    "ManifestError",
    "PreparedManifest",
    "load_manifest",
    "load_release",
    "parse_documents",
    "parse_manifest",
    "prepare_manifest",
    "read_manifest",
    "verify_sha256",
]


class ManifestError(Exception):
    """The Kueue manifest cannot be read, does not match its checksum, or is not a release."""


def read_manifest(
    config: KueueConfig, root: Path = PROJECT_ROOT, timeout: float = 60.0, limit: int | None = None
) -> bytes:
    """The manifest bytes, from the local path when set, else from the (mirror or release) URL;
    at most `limit` bytes (default MAX_MANIFEST_BYTES) either way."""
    limit = MAX_MANIFEST_BYTES if limit is None else limit
    if config.manifest.path is not None:
        path = Path(config.manifest.path)
        path = path if path.is_absolute() else root / path
        try:
            return read_bytes(path, f"the Kueue manifest {path}", limit)
        except NotReadable as exc:
            hint = ""
            if not path.exists() and Path(config.manifest.path).parts[:1] == (RENDER_DIR,):
                # The rendered release is generated, never committed: CI and fresh clones
                # render it before `pulumi preview`.
                hint = (
                    ". It is rendered from the pinned Kueue module: run `make kueue-manifest` "
                    "(docs/kueue-manifest.md)"
                )
            raise ManifestError(f"{exc} (gpu-queues:kueue.manifest.path){hint}") from None
    return download(config.manifest_url, timeout, limit)


# A release manifest is about 2 MB; anything far larger is not one, and is not read whole.
MAX_MANIFEST_BYTES = 32 * 2**20
# A release has about 80 objects and a custom manifest adds at most 50 (custom.MAX_ADDED):
# eight million empty documents fit in 32 MiB and would take a minute to parse.
MAX_DOCUMENTS = 10_000
MANIFEST_BOUNDS = yamlio.Bounds(max_bytes=MAX_MANIFEST_BYTES)


class _NoDowngrade(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the scheme the request had: https never becomes http (the
    manifest would then travel in clear), and no redirect leaves http(s) (file:, ftp:)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        old, new = urllib.parse.urlsplit(req.full_url).scheme, urllib.parse.urlsplit(newurl).scheme
        if new != old:
            raise ManifestError(
                f"the Kueue manifest {req.full_url} redirects to {newurl}: a redirect may not "
                f"change the scheme ({old} to {new or 'none'}), so it was not followed"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download(url: str, timeout: float = 60.0, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """The bytes at `url`: redirects only within its scheme, at most `limit` bytes."""
    opener = urllib.request.build_opener(_NoDowngrade())
    try:
        with opener.open(url, timeout=timeout) as response:
            data: bytes = response.read(limit + 1)
    except ManifestError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ManifestError(
            f"cannot download the Kueue manifest {url}: {exc}. For an air-gapped cluster set "
            "gpu-queues:kueue.manifest.url to a mirror or kueue.manifest.path to a local file"
        ) from None
    if len(data) > limit:
        raise ManifestError(
            f"the Kueue manifest {url} is larger than {limit} bytes: not a Kueue release "
            "manifest, so it was not read further"
        )
    return data


def verify_sha256(data: bytes, expected: str | None, source: str) -> str:
    """The manifest's sha256; ManifestError when an expected digest is set and differs."""
    actual = hashlib.sha256(data).hexdigest()
    if expected is not None and actual != expected:
        raise ManifestError(
            f"Kueue manifest {source} has sha256 {actual}, but gpu-queues:kueue.manifest.sha256 "
            f"expects {expected}; nothing was applied. Check the source, or update the checksum "
            "if the new manifest is trusted (make pin-kueue, docs/kueue-manifest.md)"
        )
    return actual


def _aliases(text: str, source: str) -> list[int]:
    """Indexes of documents that use YAML aliases (never in a release; a way to blow up);
    ManifestError past MAX_DOCUMENTS documents, before any of them is built."""
    found: list[int] = []
    index = -1
    for event in yamlio.events(text, f"Kueue manifest {source}", MANIFEST_BOUNDS):
        if isinstance(event, yaml.DocumentStartEvent):
            index += 1
            if index >= MAX_DOCUMENTS:
                raise ManifestError(
                    f"Kueue manifest {source} has more than {MAX_DOCUMENTS} YAML documents; a "
                    "release has about 80 objects, refusing it"
                )
        elif isinstance(event, yaml.AliasEvent) and index not in found:
            found.append(index)
    return found


def parse_documents(data: bytes, source: str) -> list[Document]:
    """Kubernetes objects of a multi-document YAML manifest, with their document indexes."""
    try:
        text = data.decode("utf-8")
        aliased = _aliases(text, source)
        docs = yamlio.load_all(text, f"Kueue manifest {source}", MANIFEST_BOUNDS)
    except yamlio.YamlRefused as exc:
        raise ManifestError(str(exc)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ManifestError(f"Kueue manifest {source} is not valid YAML: {exc}") from None
    if aliased:
        raise ManifestError(
            f"Kueue manifest {source}: document(s) {', '.join(map(str, aliased))} use YAML "
            "aliases; a release manifest never does, refusing it"
        )
    objects: list[Document] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("apiVersion"), str)
            or not isinstance(doc.get("kind"), str)
            or not isinstance(doc.get("metadata"), dict)
            or not isinstance(doc["metadata"].get("name"), str)
        ):
            raise ManifestError(
                f"Kueue manifest {source}: document {index} is not a Kubernetes object "
                "(apiVersion, kind and metadata.name are required)"
            )
        if (why := data_problem(doc)) is not None:
            meta = doc["metadata"]
            where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
            raise ManifestError(
                f"Kueue manifest {source}: document {index} ({one_line(str(doc['kind']))} "
                f"{one_line(str(where))}) is not Kubernetes data: {one_line(why)}. Nothing was "
                "applied"
            )
        objects.append(Document(index, doc))
    if not objects:
        raise ManifestError(f"Kueue manifest {source} contains no objects")
    return objects


def parse_manifest(data: bytes, source: str) -> list[dict[str, Any]]:
    """The objects of a manifest (see parse_documents), without their indexes."""
    return [d.obj for d in parse_documents(data, source)]


def manifest_source(config: KueueConfig) -> str:
    return config.manifest.path if config.manifest.path is not None else config.manifest_url


def load_manifest(config: KueueConfig, root: Path = PROJECT_ROOT) -> list[Document]:
    """Read, verify and parse the manifest; raises ManifestError before anything exists."""
    source = manifest_source(config)
    data = read_manifest(config, root)
    verify_sha256(data, config.manifest.sha256, source)
    return parse_documents(data, source)


# --- manager Configuration ----------------------------------------------------------------

# Kueue reports a ClusterQueue's usage, nominal quota, borrowing and lending limits per
# flavor and resource only with this (config.kueue.x-k8s.io Configuration, metrics section).
RESOURCE_METRICS: Final = {"enableClusterQueueResources": True}


def render_manager_config(
    base_text: str, manager: ManagerConfig, resource_metrics: bool = False
) -> str:
    """The release's Configuration with the stack's settings laid over it.

    Starting from the release keeps what the manifest wires together (webhook port, health
    and metrics addresses, leader election); waitForPodsReady and fairSharing are switched on
    by being present (Kueue v1beta2 has no `enable` field). `resource_metrics` sets
    `metrics.enableClusterQueueResources`, which the dashboard's ClusterQueue resource gauges
    need (gpu_queues/kueue/promql.py).
    """
    loaded = yamlio.load(base_text, "the release's manager Configuration") if base_text else None
    config: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
    config["apiVersion"] = keys.KUEUE_CONFIG_API_VERSION
    config["kind"] = "Configuration"
    overlay = manager.model_dump(by_alias=True, exclude_none=True)
    integrations = overlay.pop("integrations", None)
    if integrations:
        merged = dict(config.get("integrations") or {})
        merged.update(integrations)
        config["integrations"] = merged
    config.update(overlay)
    if resource_metrics:
        metrics = config.get("metrics")
        config["metrics"] = {**(metrics if isinstance(metrics, dict) else {}), **RESOURCE_METRICS}
    return yaml.safe_dump(config, sort_keys=False)


def _feature_gate_args(container: dict[str, Any]) -> list[str]:
    """Gate names set by --feature-gates flags, in order (a name may appear twice)."""
    gates: list[str] = []
    for arg in [*(container.get("args") or []), *(container.get("command") or [])]:
        if isinstance(arg, str) and arg.startswith("--feature-gates="):
            for item in arg.split("=", 1)[1].split(","):
                if item.strip():
                    gates.append(item.split("=", 1)[0].strip())
    return gates


@dataclass(frozen=True)
class PreparedManifest:
    """A release manifest that passed every check, with the stack's settings applied."""

    version: str
    objects: tuple[dict[str, Any], ...]
    sha256: str | None
    """The digest the program verified the manifest against (recorded on the controller);
    None when no checksum is configured."""
    namespaces: frozenset[str]
    """Namespaces the manifest creates (kueue-system): never a team's."""
    provenance: str | None = None
    """How the manifest compares with the release's recorded digests (load_release), for the
    preview to show: the release object for object, or what differs."""
    genuine: bool = False
    """Every object matches the digests of the release (gpu_queues.release.digests)."""

    @property
    def image(self) -> str | None:
        """The controller image the prepared Deployment runs (a mirror's, with
        kueue.controller.imageRegistry): what the readiness gate waits for."""
        deployment = find(
            list(self.objects), "apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT
        )
        pod = as_dict(as_dict(as_dict(as_dict(deployment).get("spec")).get("template")).get("spec"))
        for container in as_list(pod.get("containers")):
            if as_dict(container).get("name") == MANAGER_CONTAINER:
                image = as_dict(container).get("image")
                return image if isinstance(image, str) else None
        return None


def _mapping(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] as a mapping, made one when it is missing or empty (`annotations:`)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def _refused(source: str, version: str, refusals: Sequence[object]) -> ManifestError:
    lines = "\n".join(f"  - {r}" for r in refusals)
    return ManifestError(
        f"the Kueue manifest {source} is not a Kueue {version} release as published; nothing "
        f"was applied. {len(refusals)} problem(s):\n{lines}"
    )


def prepare_manifest(
    objects: Sequence[dict[str, Any]] | Sequence[Document],
    config: KueueConfig,
    source: str = "(given objects)",
    verified_sha256: str | None = None,
) -> PreparedManifest:
    """Check the manifest against the release allowlist, then apply the stack's settings.

    `verified_sha256` is recorded on the controller Deployment for the policy pack; pass it
    only after verify_sha256 accepted the bytes against the configured digest (load_release).
    """
    docs = _documents(objects, source)
    refusals: list[object] = list(check_release(docs, config.version))
    if kueue_versions.release(config.version) is None:
        # Its config rules, CRDs and defaults are unknown: the program was not tested with it.
        refusals.append(kueue_versions.unsupported_message(config.version))
    if refusals:
        raise _refused(source, config.version, refusals)
    prepared = [copy.deepcopy(d.obj) for d in docs]
    configmap = find(prepared, "", "ConfigMap", KUEUE_NAMESPACE, MANAGER_CONFIGMAP)
    deployment = find(prepared, "apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT)
    if configmap is None or deployment is None:  # check_release requires both
        raise _refused(source, config.version, ["no manager ConfigMap or controller Deployment"])
    config_hash = _render_configuration(configmap, config)
    spec = _mapping(deployment, "spec")
    template = _mapping(spec, "template")
    # A changed Configuration changes the pod template, so the controller rolls and reloads it.
    _mapping(_mapping(template, "metadata"), "annotations")[keys.ANNOTATION_CONFIG_HASH] = (
        config_hash
    )
    pod = _mapping(template, "spec")
    manager = next(c for c in pod["containers"] if c.get("name") == MANAGER_CONTAINER)
    _check_feature_gates(manager, config, source)
    if verified_sha256 is not None:
        _mapping(_mapping(deployment, "metadata"), "annotations")[
            keys.ANNOTATION_MANIFEST_SHA256
        ] = verified_sha256
    _apply_controller(config, spec, pod, manager)
    return PreparedManifest(
        version=config.version,
        objects=tuple(prepared),
        sha256=verified_sha256,
        namespaces=created_namespaces(docs),
    )


def _documents(
    objects: Sequence[dict[str, Any]] | Sequence[Document], source: str
) -> list[Document]:
    docs: list[Document] = []
    for i, item in enumerate(objects):
        if isinstance(item, Document):
            docs.append(item)
        elif isinstance(item, dict):
            docs.append(Document(i, item))
        else:
            raise ManifestError(f"Kueue manifest {source}: object {i} is not a mapping")
    return docs


def _render_configuration(configmap: dict[str, Any], config: KueueConfig) -> str:
    """The stack's manager settings into the release's Configuration; its sha256."""
    data = dict(configmap["data"])  # check_release: a mapping holding the Configuration
    base = data[MANAGER_CONFIG_KEY]
    rendered = render_manager_config(base, config.manager, config.metrics.dashboard.enabled)
    configmap["data"] = {**data, MANAGER_CONFIG_KEY: rendered}
    return hashlib.sha256(rendered.encode("utf-8")).hexdigest()


def _check_feature_gates(manager: dict[str, Any], config: KueueConfig, source: str) -> None:
    """Each gate once in the controller's --feature-gates, and not in both places."""
    in_args = _feature_gate_args(manager)
    twice = sorted({g for g in in_args if in_args.count(g) > 1})
    if twice:
        raise ManifestError(
            f"the Kueue manifest {source}: feature gate(s) {', '.join(twice)} are set more than "
            f"once in the --feature-gates of Deployment {KUEUE_NAMESPACE}/{CONTROLLER_DEPLOYMENT}; "
            "nothing was applied"
        )
    both = sorted(set(in_args) & set(config.manager.feature_gates or {}))
    if both:
        raise ManifestError(
            f"feature gate(s) {', '.join(both)} are set both in "
            "gpu-queues:kueue.manager.featureGates and in the controller's --feature-gates "
            f"(Kueue manifest {source}); Kueue refuses that, keep one. Nothing was applied"
        )


def mirrored(image: str, registry: str) -> str:
    """The release's `image` pulled from `registry` instead of registry.k8s.io: only the
    registry changes, the path, tag and digest are the release's (ManifestError otherwise)."""
    prefix = f"{IMAGE_REGISTRY}/"
    if not image.startswith(prefix):  # check_release: the release's own image
        raise ManifestError(f"the controller image {image} is not pulled from {IMAGE_REGISTRY}")
    out = f"{registry}/{image[len(prefix) :]}"
    if out.rpartition("/")[2] != image.rpartition("/")[2]:
        raise ManifestError(f"mirroring {image} through {registry} would change its tag")
    return out


def knobs_in_effect(config: KueueConfig) -> list[str]:
    """The typed knobs of gpu-queues:kueue.controller this stack sets, for the preview."""
    ctrl = config.controller.model_dump(by_alias=True, exclude_none=True)
    return [f"{key}={json.dumps(ctrl[key], sort_keys=True)}" for key in sorted(ctrl)]


def _apply_controller(
    config: KueueConfig, spec: dict[str, Any], pod: dict[str, Any], manager: dict[str, Any]
) -> None:
    """gpu-queues:kueue.controller: replicas, the manager's resources, its placement, its
    image's registry, priority class and pull secrets."""
    ctrl = config.controller
    if ctrl.image_registry is not None:
        manager["image"] = mirrored(str(manager.get("image")), ctrl.image_registry)
    if ctrl.priority_class_name is not None:
        pod["priorityClassName"] = ctrl.priority_class_name
    if ctrl.image_pull_secrets is not None:
        pod["imagePullSecrets"] = [{"name": n} for n in ctrl.image_pull_secrets]
    apply_placement(config, spec, pod, manager)


def apply_placement(
    config: KueueConfig, spec: dict[str, Any], pod: dict[str, Any], manager: dict[str, Any]
) -> None:
    """The knobs of gpu-queues:kueue.controller that decide what the controller's pods take
    and where they may run: replicas, the manager's resources, nodeSelector, tolerations."""
    ctrl = config.controller
    if ctrl.replicas is not None:
        spec["replicas"] = ctrl.replicas
    if ctrl.resources is not None:
        manager["resources"] = ctrl.resources.model_dump(by_alias=True, exclude_none=True)
    if ctrl.node_selector is not None:
        pod["nodeSelector"] = dict(ctrl.node_selector)
    if ctrl.tolerations is not None:
        pod["tolerations"] = [
            t.model_dump(by_alias=True, exclude_none=True) for t in ctrl.tolerations
        ]


def load_release(
    config: KueueConfig, root: Path = PROJECT_ROOT, releases: Releases | None = None
) -> PreparedManifest:
    """Read, verify, parse, check and prepare the release; ManifestError on any problem.

    A manifest whose objects all match the digests of `kueue.version` is the release. Any
    other is refused unless `kueue.manifest.custom` is true with a reason, and then it is
    checked field by field against the genuine release (gpu_queues/release/custom.py), which
    `releases` provides (default: the committed digests and the render of `make
    kueue-manifest` under `root`, gpu_queues/release/reference.py).

    The checksum annotation is written only here, from a digest verify_sha256 just matched
    against gpu-queues:kueue.manifest.sha256: it is never taken from the manifest itself.
    """
    releases = releases if releases is not None else PinnedReleases(root)
    source = manifest_source(config)
    data = read_manifest(config, root)
    digest = verify_sha256(data, config.manifest.sha256, source)
    verified = digest if config.manifest.sha256 is not None else None
    docs = parse_documents(data, source)
    objects = [d.obj for d in docs]
    verdict = digests.compare_with(objects, config.version, releases.recorded(config.version))
    shown = one_line(source)  # the preview shows it: a file name cannot add a line there
    knobs = knobs_in_effect(config)
    shown_knobs = (
        f"; typed knobs in effect (gpu-queues:kueue.controller): {one_line(', '.join(knobs))}"
        if knobs
        else ""
    )
    if verdict.genuine:
        prepared = prepare_manifest(docs, config, source, verified)
        return dataclasses.replace(
            prepared, provenance=verdict.summary(shown) + shown_knobs, genuine=True
        )
    if not config.manifest.custom:
        raise ManifestError(_not_the_release(source, config.version, verdict, objects, releases))
    try:
        release = releases.objects(config.version)
    except ReleaseUnavailable as error:
        raise ManifestError(
            f"the Kueue manifest {source} is a custom manifest (gpu-queues:kueue.manifest."
            f"custom), checked field by field against the release {config.version}, which is "
            f"not available: {error}. Nothing was applied"
        ) from None
    prepared = prepare_manifest(docs, config, source, verified)
    reference = prepare_manifest(
        _documents(release, "the release"), config, f"the release {config.version}", verified
    )
    problems = custom.check(prepared.objects, reference.objects, config.version)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ManifestError(
            f"the custom Kueue manifest {source} (gpu-queues:kueue.manifest.custom) is not "
            f"the release {config.version} with only what a custom manifest may change; nothing "
            f"was applied. {len(problems)} problem(s):\n{lines}"
        )
    changed = custom.changes(objects, release)
    listed = "; ".join(changed[:8]) + (f"; and {len(changed) - 8} more" if len(changed) > 8 else "")
    provenance = (
        f"Kueue manifest {shown}: a custom manifest (gpu-queues:kueue.manifest.custom: "
        f"{one_line((config.manifest.reason or '').strip())}), checked field by field against the "
        f"release {config.version}; it differs in {len(changed)} object(s): "
        f"{one_line(listed) or 'none'}{shown_knobs}"
    )
    return dataclasses.replace(prepared, provenance=provenance, genuine=False)


def one_line(text: str) -> str:
    """`text` with its line breaks and other control characters escaped (\\n, \\x1b...)."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _not_the_release(
    source: str,
    version: str,
    verdict: digests.Verdict,
    objects: Sequence[dict[str, Any]],
    releases: Releases,
) -> str:
    """Why a manifest is not the release, naming the first differing object (and field, when
    the release's objects are at hand), and how to install it anyway."""
    try:
        first = custom.first_difference(objects, releases.objects(version))
    except ReleaseUnavailable:
        first = None
    where = f" The first difference: {first}." if first else ""
    return (
        f"{verdict.summary(source)}.{where} A manifest other than the release is installed "
        "only as a custom manifest: set gpu-queues:kueue.manifest.custom: true with a "
        "kueue.manifest.reason, and it is checked field by field against the release "
        "(docs/kueue-manifest.md). Nothing was applied"
    )
