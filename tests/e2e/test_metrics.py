"""kueue.metrics on the sandbox, with the real Kueue and Pulumi CLI (issue 26, item 3).

- With no ServiceMonitor CRD in the cluster (and a ServiceMonitor namespace that does not
  exist), `pulumi preview` and `pulumi up` of the local stack with metrics on fail in the
  validation phase, naming the keys and the CRD; the up changes nothing (Kueue's Configuration
  is as before).
- With a ServiceMonitor CRD (a stand-in of ours: the Prometheus Operator's is another
  project's file, and only its served name matters here) and the namespace, the up installs
  the ServiceMonitor, its scraper account, token and role binding, and the dashboard. This test
  then scrapes Kueue as a Prometheus would from that ServiceMonitor alone: the Service its
  selector picks, the endpoint port it names, the token Secret its authorization names, the
  TLS settings it gives. Kueue refuses the same request without the token, and with a token
  whose account lacks kueue-metrics-reader.
- After a job is admitted and finished and another one evicted (deactivated), every metric
  the dashboard's queries name, and every label they match or group by, is in what the pinned
  Kueue release exports; so a release that renames one fails here.
"""

from __future__ import annotations

import base64
import re
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.release import metrics
from gpu_queues.release.catalogue import KUEUE_NAMESPACE, MANAGER_CONFIG_KEY, MANAGER_CONFIGMAP
from sandbox import pulumi_stack as stack
from sandbox.paths import ROOT
from sandbox.walkthrough import KUEUE, KubeSession, is_true, job
from tests.conftest import stack_raw
from tests.e2e.deployments import Deployments

pytestmark = pytest.mark.e2e

