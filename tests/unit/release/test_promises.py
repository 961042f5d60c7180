"""Issue 24, item 5: every refusal docs/kueue-manifest.md promises is backed by a test that names
it. The allowlist's promises that had no case in test_allowlist.py are here, on the same
stand-in release and harness; then the docs' own list ("Every refusal and its test") is read,
and each id it names must be a test case that exists, and each "refused" row of the pod-field
table is exercised on a custom manifest.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import KueueConfig
from gpu_queues.release.manifest import ManifestError, load_release, prepare_manifest
from tests.conftest import MANIFEST, ROOT, stand_in
from tests.unit.release.test_allowlist import (
    NS,
    added,
    binding,
    cluster_role,
    edit,
    kueue,
    meta,
    one,
    pod_spec,
    release,
    webhook,
)

pytestmark = pytest.mark.unit

DOCS = ROOT / "docs" / "kueue-manifest.md"


def _service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, NS), "spec": spec}


def _kueue_object(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta(name, namespace)}


def _hook_on(group: str, resource: str) -> Any:
    def change(objects: list[dict[str, Any]]) -> None:
        config = one(
            objects, "ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration"
        )
        config["webhooks"].append(webhook(f"v{resource}.kb.io", group, resource, selector=True))

    return change


def _verb(verb: str, resource: str = "pods") -> Any:
    def change(objects: list[dict[str, Any]]) -> None:
        role = one(objects, "ClusterRole", "kueue-manager-role")
        role["rules"].append({"apiGroups": [""], "resources": [resource], "verbs": [verb]})

    return change


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("kueue-setup", NS),
        "spec": {"template": {"spec": {"containers": [{"name": "x", "image": "busybox"}]}}},
    }


def _aggregated(target: str) -> dict[str, Any]:
    return cluster_role(
        f"kueue-batch-{target}-extra",
        [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete"]}],
        **{f"rbac.authorization.k8s.io/aggregate-to-{target}": "true"},
    )


PROMISED = [
    ("controller-host-ipc", edit(lambda o: pod_spec(o).__setitem__("hostIPC", True)), "hostIPC"),
    (
        "webhook-on-webhook-configurations",
        _hook_on("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        "admissionregistration.k8s.io",
    ),
    (
        "webhook-on-crds",
        _hook_on("apiextensions.k8s.io", "customresourcedefinitions"),
        "apiextensions.k8s.io",
    ),
    ("clusterrole-bind", _verb("bind", "clusterroles"), "bind"),
    ("clusterrole-impersonate", _verb("impersonate", "users"), "impersonate"),
    (
        "service-nodeport",
        added(_service("kueue-np", type="NodePort", ports=[{"port": 1}])),
        "NodePort",
    ),
    (
        "service-external-name",
        added(_service("kueue-en", type="ExternalName", externalName="evil.example")),
        "ExternalName",
    ),
    (
        "release-service-made-nodeport",
        edit(
            lambda o: one(o, "Service", "kueue-webhook-service")["spec"].__setitem__(
                "type", "NodePort"
            )
        ),
        "NodePort",
    ),
    (
        "crb-to-view",
        added(binding("ClusterRoleBinding", "kueue-view", "ClusterRole", "view")),
        "view",
    ),
    (
        "crb-to-admin",
        added(binding("ClusterRoleBinding", "kueue-admin", "ClusterRole", "admin")),
        "admin",
    ),
    (
        "rolebinding-view-in-kueue-ns",
        added(binding("RoleBinding", "kueue-view", "ClusterRole", "view", namespace=NS)),
        "view",
    ),
    ("job", added(_job()), "Job"),
    ("extra-localqueue", added(_kueue_object("LocalQueue", "q", NS)), "LocalQueue"),
    ("extra-resourceflavor", added(_kueue_object("ResourceFlavor", "f")), "ResourceFlavor"),
    ("extra-cohort", added(_kueue_object("Cohort", "c")), "Cohort"),
    ("aggregated-to-edit-writes", added(_aggregated("edit")), "aggregate"),
    ("aggregated-to-admin-writes", added(_aggregated("admin")), "aggregate"),
]


@pytest.mark.parametrize(
    ("change", "expected"), [c[1:] for c in PROMISED], ids=[c[0] for c in PROMISED]
)
def test_a_promised_refusal_is_made_naming_it(change: Any, expected: str) -> None:
    objects = release()
    change(objects)
    with pytest.raises(ManifestError) as info:
        prepare_manifest(objects, kueue(), "hostile.yaml")
    assert expected in str(info.value)
    assert "nothing was applied" in str(info.value)


# --- the docs' list of refusals: every test it names exists -----------------------------------


def _refusal_refs() -> list[str]:
    docs = DOCS.read_text()
    table = docs[docs.index("## Every refusal and its test") :]
    table = table[: table.index("\n## ", 4)]
    refs = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`"):
            refs += re.findall(r"`([^`]+)`", cells[1])
    return refs


def _ids_in(path: str) -> set[str]:
    """The test functions of a test module and the ids of its cases (module-level lists of
    (id, ...) tuples, objects with an `id`, or pytest.param(..., id=...))."""
    module = __import__("tests." + path.removesuffix(".py").replace("/", "."), fromlist=["_"])
    ids = {name for name in vars(module) if name.startswith("test_")}
    for value in vars(module).values():
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, tuple) and item and isinstance(item[0], str):
                ids.add(item[0])
            elif isinstance(getattr(item, "id", None), str):
                ids.add(item.id)
    return ids


def test_the_docs_list_of_refusals_is_there_and_long() -> None:
    assert len(_refusal_refs()) > 80


@pytest.mark.parametrize("ref", _refusal_refs())
def test_every_test_the_docs_name_for_a_refusal_exists(ref: str) -> None:
    path, _, name = ref.partition("::")
    assert (ROOT / "tests" / path).is_file(), ref
    assert name in _ids_in(path), f"{ref}: no such test function or case id"


# --- the pod-field table: every "refused" row, set in a custom manifest, is refused -----------

# What an attacker would write into each field the release leaves unset.
VALUES: dict[str, Any] = {
    "env": [{"name": "KUBECONFIG", "value": "/tmp/k"}],
    "envFrom": [{"configMapRef": {"name": "kueue-extra"}}],
    "lifecycle": {"postStart": {"exec": {"command": ["/manager"]}}},
    "workingDir": "/tmp",
    "startupProbe": {"httpGet": {"path": "/healthz", "port": 8081}},
    "stdin": True,
    "tty": True,
    "initContainers": [{"name": "init", "image": "registry.k8s.io/kueue/kueue:v0.18.3"}],
    "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
    "hostNetwork": True,
    "hostPID": True,
    "hostIPC": True,
    "hostUsers": True,
    "shareProcessNamespace": True,
    "nodeName": "control-plane-1",
    "runtimeClassName": "runc-unconfined",
    "schedulerName": "my-scheduler",
    "affinity": {"nodeAffinity": {}},
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
    ],
    "hostAliases": [{"ip": "203.0.113.7", "hostnames": ["kubernetes.default.svc"]}],
    "dnsPolicy": "None",
    "dnsConfig": {"nameservers": ["203.0.113.7"]},
    "hostname": "kubernetes",
    "subdomain": "default",
    "setHostnameAsFQDN": True,
    "automountServiceAccountToken": True,
    "serviceAccount": "kueue-controller-manager",
    "runAsUser": 1000,
    "runAsGroup": 0,
    "fsGroup": 0,
    "supplementalGroups": [0],
    "sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}],
    "strategy": {"type": "Recreate"},
    "minReadySeconds": 5,
    "revisionHistoryLimit": 1,
    "progressDeadlineSeconds": 60,
    "paused": True,
    "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
    "tolerations": [{"operator": "Exists"}],
    "priorityClassName": "system-node-critical",
    "imagePullSecrets": [{"name": "regcred"}],
}
SECOND_CONTAINER = "a second container"


def _refused_fields() -> list[str]:
    """The paths of the table's rows the release leaves unset and the rule refuses (alone, or
    unless a knob sets them): `.x` after a path is its sibling, `/.x` the previous one's."""
    docs = DOCS.read_text()
    table = docs[docs.index("### The controller's pod, field by field") :]
    table = table[: table.index("\n## ")]
    fields = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[1] != "(not set)" or "refused" not in cells[2]:
            continue
        parent = previous = ""
        for separator, token in re.findall(r"(^|, |/)`([^`]+)`", cells[0]):
            if not token.startswith("."):
                path = token
                parent = token.rpartition(".")[0]
            elif separator == "/":
                path = previous.rpartition(".")[0] + token
            else:
                path = parent + token
            fields.append(path)
            previous = path
        if SECOND_CONTAINER in cells[0]:
            fields.append(SECOND_CONTAINER)
    return fields


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    node: Any = obj
    *head, last = re.findall(r"[A-Za-z]+(?:\[[a-z-]+\])?", path)
    for part in head:
        name, _, item = part.partition("[")
        node = node.setdefault(name, {})
        if item:
            node = next(c for c in node if c.get("name") == item.rstrip("]"))
    node[last] = copy.deepcopy(value)


def test_the_table_refuses_what_the_issue_names() -> None:
    fields = _refused_fields()
    named = "hostIPC hostAliases dnsConfig shareProcessNamespace nodeName runtimeClassName"
    for leaf in (*named.split(), "runAsGroup", "lifecycle", "env", "priorityClassName"):
        assert any(f.rpartition(".")[2] == leaf for f in fields), leaf
    assert len(fields) == len(set(fields)) > 35


@pytest.mark.parametrize("field", _refused_fields())
def test_every_refused_pod_field_of_the_table_is_refused(field: str, tmp_path: Path) -> None:
    objects = [d for d in yaml.safe_load_all(MANIFEST.read_bytes()) if d is not None]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    if field == SECOND_CONTAINER:
        pod["containers"].append({**copy.deepcopy(pod["containers"][0]), "name": "second"})
        named = "containers"
    else:
        leaf = field.rpartition(".")[2]
        _set(deployment, field, VALUES[leaf])
        named = leaf
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    config = KueueConfig.model_validate(
        {"manifest": {"path": str(path), "custom": True, "reason": "promise under test"}}
    )
    with pytest.raises(ManifestError) as info:
        load_release(config, releases=stand_in())
    assert "nothing was applied" in str(info.value)
    assert named in str(info.value)
