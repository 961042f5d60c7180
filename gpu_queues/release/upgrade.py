"""The Kueue running in the cluster, read before anything is applied: is this move safe?

Only the cluster knows which Kueue runs there (the stack's state may be gone, or Kueue may
have been installed or changed by hand) and at which versions its objects are stored (each
CRD's status.storedVersions). So the program reads it, read-only, in its validation phase,
after the config and the manifest passed and before the first resource is registered, in
`pulumi preview` (the PR preview shows the move and its refusal) and in `pulumi up`:

- the running version: the tag of the kueue-controller-manager Deployment's manager image
  (the release allowlist ties that tag to the release, so it names the version);
- every Kueue CRD the new manifest ships, as the cluster has it: its storage version and
  status.storedVersions.

`upgrade_problems` then refuses, naming the CRD and the versions:
- a version stored in the cluster that the new release's CRD does not define (the API
  server would refuse the CRD update half-way through the install, and the objects stored
  at that version would become unreadable): migrate the stored objects first;
- a downgrade across a storage-version change (the running release stores a CRD at another
  version than the older target would): the older Kueue cannot read back what the newer one
  wrote. Supported releases share their storage versions (v1beta2), so moving between them
  is allowed both ways.

A cluster that cannot be read stops `pulumi up` (nothing could be applied anyway) and is a
warning in `pulumi preview` (a preview without cluster credentials still shows the rest).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from gpu_queues import yamlio
from gpu_queues.kueue.versions import parse_version
from gpu_queues.release.catalogue import (
    CONTROLLER_DEPLOYMENT,
    IMAGE_PATH,
    IMAGE_REPOSITORY,
    KUEUE_NAMESPACE,
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIGMAP,
    MANAGER_CONTAINER,
    expected_image,
    is_kueue_group,
)

if TYPE_CHECKING:
    from gpu_queues.config.model import StackConfig
    from gpu_queues.release.manifest import PreparedManifest


class UpgradeRefused(Exception):
    """Moving the cluster's Kueue to the stack's version is unsafe; nothing was applied."""


class ClusterUnreadable(Exception):
    """The cluster could not be read (no kubeconfig, unreachable, forbidden)."""


@dataclass(frozen=True)
class LiveCrd:
    name: str
    storage: str | None
    """spec.versions[].storage: the version new writes are stored at."""
    stored_versions: tuple[str, ...]
    """status.storedVersions: every version objects may still be stored at in etcd."""


@dataclass(frozen=True)
class LiveKueue:
    """What the cluster runs: nothing (a fresh cluster), or a Kueue at some version."""

    image: str | None = None
    crds: Mapping[str, LiveCrd] = field(default_factory=dict)

    @property
    def version(self) -> str | None:
        """The running release, from the controller's image tag; None if none or not vX.Y.Z."""
        if self.image is None:
            return None
        repository, _, tag = self.image.rpartition(":")
        # the release's image, or its mirror (kueue.controller.imageRegistry keeps the path)
        if repository != IMAGE_REPOSITORY and not repository.endswith(f"/{IMAGE_PATH}"):
            return None
        try:
            parse_version(tag)
        except ValueError:
            return None
        return tag


Reader = Callable[[str | None, str | None, Sequence[str]], LiveKueue]
"""reader(kubeconfig content or None for $KUBECONFIG, context, CRD names) -> LiveKueue."""


# --- the manifest side ------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetCrd:
    name: str
    versions: tuple[str, ...]
    storage: str | None


def target_crds(objects: Sequence[Mapping[str, Any]]) -> dict[str, TargetCrd]:
    """Kueue's CRDs in a (checked) release manifest, with their versions."""
    found: dict[str, TargetCrd] = {}
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition":
            continue
        spec = obj.get("spec") or {}
        if not is_kueue_group(str(spec.get("group", ""))):
            continue
        versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
        storage = next((str(v.get("name")) for v in versions if v.get("storage") is True), None)
        name = str(obj["metadata"]["name"])
        found[name] = TargetCrd(name, tuple(str(v.get("name")) for v in versions), storage)
    return found