MONITORING = "monitoring"
# The local stack's one team in a cohort of its own: Kueue exports the cohort subtree gauges
# prod's dashboard reads (a panel per cohort of its tree) only for cohorts it has.
COHORT = "metrics-pool"
COHORT_RESERVATIONS = "kueue_cohort_subtree_resource_reservations"
OVERRIDES = {
    "gpu-queues:kueue.metrics.serviceMonitor.enabled": "true",
    "gpu-queues:kueue.metrics.serviceMonitor.namespace": MONITORING,
    "gpu-queues:kueue.metrics.serviceMonitor.interval": "15s",
    "gpu-queues:kueue.metrics.dashboard.enabled": "true",
    "gpu-queues:cohort.name": COHORT,
    "gpu-queues:teams[0].cohort": COHORT,
}
COMPLETE_AFTER = "sandbox.gpu-queues.dev/complete-after"  # sandbox/kwok-stages.yaml
# A stand-in for the Prometheus Operator's CRD: the group, version and names it serves.
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": metrics.SERVICE_MONITOR_CRD},
    "spec": {
        "group": metrics.MONITORING_GROUP,
        "scope": "Namespaced",
        "names": {
            "kind": "ServiceMonitor",
            "listKind": "ServiceMonitorList",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def local_config() -> StackConfig:
    """The local stack's config with the overrides, as the program reads it."""
    raw = stack_raw("local")
    raw["kueue"] = {
        **raw["kueue"],
        "metrics": {
            "serviceMonitor": {"enabled": True, "namespace": MONITORING, "interval": "15s"},
            "dashboard": {"enabled": True},
        },
    }
    raw["cohort"] = {"name": COHORT}
    raw["teams"][0]["cohort"] = COHORT
    return load_config(raw)


def prod_config() -> StackConfig:
    raw = stack_raw("prod")
    raw["kueue"] = {**raw.get("kueue", {}), "metrics": {"dashboard": {"enabled": True}}}
    return load_config(raw)


def kueue_configuration(k: KubeSession) -> dict[str, Any]:
    cm = k.core.read_namespaced_config_map(MANAGER_CONFIGMAP, KUEUE_NAMESPACE)
    loaded: dict[str, Any] = yaml.safe_load(cm.data[MANAGER_CONFIG_KEY])
    return loaded


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return stack.pulumi(*args, check=False, capture=True, overrides=OVERRIDES)


@pytest.fixture(scope="module")
def refused(
    cluster: KubeSession, stacks: Deployments
) -> tuple[subprocess.CompletedProcess[str], ...]:
    """preview and up with metrics on, before the cluster has the CRD or the namespace."""
    ext = client.ApiextensionsV1Api(cluster.core.api_client)
    assert not [
        c for c in ext.list_custom_resource_definition().items
        if c.metadata.name == metrics.SERVICE_MONITOR_CRD
    ]  # fmt: skip
    return run("preview"), stacks.up("local", overrides=OVERRIDES)


# A stack on the Kueue the local stack installed (kueue.install: false), previewed with metrics
# on before and after the local stack turned on Kueue's ClusterQueue resource metrics.
TEAMS = "local-teams"
preinstalled: list[subprocess.CompletedProcess[str]] = []


def teams_preview() -> subprocess.CompletedProcess[str]:
    return stack.pulumi(
        "preview",
        stack=TEAMS,
        source=ROOT / "tests" / "e2e" / "stacks" / f"Pulumi.{TEAMS}.yaml",
        check=False,
        capture=True,
        overrides={
            "gpu-queues:kueue.metrics.serviceMonitor.enabled": "true",
            "gpu-queues:kueue.metrics.dashboard.enabled": "true",
        },
    )


@pytest.fixture(scope="module")
def monitored(
    cluster: KubeSession, stacks: Deployments, refused: tuple[subprocess.CompletedProcess[str], ...]
) -> Iterator[KubeSession]:
    ext = client.ApiextensionsV1Api(cluster.core.api_client)
    ext.create_custom_resource_definition(CRD)
    cluster.core.create_namespace({"metadata": {"name": MONITORING}})
    try:
        cluster.wait(
            "the ServiceMonitor CRD served",
            lambda: any(
                c.type == "Established" and c.status == "True"
                for c in ext.read_custom_resource_definition(
                    metrics.SERVICE_MONITOR_CRD
                ).status.conditions
                or []
            ),
            timeout=60,
        )
        preinstalled.append(teams_preview())
        done = stacks.up("local", overrides=OVERRIDES)  # refused before: it runs again
        assert done.returncode == 0, done.stdout + done.stderr
        preinstalled.append(teams_preview())
        yield cluster
    finally:
        # The local stack as committed again (the objects removed, Kueue's Configuration as
        # it was), then the CRD and namespace of ours.
        back = stacks.up("local")
        ext.delete_custom_resource_definition(metrics.SERVICE_MONITOR_CRD)
        cluster.core.delete_namespace(MONITORING)
        for name in ("metrics-finished", "metrics-evicted"):
            if any(
                j.metadata.name == name for j in cluster.batch.list_namespaced_job("default").items
            ):
                cluster.delete_job(name)
        assert back.returncode == 0, back.stdout + back.stderr


def test_no_service_monitor_crd_fails_the_preview_by_key(refused: Any) -> None:
    preview, _ = refused
    out = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert (
        "gpu-queues:kueue.metrics.serviceMonitor.enabled: the cluster has no ServiceMonitor CRD "
        "(servicemonitors.monitoring.coreos.com" in out
    ), out
    assert (
        "gpu-queues:kueue.metrics.serviceMonitor.namespace: namespace 'monitoring' does not exist"
        in out
    ), out
    assert "Traceback" not in out


def test_the_refused_up_changed_nothing(cluster: KubeSession, refused: Any) -> None:
    _, up = refused
    assert up.returncode != 0
    assert "the cluster has no ServiceMonitor CRD" in up.stdout + up.stderr
    # Kueue's Configuration was not re-rendered: the dashboard's setting is not there; and
    # none of the objects that need no CRD was made.
    assert "enableClusterQueueResources" not in kueue_configuration(cluster).get("metrics", {})
    rbac = client.RbacAuthorizationV1Api(cluster.core.api_client)
    assert metrics.SCRAPER not in [b.metadata.name for b in rbac.list_cluster_role_binding().items]
    configmaps = cluster.core.list_namespaced_config_map(KUEUE_NAMESPACE).items
    assert metrics.DASHBOARD_CONFIGMAP not in [c.metadata.name for c in configmaps]


def test_on_a_preinstalled_kueue_the_preview_checks_its_configuration(
    monitored: KubeSession,
) -> None:
    before, after = preinstalled
    out = before.stdout + before.stderr
    assert before.returncode != 0
    assert (
        "gpu-queues:kueue.metrics.dashboard.enabled: the installed Kueue's Configuration "
        "(kueue-system/kueue-manager-config) does not set metrics.enableClusterQueueResources"
    ) in out, out
    # Its metrics Service and reader role are the release's: no problem there.
    assert "the installed Kueue's Service" not in out and "no ClusterRole" not in out
    assert after.returncode == 0, after.stdout + after.stderr


def test_the_up_installs_the_dashboard_as_generated(monitored: KubeSession) -> None:
    config = local_config()
    cm = monitored.core.read_namespaced_config_map(metrics.DASHBOARD_CONFIGMAP, KUEUE_NAMESPACE)
    expected = metrics.dashboard_configmap(config.kueue, dashboard(config))
    assert cm.data == expected["data"]
    assert cm.metadata.labels["grafana_dashboard"] == "1"
    assert kueue_configuration(monitored)["metrics"]["enableClusterQueueResources"] is True


# --- scraping as a Prometheus reads the ServiceMonitor ------------------------------------


def service_monitor(k: KubeSession) -> dict[str, Any]:
    found: dict[str, Any] = k.custom.get_namespaced_custom_object(
        metrics.MONITORING_GROUP, "v1", MONITORING, "servicemonitors", metrics.SERVICE_MONITOR
    )
    return found


def targets(k: KubeSession, sm: dict[str, Any]) -> list[str]:
    """The URLs the ServiceMonitor's one endpoint makes: its selector's Services in its
    namespaces, their EndpointSlices' ready addresses at the port it names."""
    spec = sm["spec"]
    (endpoint,) = spec["endpoints"]
    selector = ",".join(f"{k}={v}" for k, v in spec["selector"]["matchLabels"].items())
    discovery = client.DiscoveryV1Api(k.core.api_client)
    urls = []
    for ns in spec["namespaceSelector"]["matchNames"]:
        for svc in k.core.list_namespaced_service(ns, label_selector=selector).items:
            label = f"kubernetes.io/service-name={svc.metadata.name}"
            for eps in discovery.list_namespaced_endpoint_slice(ns, label_selector=label).items:
                ports = [p.port for p in eps.ports or [] if p.name == endpoint["port"]]
                for e in eps.endpoints or []:
                    if e.conditions is None or e.conditions.ready is not False:
                        urls += [
                            f"{endpoint['scheme']}://{a}:{p}{endpoint['path']}"
                            for a in e.addresses
                            for p in ports
                        ]
    return urls


def secret_value(k: KubeSession, namespace: str, name: str, key: str) -> str:
    sec = k.core.read_namespaced_secret(name, namespace)
    return base64.b64decode(sec.data[key]).decode()


def scrape(url: str, token: str | None, tls: dict[str, Any]) -> tuple[int, str]:
    context = ssl.create_default_context()
    if tls.get("insecureSkipVerify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def scraped(k: KubeSession) -> str:
    """/metrics of Kueue, read with what the ServiceMonitor says."""
    sm = service_monitor(k)
    (endpoint,) = sm["spec"]["endpoints"]
    creds = endpoint["authorization"]["credentials"]
    token = k.wait(
        "the scraper's token",
        lambda: (k.core.read_namespaced_secret(creds["name"], MONITORING).data or {}).get(
            creds["key"]
        ),
        timeout=60,
    )
    assert token
    urls = k.wait("an endpoint of the metrics Service", lambda: targets(k, sm), timeout=120)
    status, body = scrape(
        urls[0], secret_value(k, MONITORING, creds["name"], creds["key"]), endpoint["tlsConfig"]
    )
    assert status == 200, status
    return body


def test_kueue_lets_in_only_the_bound_token(monitored: KubeSession) -> None:
    sm = service_monitor(monitored)
    (endpoint,) = sm["spec"]["endpoints"]
    url = monitored.wait("an endpoint", lambda: targets(monitored, sm), timeout=120)[0]
    assert scrape(url, None, endpoint["tlsConfig"])[0] == 401
    # A token of an account without kueue-metrics-reader: authenticated, not authorized.
    monitored.core.create_namespaced_service_account(MONITORING, {"metadata": {"name": "nobody"}})
    token = monitored.core.create_namespaced_service_account_token(
        "nobody", MONITORING, {"spec": {"expirationSeconds": 600}}
    ).status.token
    assert scrape(url, token, endpoint["tlsConfig"])[0] == 403
    assert "kueue_" in scraped(monitored)


# --- every dashboard metric is one the release exports ---------------------------------------

SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}")
MATCHER_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\bby \(([^)]*)\)")


def dashboard_names(board: dict[str, Any]) -> dict[str, set[str]]:
    """Each metric a query of the dashboard selects, with the labels the query matches it on
    or groups by (read from the PromQL text itself, not from the code that wrote it; each
    grouping of a query applies to every metric it selects, as in every query here)."""
    names: dict[str, set[str]] = {}
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            grouped = {g.strip() for m in GROUPING.findall(expr) for g in m.split(",")}
            for metric, matchers in SELECTOR.findall(expr):
                labels = set(MATCHER_LABEL.findall(matchers)) | grouped
                names.setdefault(metric, set()).update(labels)
    return names


def exported(text: str) -> dict[str, set[str]]:
    """Each sample name Kueue's /metrics carries, with the label names its samples have."""
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def merged(*found: dict[str, set[str]]) -> dict[str, set[str]]:
    """What several scrapes exported, together."""
    out: dict[str, set[str]] = {}
    for each in found:
        for metric, labels in each.items():
            out.setdefault(metric, set()).update(labels)
    return out


def cohort_reserves(text: str, cohort: str) -> bool:
    """Whether the scrape has a positive reservation of the cohort `cohort`'s subtree."""
    return any(
        sample.name == COHORT_RESERVATIONS
        and sample.labels.get("cohort") == cohort
        and sample.value > 0
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    )


def missing(wanted: dict[str, set[str]], have: dict[str, set[str]]) -> list[str]:
    gaps = []
    for metric, labels in sorted(wanted.items()):
        if metric not in have:
            gaps.append(f"{metric}: not exported")
        elif labels - have[metric]:
            gaps.append(f"{metric}: no label {sorted(labels - have[metric])}")
    return gaps


def test_every_metric_the_dashboard_reads_is_exported(monitored: KubeSession) -> None:
    k = monitored
    # One job admitted and finished, one admitted and then evicted (deactivated): the
    # per-queue histograms and counters exist only once something was observed.
    finished = job("metrics-finished", gpus=2)
    finished["spec"]["template"]["metadata"] = {"annotations": {COMPLETE_AFTER: "2s"}}
    k.submit(finished)
    k.wait(
        "metrics-finished to complete",
        lambda: any(
            c.type == "Complete" and c.status == "True"
            for c in (k.get_job("metrics-finished").status.conditions or [])
        ),
        timeout=300,
    )
    k.submit(job("metrics-evicted", gpus=2))
    wl = k.wait(
        "metrics-evicted admitted",
        lambda: (w := k.workload_for("metrics-evicted")) and is_true(w, "Admitted") and w,
        timeout=300,
    )
    # The local stack's dashboard, and prod's, whose teams share a cohort tree and so have
    # the borrowed and lent panels and a panel per cohort too: every kind of query there is.
    wanted = dashboard_names(dashboard(local_config()))
    for metric, labels in dashboard_names(dashboard(prod_config())).items():
        wanted.setdefault(metric, set()).update(labels)
    assert {
        "kueue_cluster_queue_lending_limit",
        "kueue_evicted_workloads_total",
        "kueue_cohort_subtree_quota",
        COHORT_RESERVATIONS,
    } <= set(wanted)

    # Scraped while metrics-evicted holds quota: Kueue drops a cohort's reservation series
    # when the cohort's reservations fall to zero (it clears the gauge rather than set 0), so
    # that panel has a series only while something runs in the cohort; after the eviction
    # whether it is still there depends on whether a ClusterQueue reconcile came after.
    def reserving() -> dict[str, set[str]] | None:
        text = scraped(k)
        return exported(text) if cohort_reserves(text, COHORT) else None

    held = k.wait(
        f"{COHORT_RESERVATIONS} of {COHORT} while metrics-evicted holds quota", reserving, 120
    )
    k.custom.patch_namespaced_custom_object(
        *KUEUE, "default", "workloads", wl["metadata"]["name"], {"spec": {"active": False}}
    )
    k.wait(
        "metrics-evicted evicted",
        lambda: is_true(k.workload_for("metrics-evicted"), "Evicted"),
        timeout=300,
    )

    def complete() -> dict[str, set[str]] | None:
        have = merged(held, exported(scraped(k)))
        return have if not missing(wanted, have) else None

    try:
        have = k.wait("every dashboard metric exported", complete, timeout=120)
    except TimeoutError:
        # The gaps alone, without the traceback's chain: they are what a reader needs.
        pytest.fail("\n".join(missing(wanted, merged(held, exported(scraped(k))))), pytrace=False)
    # The stack's own queue has its series: Pulumi.local.yaml gives gpu-cluster-queue 8 GPUs
    # of gpu-flavor.
    quota = {
        sample.value
        for family in text_string_to_metric_families(scraped(k))
        for sample in family.samples
        if sample.name == "kueue_cluster_queue_nominal_quota"
        and sample.labels.get("cluster_queue") == "gpu-cluster-queue"
        and sample.labels.get("flavor") == "gpu-flavor"
        and sample.labels.get("resource") == "nvidia.com/gpu"
    }
    assert quota == {8.0}
    # The check itself: a renamed metric or label would be reported.
    renamed = {
        "kueue_pending_workloads_total": {"cluster_queue"},
        "kueue_pending_workloads": {"queue"},
    }
    assert missing(renamed, have) == [
        "kueue_pending_workloads: no label ['queue']",
        "kueue_pending_workloads_total: not exported",
    ]
