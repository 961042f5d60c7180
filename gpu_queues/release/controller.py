"""The controller a release runs: its one Deployment (pod, containers, image, security
context, environment, volumes), its manager Configuration, and its certificate Secret, which
ships empty. Part of the release allowlist (gpu_queues/release/allowlist.py); the names are in
catalogue.py.
"""

from __future__ import annotations

import re
from typing import Any, Final

import yaml

from gpu_queues import yamlio
from gpu_queues.release.catalogue import (
    CONTROLLER_DEPLOYMENT,
    IMAGE_REPOSITORY,
    KUEUE_NAMESPACE,
    MANAGER_COMMAND,
    MANAGER_CONFIG_KEY,
    MANAGER_CONTAINER,
    Document,
    Inventory,
    dig,
    expected_image,
    strs,
)
from gpu_queues.values import as_dict, as_list

# What the release's manager Configuration sets: wiring (ports, probes, leader election,
# client rate, concurrency) and the default integrations. Settings that change what Kueue
# manages (manageJobsWithoutQueueName, managedJobsNamespaceSelector, waitForPodsReady,
# featureGates, ...) come from the stack config (gpu-queues:kueue.manager), never from it.
RELEASE_CONFIG_KEYS: Final = frozenset(
    {
        "apiVersion",
        "kind",
        "health",
        "metrics",
        "webhook",
        "leaderElection",
        "controller",
        "clientConnection",
        "integrations",
    }
)
# Environment that changes where the controller's client connects or whom it trusts.
_REDIRECTING_ENV = re.compile(r"^(KUBERNETES_.*|.*_PROXY|SSL_CERT_.*|GODEBUG)$", re.IGNORECASE)
_POD_VOLUME_TYPES = frozenset({"emptyDir", "secret", "configMap", "projected", "downwardAPI"})


def check_secret(doc: Document) -> list[str]:
    problems = []
    if doc.obj.get("data") or doc.obj.get("stringData"):
        problems.append(
            "carries data: a release ships its certificate Secret empty and Kueue fills it, "
            "so content here would plant credentials"
        )
    if doc.obj.get("type", "Opaque") != "Opaque":
        problems.append(f"has type {doc.obj.get('type')}, not Opaque")
    return problems


def check_manager_config(doc: Document) -> list[str]:
    text = as_dict(doc.obj.get("data")).get(MANAGER_CONFIG_KEY)
    if not isinstance(text, str):
        return [f"has no {MANAGER_CONFIG_KEY}, Kueue's manager Configuration"]
    try:
        if _uses_aliases(text):
            # a release's never does; expanded, a few lines of them are billions of values
            return [f"{MANAGER_CONFIG_KEY} uses YAML aliases; a release's Configuration never does"]
        config = yamlio.load(text, MANAGER_CONFIG_KEY)
    except yamlio.YamlRefused as exc:
        return [str(exc)]
    except yaml.YAMLError:
        config = None
    if not isinstance(config, dict) or config.get("kind", "Configuration") != "Configuration":
        return [f"{MANAGER_CONFIG_KEY} is not Kueue's Configuration (a YAML mapping)"]
    problems = []
    if extra := sorted(set(config) - RELEASE_CONFIG_KEYS):
        problems.append(
            f"{MANAGER_CONFIG_KEY} sets {', '.join(map(str, extra))}: a release leaves what "
            "Kueue manages to the stack config (gpu-queues:kueue.manager)"
        )
    if extra := sorted(set(as_dict(config.get("integrations"))) - {"frameworks"}):
        problems.append(
            f"{MANAGER_CONFIG_KEY} sets integrations.{', integrations.'.join(map(str, extra))}, "
            "which a release leaves to the stack config"
        )
    return problems


def _uses_aliases(text: str) -> bool:
    events = yamlio.events(text, MANAGER_CONFIG_KEY)
    return any(isinstance(e, yaml.AliasEvent) for e in events)


def _check_security_context(context: Any, where: str, pod: bool) -> list[str]:
    ctx = as_dict(context)
    problems = []
    if ctx.get("privileged") is True:
        problems.append(f"{where} is privileged")
    if ctx.get("allowPrivilegeEscalation") is True:
        problems.append(f"{where} allows privilege escalation")
    if added := strs(dig(ctx, "capabilities", "add")):
        problems.append(f"{where} adds capabilities {', '.join(added)}")
    if ctx.get("runAsUser") == 0 or ctx.get("runAsNonRoot") is False:
        problems.append(f"{where} runs as root")
    if ctx.get("procMount") not in (None, "Default"):
        problems.append(f"{where} unmasks /proc")
    for field in ("seccompProfile", "appArmorProfile"):
        if dig(ctx, field, "type") == "Unconfined":
            problems.append(f"{where} runs with {field} Unconfined")
    if ctx.get("seLinuxOptions"):
        problems.append(f"{where} sets SELinux options (a release sets none)")
    if pod and as_dict(ctx.get("windowsOptions")).get("hostProcess") is True:
        problems.append(f"{where} is a host process")
    return problems


