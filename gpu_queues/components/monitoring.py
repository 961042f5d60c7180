"""KueueMonitoring: the ServiceMonitor for Kueue's metrics (with the scraper's account, token
and role binding) and the Grafana dashboard ConfigMap, registered only when
gpu-queues:kueue.metrics turns them on; and `cluster_problems`, what the program asks the
cluster at preview for them (the validation phase, before anything is registered).

A ServiceMonitor on a cluster without the Prometheus Operator's CRD would preview cleanly and
fail only at apply, after the queues changed. So `validate` (gpu_queues/components/
gpu_queues.py) asks the API server's discovery, through the stack's kubeconfig, whether
monitoring.coreos.com/v1 serves servicemonitors, and whether the namespaces the objects go in
exist; each answer that is no fails the preview with the key to change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import yaml

from gpu_queues import keys, yamlio
from gpu_queues.components.kueue import register_object
from gpu_queues.config.errors import Problem
from gpu_queues.config.model import StackConfig
from gpu_queues.release import metrics
from gpu_queues.release.catalogue import KUEUE_NAMESPACE, MANAGER_CONFIG_KEY, MANAGER_CONFIGMAP

_KEY = (keys.KEY_KUEUE, "metrics")
_UNASKED = "cannot ask the cluster whether it has what kueue.metrics needs"
_TIMEOUT = 15  # seconds, per request


@dataclass(frozen=True)
class KueueMonitoringArgs:
    config: StackConfig
    dashboard: dict[str, Any] | None
    """The dashboard's JSON model (gpu_queues.config.dashboard), when it is on."""
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate: its namespace and metrics reader role exist."""


class KueueMonitoring(pulumi.ComponentResource):
    """What kueue.metrics turns on; GpuQueues registers it only then."""

    def __init__(
        self, name: str, args: KueueMonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:monitoring:KueueMonitoring", name, None, opts)
        kueue = args.config.kueue
        after: list[pulumi.Resource] = []
        ready = pulumi.ResourceOptions(parent=self, depends_on=args.ready)
        if kueue.metrics.service_monitor.enabled:
            for obj in metrics.service_monitor_objects(kueue):
                # Each after the one before: the token is the account's, the ServiceMonitor
                # names the token.
                opts_one = (
                    ready
                    if not after
                    else pulumi.ResourceOptions(parent=self, depends_on=[after[-1]])
                )
                after.append(register_object(f"{name}-{_suffix(obj)}", obj, opts_one))
        if kueue.metrics.dashboard.enabled and args.dashboard is not None:
            obj = metrics.dashboard_configmap(kueue, args.dashboard)
            register_object(f"{name}-dashboard", obj, ready)
        self.register_outputs({})


def _suffix(obj: dict[str, Any]) -> str:
    return str(obj["kind"]).lower()


# --- at preview: what the cluster must have ------------------------------------------------


def cluster_problems(
    config: StackConfig,
    kubeconfig: str | None,
    context: str | None,
    created: Collection[str],
) -> list[Problem]:
    """Ask the cluster (through `kubeconfig`, else $KUBECONFIG) for what kueue.metrics needs:
    the ServiceMonitor CRD, the namespaces that the stack does not create itself (`created`:
    the manifest's and the teams'), and, with Kueue preinstalled, its metrics Service and
    reader role (the checks a manifest gets, on what the cluster runs) and, with the dashboard
    on, its ClusterQueue resource metrics. Nothing to ask (both off): no problems, no call."""
    m = config.kueue.metrics
    if not m.enabled:
        return []
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpu_queues.kueue.client import KubeconfigError, api_client

    try:
        api = api_client(kubeconfig, context)
    except KubeconfigError as exc:
        return [Problem(_KEY, f"{_UNASKED}: {exc}")]
    problems: list[Problem] = []
    try:
        if m.service_monitor.enabled:
            problems += _crd_problems(api)
        wanted = []
        if m.service_monitor.enabled:
            wanted.append(("serviceMonitor", metrics.service_monitor_namespace(config.kueue)))
        if m.dashboard.enabled:
            wanted.append(("dashboard", metrics.dashboard_namespace(config.kueue)))
        core = client.CoreV1Api(api)
        for part, namespace in wanted:
            if namespace in created:
                continue
            try:
                core.read_namespace(namespace, _request_timeout=_TIMEOUT)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                problems.append(
                    Problem(
                        (*_KEY, part, "namespace"),
                        f"namespace {namespace!r} does not exist in the cluster (nor does the "
                        "stack create it): create it, or name one your monitoring watches",
                    )
                )
        if m.dashboard.enabled and not config.kueue.install:
            problems += _resource_metrics_problems(core)
        if m.service_monitor.enabled and not config.kueue.install:
            problems += _installed_endpoint_problems(api, core)
    except ApiException as exc:
        problems.append(Problem(_KEY, f"{_UNASKED}: HTTP {exc.status} {exc.reason}"))
    except Exception as exc:  # connection refused, TLS, timeouts
        problems.append(Problem(_KEY, f"{_UNASKED}: {type(exc).__name__}: {str(exc)[:300]}"))
    finally:
        api.close()  # type: ignore[no-untyped-call]
    return problems


def _crd_problems(api: Any) -> list[Problem]:
    """Discovery of monitoring.coreos.com/v1: readable by every authenticated user, so the
    check needs no right to list CRDs."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    group, version = metrics.SERVICE_MONITOR_API_VERSION.split("/")
    try:
        answer = client.CustomObjectsApi(api).get_api_resources(
            group, version, _request_timeout=_TIMEOUT
        )
        resources = answer.resources or []
    except ApiException as exc:
        if exc.status != 404:
            raise
        resources = []
    served = {r.name for r in resources}
    if metrics.SERVICE_MONITOR_PLURAL in served:
        return []
    return [
        Problem(
            (*_KEY, "serviceMonitor", "enabled"),
            f"the cluster has no ServiceMonitor CRD ({metrics.SERVICE_MONITOR_CRD}: the API "
            f"{metrics.SERVICE_MONITOR_API_VERSION} does not serve {metrics.SERVICE_MONITOR_PLURAL}"
            "), so the ServiceMonitor could not be applied: install the Prometheus Operator (or "
            "its CRDs) first, or leave serviceMonitor off",
        )
    ]


