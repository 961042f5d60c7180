"""MultiKueue across clusters, on Kueue's own MultiKueue (docs/multikueue.md).

A manager stack (`multiKueue.manager`) declares, in Kueue's namespace, a Secret with each
worker's kubeconfig and a MultiKueueCluster reading it, and per dispatching team a
MultiKueueConfig (its workers) and an AdmissionCheck (controller kueue.x-k8s.io/multikueue),
which that team's ClusterQueue lists (gpu_queues/config/render.py). A worker's kubeconfig is a
Pulumi
secret: set in the manager's config, or read through a StackReference from the worker stack's
secret output `multiKueueKubeconfig`.

A worker stack (`multiKueue.worker`) is an ordinary stack plus what a manager needs there: a
service account in Kueue's namespace with exactly the rights Kueue's MultiKueue uses (its
workloads, the job kinds it copies, queues to read), a token for it, and that kubeconfig as a
secret output. The manager never holds the worker's admin credentials.

`effective_kueue` lays onto a manager's Kueue Configuration what MultiKueue needs: only the
integrations whose kinds exist on every cluster (batch/job unless the stack lists its own),
and an origin of its own.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_queues import keys
from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.model import (
    Integrations,
    KueueConfig,
    MultiKueueSettings,
    MultiKueueWorker,
    MultiKueueWorkerRole,
    StackConfig,
)
from gpu_queues.config.model import (
    MultiKueueManagerRole as ManagerEntry,
)
from gpu_queues.config.multikueue_checks import DEFAULT_FRAMEWORKS, kubeconfig_problems
from gpu_queues.kueue.fields import is_label_value
from gpu_queues.release.catalogue import KUEUE_NAMESPACE

MANAGER_ACCOUNT: Final = "multikueue-manager"
MANAGER_TOKEN: Final = "multikueue-manager-token"
MANAGER_ROLE: Final = "gpu-queues-multikueue-manager"
_VERBS: Final = ["create", "update", "patch", "delete", "get", "list", "watch"]
# Kinds whose integration name is not <group>/<kind>: core and apps.
_FRAMEWORK_RESOURCES: Final = {
    "batch/job": ("batch", "jobs"),
    "pod": ("", "pods"),
    "deployment": ("apps", "deployments"),
    "statefulset": ("apps", "statefulsets"),
}


def _labels() -> dict[str, str]:
    return {keys.LABEL_MANAGED_BY: keys.PROJECT}


# --- the manager's Kueue Configuration --------------------------------------------------------


def default_origin(stack: str) -> str:
    """gpu-queues-<stack> (a label value; long stack names are hashed to fit)."""
    origin = f"{keys.PROJECT}-{stack}"
    if is_label_value(origin):
        return origin
    return f"{keys.PROJECT}-{hashlib.sha256(stack.encode()).hexdigest()[:16]}"


def effective_kueue(config: StackConfig, stack: str | None) -> KueueConfig:
    """The Kueue settings a manager stack runs with: its own, plus integrations limited to
    batch/job when it lists none (MultiKueue watches every enabled kind on each worker, and
    the release enables kinds whose CRDs a worker seldom has), and its own origin when it sets
    none. Other stacks: unchanged."""
    kueue = config.kueue
    if config.multi_kueue is None or config.multi_kueue.manager is None:
        return kueue
    manager = kueue.manager
    integrations = manager.integrations or Integrations()
    if integrations.frameworks is None:
        integrations = integrations.model_copy(update={"frameworks": list(DEFAULT_FRAMEWORKS)})
    settings = manager.multi_kueue or MultiKueueSettings()
    if settings.origin is None and stack:
        settings = settings.model_copy(update={"origin": default_origin(stack)})
    manager = manager.model_copy(update={"integrations": integrations, "multi_kueue": settings})
    return kueue.model_copy(update={"manager": manager})


# --- a worker's access for its managers ------------------------------------------------------


def manager_rules(frameworks: Sequence[str]) -> list[dict[str, Any]]:
    """What Kueue's MultiKueue does on a worker (its e2e suite's MultiKueueRulesForManager):
    create and follow workloads, read queues, and copy the jobs of each integration."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": list(_VERBS)},
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads/status"],
            "verbs": ["get", "patch", "update"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues", "localqueues"],
            "verbs": ["get", "list", "watch"],
        },
    ]
    for name in dict.fromkeys(frameworks):
        group, slash, kind = name.partition("/")
        found = _FRAMEWORK_RESOURCES.get(name) or ((group, f"{kind}s") if slash else None)
        if found is None:
            continue
        api_group, resource = found
        rules.append({"apiGroups": [api_group], "resources": [resource], "verbs": list(_VERBS)})
        rules.append(
            {"apiGroups": [api_group], "resources": [f"{resource}/status"], "verbs": ["get"]}
        )
    return rules