def upgrade_problems(
    live: LiveKueue, version: str, objects: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Why installing release `version` (its prepared objects) over `live` is unsafe."""
    running = live.version
    downgrade = running is not None and parse_version(version) < parse_version(running)
    problems: list[str] = []
    for name, target in sorted(target_crds(objects).items()):
        crd = live.crds.get(name)
        if crd is None:
            continue
        lost = [v for v in crd.stored_versions if v not in target.versions]
        if lost:
            problems.append(
                f"CRD {name}: the cluster still stores objects at {', '.join(lost)} "
                f"(status.storedVersions {list(crd.stored_versions)}), which Kueue {version} "
                f"does not define (it defines {', '.join(target.versions)}): the API server "
                "would refuse the CRD half-way through the install and those objects would "
                f"become unreadable. Migrate them to {target.storage} first (rewrite every "
                "object, then drop the old versions from status.storedVersions)"
                + (f", or stay on {running}" if running else "")
            )
        elif downgrade and crd.storage is not None and crd.storage != target.storage:
            problems.append(
                f"CRD {name}: downgrading Kueue {running} -> {version} crosses a storage-version "
                f"change ({running} stores it at {crd.storage}, {version} at {target.storage}): "
                f"what {running} wrote cannot be read back faithfully by {version}. Stay on "
                f"{running}, or restore a backup taken before the upgrade"
            )
    return problems


def describe_move(live: LiveKueue, version: str) -> str:
    """One line for the preview: what the install does to the running Kueue."""
    running = live.version
    if live.image is None:
        return f"Kueue {version}: fresh install (no {CONTROLLER_DEPLOYMENT} in the cluster)"
    if running is None:
        return f"Kueue {version} replaces a controller running image {live.image}"
    if running == version:
        return f"Kueue {version}: already running, no version change"
    direction = "downgrade" if parse_version(version) < parse_version(running) else "upgrade"
    return f"Kueue {running} -> {version} ({direction})"


# --- reading the cluster ----------------------------------------------------------------------


def read_live(kubeconfig: str | None, context: str | None, crd_names: Sequence[str]) -> LiveKueue:
    """The running Kueue, read-only: one Deployment and each named CRD (GETs only)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpu_queues.kueue.client import KubeconfigError
    from gpu_queues.kueue.client import api_client as make_api_client

    try:
        api_client = make_api_client(kubeconfig, context)  # in memory: no key on disk
    except (KubeconfigError, OSError) as exc:
        raise ClusterUnreadable(f"no usable kubeconfig: {exc}") from None
    try:
        apps: Any = client.AppsV1Api(api_client)
        ext: Any = client.ApiextensionsV1Api(api_client)
        image: str | None = None
        try:
            deployment = apps.read_namespaced_deployment(
                CONTROLLER_DEPLOYMENT, KUEUE_NAMESPACE, _request_timeout=10
            )
            for container in deployment.spec.template.spec.containers or []:
                if container.name == MANAGER_CONTAINER:
                    image = container.image
        except ApiException as exc:
            if exc.status != 404:
                why = f"reading Deployment {CONTROLLER_DEPLOYMENT}: {exc.reason}"
                raise ClusterUnreadable(why) from None
        crds: dict[str, LiveCrd] = {}
        for name in crd_names:
            try:
                crd = ext.read_custom_resource_definition(name, _request_timeout=10)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise ClusterUnreadable(f"reading CRD {name}: {exc.reason}") from None
            storage = next((v.name for v in crd.spec.versions or [] if v.storage), None)
            stored = tuple((crd.status.stored_versions if crd.status else None) or ())
            crds[name] = LiveCrd(name, storage, stored)
        return LiveKueue(image, crds)
    except ClusterUnreadable:
        raise
    except Exception as exc:  # connection refused, TLS, timeouts
        raise ClusterUnreadable(f"{type(exc).__name__}: {exc}") from None
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class Checked:
    """What check_live found, for the program's log."""

    message: str
    warning: bool = False
    """True when the checks could not run (a preview without a readable cluster)."""


def check_live(
    kubeconfig: str | None,
    context: str | None,
    version: str,
    objects: Sequence[Mapping[str, Any]],
    dry_run: bool,
    reader: Reader = read_live,
) -> Checked:
    """The move this install makes; UpgradeRefused when it is unsafe.

    An unreadable cluster refuses `up` and is only a warning in a preview."""
    try:
        live = reader(kubeconfig, context, sorted(target_crds(objects)))
    except ClusterUnreadable as exc:
        message = f"cannot read the cluster to check the running Kueue against {version} ({exc})"
        if dry_run:
            return Checked(message + "; the upgrade checks are skipped in this preview", True)
        raise UpgradeRefused(message + "; nothing was applied") from None
    problems = upgrade_problems(live, version, objects)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise UpgradeRefused(
            f"{describe_move(live, version)} is refused; nothing was applied. "
            f"{len(problems)} problem(s):\n{lines}"
        )
    return Checked(describe_move(live, version))


def check_stack(
    config: StackConfig,
    manifest: PreparedManifest | None,
    dry_run: bool,
    reader: Reader = read_live,
) -> Checked | None:
    """check_live for the program: the stack's connection and prepared release; None when the
    stack does not install Kueue (it only waits for one that is there)."""
    if manifest is None:
        return None
    secret = config.kubernetes.kubeconfig
    kubeconfig = secret.get_secret_value() if secret is not None else None
    return check_live(
        kubeconfig, config.kubernetes.context, manifest.version, manifest.objects, dry_run, reader
    )


# --- the rollout, for the readiness gate --------------------------------------------------------


def rollout_pending(api_client: Any, version: str, image: str | None = None) -> str | None:
    """What still stands between the cluster and a controller of `version` serving alone; None
    when the Deployment's rollout is complete, every controller pod runs `version` with none
    terminating (an old pod may still answer webhooks while it shuts down), and the leader
    lease is held by a controller of this rollout. `image` is the one the prepared Deployment
    runs (a mirror's); default: the release's own."""
    from kubernetes import client

    apps: Any = client.AppsV1Api(api_client)
    core: Any = client.CoreV1Api(api_client)
    deployment = apps.read_namespaced_deployment(
        CONTROLLER_DEPLOYMENT, KUEUE_NAMESPACE, _request_timeout=10
    )
    status = deployment.status
    wanted = deployment.spec.replicas if deployment.spec.replicas is not None else 1
    if (status.observed_generation or 0) < (deployment.metadata.generation or 0):
        return f"Deployment {CONTROLLER_DEPLOYMENT}: the new spec is not observed yet"
    updated, available = status.updated_replicas or 0, status.available_replicas or 0
    if updated < wanted or available < wanted or (status.replicas or 0) > updated:
        return (
            f"Deployment {CONTROLLER_DEPLOYMENT}: rollout in progress ({updated} updated, "
            f"{available} available, {status.replicas or 0} in all, {wanted} wanted)"
        )
    labels = deployment.spec.selector.match_labels or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = core.list_namespaced_pod(
        KUEUE_NAMESPACE, label_selector=selector, _request_timeout=10
    ).items
    image = image or expected_image(version)
    for pod in pods:
        images = [c.image for c in pod.spec.containers if c.name == MANAGER_CONTAINER]
        if pod.metadata.deletion_timestamp is not None:
            return f"controller pod {pod.metadata.name} ({', '.join(images)}) is still terminating"
        if images != [image]:
            return f"controller pod {pod.metadata.name} runs {', '.join(images)}, not {image}"
    if not pods:
        return f"no controller pod of Deployment {CONTROLLER_DEPLOYMENT} yet"
    return _leader_pending(core, api_client, min(p.metadata.creation_timestamp for p in pods))


# A leader's clock and the API server's may differ a little (a node's clock).
_CLOCK_SKEW = datetime.timedelta(seconds=2)


def _leader_pending(core: Any, api_client: Any, oldest_pod: datetime.datetime) -> str | None:
    """With leader election on (the release Configuration's leaderElection), a controller of
    this rollout must hold the lease: one that took it before the oldest current pod existed
    is an older controller still running (it releases the lease when it stops)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    cm = core.read_namespaced_config_map(MANAGER_CONFIGMAP, KUEUE_NAMESPACE, _request_timeout=10)
    try:
        text = (cm.data or {}).get(MANAGER_CONFIG_KEY) or ""
        loaded = yamlio.load(text, f"the cluster's {MANAGER_CONFIGMAP} {MANAGER_CONFIG_KEY}")
    except (yaml.YAMLError, yamlio.YamlRefused):
        return None
    election = (loaded or {}).get("leaderElection") if isinstance(loaded, dict) else None
    if not isinstance(election, dict) or election.get("leaderElect") is not True:
        return None
    name = election.get("resourceName")
    namespace = election.get("resourceNamespace") or KUEUE_NAMESPACE
    if not isinstance(name, str) or not name:
        return None
    leases: Any = client.CoordinationV1Api(api_client)
    try:
        lease = leases.read_namespaced_lease(name, namespace, _request_timeout=10)
    except ApiException as exc:
        if exc.status == 404:
            return f"no controller has taken the leader lease {namespace}/{name} yet"
        raise
    acquired = lease.spec.acquire_time
    if not lease.spec.holder_identity or acquired is None:
        return f"the leader lease {namespace}/{name} has no holder yet"
    if acquired + _CLOCK_SKEW < oldest_pod:
        return (
            f"the leader lease {namespace}/{name} is still held by a controller older than "
            f"this rollout (taken at {acquired.isoformat()})"
        )
    return None