def _resource_metrics_problems(core: Any) -> list[Problem]:
    """The preinstalled Kueue's Configuration must export the ClusterQueue resource gauges."""
    from kubernetes.client.exceptions import ApiException

    try:
        cm = core.read_namespaced_config_map(
            MANAGER_CONFIGMAP, KUEUE_NAMESPACE, _request_timeout=_TIMEOUT
        )
        text = (cm.data or {}).get(MANAGER_CONFIG_KEY) or ""
        loaded = yamlio.load(text, f"the cluster's {MANAGER_CONFIGMAP} {MANAGER_CONFIG_KEY}")
    except ApiException as exc:
        if exc.status != 404:
            raise
        loaded = None
    except (yaml.YAMLError, yamlio.YamlRefused):
        loaded = None
    section = loaded.get("metrics") if isinstance(loaded, dict) else None
    if isinstance(section, dict) and section.get("enableClusterQueueResources") is True:
        return []
    return [
        Problem(
            (*_KEY, "dashboard", "enabled"),
            f"the installed Kueue's Configuration ({KUEUE_NAMESPACE}/{MANAGER_CONFIGMAP}) does "
            "not set metrics.enableClusterQueueResources: true, so the dashboard's GPU panels "
            "would stay empty; set it there (kueue.install is false, so this stack does not)",
        )
    ]


def _installed_endpoint_problems(api: Any, core: Any) -> list[Problem]:
    """The preinstalled Kueue's metrics Service and reader role, as a release ships them."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    found: list[dict[str, Any]] = []
    reads = (
        (
            lambda: core.read_namespaced_service(
                metrics.METRICS_SERVICE, KUEUE_NAMESPACE, _request_timeout=_TIMEOUT
            ),
            "v1",
            "Service",
        ),
        (
            lambda: client.RbacAuthorizationV1Api(api).read_cluster_role(
                metrics.METRICS_READER_ROLE
            ),
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
        ),
    )
    for read, api_version, kind in reads:
        try:
            obj = api.sanitize_for_serialization(read())
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        found.append({**obj, "apiVersion": api_version, "kind": kind})
    return [
        Problem(p.loc, p.message.replace("the Kueue manifest", "the installed Kueue"))
        for p in metrics.release_problems(found)
    ]