def worker_kubeconfig(name: str, server: str, ca_data: str, token: str) -> str:
    """A kubeconfig for the manager's service account, in the form Kueue accepts: CA as data,
    a bearer token, one context."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": MANAGER_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": MANAGER_ACCOUNT}}],
        "current-context": name,
    }
    return yaml.safe_dump(doc, sort_keys=False)


@dataclass(frozen=True)
class WorkerAccessArgs:
    role: MultiKueueWorkerRole
    server: pulumi.Input[str]
    """The API server managers dial: role.server, else this stack's kubeconfig's."""
    frameworks: Sequence[str]
    """The job kinds managers may copy here (this cluster's integrations)."""
    cluster_name: str
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None


class MultiKueueWorkerAccess(pulumi.ComponentResource):
    """A worker's service account for its managers, and their kubeconfig (secret output)."""

    kubeconfig: pulumi.Output[str]

    def __init__(
        self, name: str, args: WorkerAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:multikueue:MultiKueueWorkerAccess", name, None, opts)
        after = pulumi.ResourceOptions(parent=self, depends_on=args.ready)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account",
            metadata={"name": MANAGER_ACCOUNT, "namespace": KUEUE_NAMESPACE, "labels": _labels()},
            opts=after,
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata={"name": MANAGER_ROLE, "labels": _labels()},
            rules=manager_rules(args.frameworks),
            opts=pulumi.ResourceOptions(parent=self),
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata={"name": MANAGER_ROLE, "labels": _labels()},
            role_ref={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": MANAGER_ROLE,
            },
            subjects=[
                {"kind": "ServiceAccount", "name": MANAGER_ACCOUNT, "namespace": KUEUE_NAMESPACE}
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role, account]),
        )
        # A token Secret: the cluster's token controller fills in the token and its CA, and
        # the provider waits until it has. Rotate it with `pulumi up --replace` on this Secret.
        token = k8s.core.v1.Secret(
            f"{name}-token",
            metadata={
                "name": MANAGER_TOKEN,
                "namespace": KUEUE_NAMESPACE,
                "labels": _labels(),
                "annotations": {"kubernetes.io/service-account.name": MANAGER_ACCOUNT},
            },
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[account]),
        )

        def build(values: list[Any]) -> str:
            server, data = values
            data = data or {}
            return worker_kubeconfig(
                args.cluster_name,
                str(server),
                str(data.get("ca.crt", "")),
                base64.b64decode(data.get("token", "")).decode(),
            )

        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(args.server, token.data).apply(build)
        )
        self.register_outputs({keys.OUT_MULTI_KUEUE_KUBECONFIG: self.kubeconfig})


# --- a manager's workers and checks ----------------------------------------------------------


def checked_kubeconfig(worker: MultiKueueWorker, index: int, text: Any) -> str:
    """The worker kubeconfig, or an error saying why Kueue would not connect with it (its
    content is never shown). Runs when the value is known: for a stack's output, in preview."""
    where = f"{keys.PROJECT}:{keys.KEY_MULTI_KUEUE}.manager.workers[{index}]"
    if not isinstance(text, str) or not text:
        source = f"stack {worker.stack!r} has no output {keys.OUT_MULTI_KUEUE_KUBECONFIG}"
        raise ValueError(
            f"{where} ({worker.name}): no kubeconfig: {source}. Deploy the worker stack with "
            f"{keys.PROJECT}:{keys.KEY_MULTI_KUEUE}.worker set before this manager"
        )
    problems = kubeconfig_problems(text)
    if problems:
        raise ValueError(
            f"{where} ({worker.name}): Kueue would not connect with its kubeconfig: "
            + "; ".join(problems)
        )
    return text