def check_deployment(doc: Document, inv: Inventory, version: str) -> list[str]:
    """The one Deployment: a pod that stays in its box, running only the manager container."""
    if doc.name != CONTROLLER_DEPLOYMENT:
        return [
            f"a release runs one workload, Deployment {KUEUE_NAMESPACE}/{CONTROLLER_DEPLOYMENT}"
        ]
    pod = as_dict(dig(doc.obj, "spec", "template", "spec"))
    problems = _pod_problems(pod, inv)
    containers = as_list(pod.get("containers"))
    names = [as_dict(c).get("name") for c in containers]
    if names != [MANAGER_CONTAINER]:
        problems.append(
            f"the pod runs containers {names}; a release runs exactly one, {MANAGER_CONTAINER!r}"
        )
    for raw in containers:
        problems += _container_problems(as_dict(raw), version)
    for raw in as_list(pod.get("volumes")):
        volume = as_dict(raw)
        types = sorted(set(volume) - {"name"})
        if not set(types) <= _POD_VOLUME_TYPES:
            problems.append(
                f"volume {volume.get('name')} is of type {', '.join(types)}; a release mounts "
                f"only {', '.join(sorted(_POD_VOLUME_TYPES))}"
            )
    return problems


def _pod_problems(pod: dict[str, Any], inv: Inventory) -> list[str]:
    """No host namespaces, no extra containers, a ServiceAccount of the manifest."""
    problems = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field) is True:
            problems.append(f"the pod sets {field}")
    problems += _check_security_context(pod.get("securityContext"), "the pod", pod=True)
    for field in ("initContainers", "ephemeralContainers"):
        if pod.get(field):
            problems.append(f"the pod has {field}: a release runs only the manager container")
    accounts = {pod.get("serviceAccountName"), pod.get("serviceAccount")} - {None}
    for account in sorted(map(str, accounts)) or ["default"]:
        if account not in inv.service_accounts:
            problems.append(
                f"the pod runs as ServiceAccount {account}, not one this manifest defines in "
                f"{KUEUE_NAMESPACE}"
            )
    return problems


def _container_problems(container: dict[str, Any], version: str) -> list[str]:
    """Kueue's image and command, no extra rights, no host port, no redirecting environment."""
    problems = []
    where = f"container {container.get('name')}"
    image = container.get("image")
    if image != expected_image(version):
        problems.append(f"{where} runs image {image}; {image_mismatch(image, version)}")
    command = container.get("command")
    if command is not None and tuple(strs(command)) != MANAGER_COMMAND:
        problems.append(f"{where} runs command {command}, not {list(MANAGER_COMMAND)}")
    problems += _check_security_context(container.get("securityContext"), where, pod=False)
    if any(as_dict(p).get("hostPort") for p in as_list(container.get("ports"))):
        problems.append(f"{where} binds a host port")
    if container.get("envFrom"):
        problems.append(f"{where} takes its environment from other objects (envFrom)")
    redirecting = sorted(
        str(name)
        for name in (as_dict(e).get("name") for e in as_list(container.get("env")))
        if _REDIRECTING_ENV.match(str(name))
    )
    if redirecting:
        problems.append(
            f"{where} sets {', '.join(redirecting)}, which redirect or re-trust the "
            "controller's connections to the API server"
        )
    return problems


def image_mismatch(image: Any, version: str) -> str:
    """Why an image reference is not the one Kueue `version` ships, for error messages."""
    expected = expected_image(version)
    if not isinstance(image, str):
        return f"expected {expected}"
    if "@" in image:
        return (
            f"a digest cannot be tied to Kueue {version} without the registry; expected "
            f"{expected} (kueue.version). See docs/kueue-manifest.md on mirrors"
        )
    repository, _, tag = image.rpartition(":")
    if "/" in tag or not repository:
        repository, tag = image, ""
    if repository != IMAGE_REPOSITORY:
        return (
            f"expected {expected}. The image must be Kueue's official one; to pull it from a "
            "registry mirror set gpu-queues:kueue.controller.imageRegistry, which changes only "
            "the registry (docs/kueue-manifest.md, Mirrors)"
        )
    return (
        f"its tag {tag or '(none)'} is not kueue.version {version}: the manifest and the "
        "version do not belong together"
    )
