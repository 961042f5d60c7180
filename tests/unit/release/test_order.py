"""Reordered lists (issue 24, item 2; gpu_queues/release/order.py): where Kubernetes gives a
list's order no meaning, a reordered copy of the release is still the release (its digests
match, and as a custom manifest it differs in nothing); where order carries meaning, a
reorder is a difference. Each case is one list of a release-shaped object, reversed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import KueueConfig
from gpu_queues.release import custom, digests
from gpu_queues.release.manifest import ManifestError, load_release
from gpu_queues.release.order import unordered
from tests.conftest import MANIFEST, stand_in

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


def deployment() -> Obj:
    container = {
        "name": "manager",
        "image": "registry.k8s.io/kueue/kueue:v0.18.3",
        "command": ["/manager", "--leader-elect"],
        "args": ["--config=/c.yaml", "--zap-log-level=2"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "$(A)"}],
        "ports": [
            {"containerPort": 8082, "name": "visibility", "protocol": "TCP"},
            {"containerPort": 9443, "name": "webhook-server", "protocol": "TCP"},
        ],
        "volumeMounts": [
            {"mountPath": "/visibility", "name": "visibility"},
            {"mountPath": "/certs", "name": "cert", "readOnly": True},
        ],
        "securityContext": {"capabilities": {"drop": ["ALL", "NET_RAW"]}},
    }
    sidecar = {"name": "second", "image": "x"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {
            "selector": {
                "matchExpressions": [
                    {"key": "a", "operator": "In", "values": ["x", "y"]},
                    {"key": "b", "operator": "Exists"},
                ]
            },
            "template": {
                "spec": {
                    "containers": [container, sidecar],
                    "initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "image": "y"}],
                    "imagePullSecrets": [{"name": "p1"}, {"name": "p2"}],
                    "volumes": [
                        {"name": "visibility", "emptyDir": {}},
                        {"name": "cert", "secret": {"secretName": "s"}},
                    ],
                    "tolerations": [
                        {"key": "a", "operator": "Exists"},
                        {"key": "b", "operator": "Exists"},
                    ],
                }
            },
        },
    }


def role() -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["watch"]},
        ],
        "aggregationRule": {
            "clusterRoleSelectors": [{"matchLabels": {"a": "1"}}, {"matchLabels": {"b": "2"}}]
        },
    }


def binding() -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "a", "namespace": "kueue-system"},
            {"kind": "ServiceAccount", "name": "b", "namespace": "kueue-system"},
        ],
    }


def webhooks(kind: str) -> Obj:
    def hook(name: str) -> Obj:
        return {
            "name": name,
            "admissionReviewVersions": ["v1", "v1beta1"],
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io", "batch"],
                    "apiVersions": ["v1beta2", "v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["jobs", "workloads"],
                },
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                },
            ],
            "namespaceSelector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["kube-system", "kueue-system"],
                    },
                    {"key": "x", "operator": "DoesNotExist"},
                ]
            },
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "w"},
        "webhooks": [hook("a.kb.io"), hook("b.kb.io")],
    }


def service() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "kueue-system"},
        "spec": {"ports": [{"port": 443, "targetPort": 9443}, {"port": 8082}]},
    }


def reverse(obj: Obj, *path: str | int) -> Obj:
    out = copy.deepcopy(obj)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = list(reversed(node[path[-1]]))
    return out


POD = ("spec", "template", "spec")
MANAGER = (*POD, "containers", 0)
HOOK = ("webhooks", 0)
VALIDATING, MUTATING = "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"

SETS: list[tuple[str, Callable[[], Obj], tuple[str | int, ...]]] = [
    ("volumes", deployment, (*POD, "volumes")),
    ("volumeMounts", deployment, (*MANAGER, "volumeMounts")),
    ("container-ports", deployment, (*MANAGER, "ports")),
    ("capabilities-drop", deployment, (*MANAGER, "securityContext", "capabilities", "drop")),
    ("tolerations", deployment, (*POD, "tolerations")),
    ("selector-expressions", deployment, ("spec", "selector", "matchExpressions")),
    ("selector-values", deployment, ("spec", "selector", "matchExpressions", 0, "values")),
    ("rbac-rules", role, ("rules",)),
    ("rbac-verbs", role, ("rules", 0, "verbs")),
    ("rbac-resources", role, ("rules", 0, "resources")),
    ("aggregation-selectors", role, ("aggregationRule", "clusterRoleSelectors")),
    ("subjects", binding, ("subjects",)),
    ("validating-webhooks", lambda: webhooks(VALIDATING), ("webhooks",)),
    *[
        (f"{kind[:8].lower()}-{name}", (lambda k=kind: webhooks(k)), path)
        for kind in (VALIDATING, MUTATING)
        for name, path in [
            ("rules", (*HOOK, "rules")),
            ("operations", (*HOOK, "rules", 0, "operations")),
            ("api-groups", (*HOOK, "rules", 0, "apiGroups")),
            ("api-versions", (*HOOK, "rules", 0, "apiVersions")),
            ("resources", (*HOOK, "rules", 0, "resources")),
            ("ns-expressions", (*HOOK, "namespaceSelector", "matchExpressions")),
            ("ns-values", (*HOOK, "namespaceSelector", "matchExpressions", 0, "values")),
        ]
    ],
    ("service-ports", service, ("spec", "ports")),
]

ORDERED: list[tuple[str, Callable[[], Obj], tuple[str | int, ...]]] = [
    ("args", deployment, (*MANAGER, "args")),
    ("command", deployment, (*MANAGER, "command")),
    ("env", deployment, (*MANAGER, "env")),
    ("containers", deployment, (*POD, "containers")),
    ("init-containers", deployment, (*POD, "initContainers")),
    ("image-pull-secrets", deployment, (*POD, "imagePullSecrets")),
    ("mutating-webhooks", lambda: webhooks(MUTATING), ("webhooks",)),
    ("review-versions", lambda: webhooks(VALIDATING), (*HOOK, "admissionReviewVersions")),
]


@pytest.mark.parametrize(("name", "make", "path"), SETS, ids=[c[0] for c in SETS])
def test_a_set_reordered_is_the_same_object(name: str, make: Callable[[], Obj], path: Any):
    before, after = make(), reverse(make(), *path)
    assert before != after  # the case reorders something
    assert digests.object_digests([before]) == digests.object_digests([after])
    assert list(custom.differences(unordered(before), unordered(after))) == []


@pytest.mark.parametrize(("name", "make", "path"), ORDERED, ids=[c[0] for c in ORDERED])
def test_an_ordered_list_reordered_is_a_difference(name: str, make: Callable[[], Obj], path: Any):
    before, after = make(), reverse(make(), *path)
    assert digests.object_digests([before]) != digests.object_digests([after])
    assert list(custom.differences(unordered(before), unordered(after)))


def test_a_duplicate_in_a_set_is_a_difference():
    twice = role()
    twice["rules"][0]["verbs"].append("get")
    assert digests.object_digests([role()]) != digests.object_digests([twice])


def _release() -> list[Obj]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_bytes()) if d is not None]


def _load(tmp_path: Path, objs: list[Obj], **manifest: Any) -> Any:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    config = KueueConfig.model_validate({"manifest": {"path": str(path), **manifest}})
    return load_release(config, releases=stand_in())


def test_the_stand_in_with_its_rules_reordered_is_the_release(tmp_path: Path):
    objs = _release()
    role_ = next(o for o in objs if o["kind"] == "ClusterRole")
    role_["rules"].reverse()
    role_["rules"][0]["verbs"].reverse()
    assert _load(tmp_path, objs).genuine


def test_the_stand_in_with_its_args_reordered_is_not_the_release(tmp_path: Path):
    objs = _release()
    deployment_ = next(o for o in objs if o["kind"] == "Deployment")
    deployment_["spec"]["template"]["spec"]["containers"][0]["args"].reverse()
    with pytest.raises(ManifestError, match=r"containers\[manager\]\.args\[0\]"):
        _load(tmp_path, objs)
    with pytest.raises(ManifestError, match=r"containers\[manager\]\.args\[0\]"):
        _load(tmp_path, objs, custom=True, reason="reordered")


def test_an_added_named_item_is_named_alone_not_shifting_the_rest():
    before = deployment()
    after = copy.deepcopy(before)
    after["spec"]["template"]["spec"]["volumes"].insert(0, {"name": "kc", "configMap": {}})
    found = [str(d) for d in custom.differences(unordered(before), unordered(after))]
    assert found == [
        'spec.template.spec.volumes[kc] (release: absent; here: {"configMap": {}, "name": "kc"})'
    ]


def test_an_ordered_named_list_reordered_says_so():
    before = deployment()
    after = reverse(before, *MANAGER, "env")
    found = [str(d) for d in custom.differences(unordered(before), unordered(after))]
    assert found == [
        'spec.template.spec.containers[manager].env (order) (release: ["A", "B"]; here: ["B", "A"])'
    ]