def inline_kubeconfigs() -> pulumi.Output[Any]:
    """The manager's workers as configured, read as a secret (their kubeconfigs are)."""
    value = pulumi.Config(keys.PROJECT).get_secret_object(keys.KEY_MULTI_KUEUE)
    return value if value is not None else pulumi.Output.secret({})


@dataclass(frozen=True)
class ManagerArgs:
    manager: ManagerEntry
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    configured: pulumi.Output[Any] = field(default_factory=inline_kubeconfigs)
    """The `multiKueue` config value, a secret (where inline kubeconfigs are)."""


class MultiKueueManager(pulumi.ComponentResource):
    """A manager's worker kubeconfigs, MultiKueueClusters, MultiKueueConfigs and
    AdmissionChecks, all in or for Kueue's namespace."""

    checks: dict[str, pulumi.Resource]
    """Per dispatching team, its AdmissionCheck (its ClusterQueue depends on it)."""

    def __init__(
        self, name: str, args: ManagerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:multikueue:MultiKueueManager", name, None, opts)
        manager = args.manager
        clusters: dict[str, pulumi.Resource] = {}
        for i, worker in enumerate(manager.workers):
            secret = k8s.core.v1.Secret(
                f"{name}-{worker.name}-kubeconfig",
                metadata={
                    "name": render.kubeconfig_secret_name(worker.name),
                    "namespace": KUEUE_NAMESPACE,
                    "labels": _labels(),
                },
                type="Opaque",
                data={
                    render.KUBECONFIG_SECRET_KEY: self._kubeconfig(name, i, worker, args).apply(
                        lambda text: base64.b64encode(text.encode()).decode()
                    )
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=args.ready),
            )
            clusters[worker.name] = self._register(
                f"{name}-{worker.name}", render.multikueue_cluster(worker), [secret]
            )
        self.checks = {}
        for team in manager.teams:
            workers = render.dispatch_workers(render.config_form(manager), team.model_dump())
            config = self._register(
                f"{name}-{team.name}-config",
                render.multikueue_config(team, workers),
                [clusters[w] for w in workers if w in clusters],
            )
            self.checks[team.name] = self._register(
                f"{name}-{team.name}-check", render.admission_check(team), [config]
            )
        self.register_outputs(
            {
                "workers": [w.name for w in manager.workers],
                "admissionChecks": {t: render.multikueue_check_name(t) for t in self.checks},
            }
        )

    def _kubeconfig(
        self, name: str, index: int, worker: MultiKueueWorker, args: ManagerArgs
    ) -> pulumi.Output[str]:
        if worker.kubeconfig is not None:
            text = args.configured.apply(
                lambda mk: _inline(mk, index),
            )
        else:
            assert worker.stack is not None  # config_checks: stack or kubeconfig
            ref = pulumi.StackReference(
                f"{name}-{worker.name}-stack",
                stack_name=worker.stack,
                opts=pulumi.ResourceOptions(parent=self),
            )
            text = ref.get_output(keys.OUT_MULTI_KUEUE_KUBECONFIG)
        checked = pulumi.Output.from_input(text).apply(
            lambda t: checked_kubeconfig(worker, index, t)
        )
        return pulumi.Output.secret(checked)

    def _register(
        self, name: str, obj: Mapping[str, Any], after: Sequence[pulumi.Resource]
    ) -> pulumi.Resource:
        return kueue_object(
            name,
            obj,
            pulumi.ResourceOptions(parent=self, depends_on=list(after)),
        )


def _inline(configured: Any, index: int) -> Any:
    workers = (configured or {}).get("manager", {}).get("workers", [])
    return workers[index].get("kubeconfig") if index < len(workers) else None
