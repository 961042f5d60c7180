"""Custom manifests without a toolchain (issue 24, item 3): the unit tests' stand-in manifest
plays the release (tests/conftest.py stand_in), so what is refused, what is accepted and what
the messages name can be checked in milliseconds. The same rules against the genuine release,
attack by attack, are in tests/toolchain/test_custom_manifest.py."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import ConfigError, KueueConfig, load_config
from gpu_queues.release import custom, digests, rights
from gpu_queues.release.manifest import ManifestError, PreparedManifest, load_release
from gpu_queues.release.reference import PinnedReleases, ReleaseUnavailable, StandInRelease
from tests.conftest import MANIFEST, STAND_IN_VERSION, stack_raw, stand_in

pytestmark = pytest.mark.unit

NS = "kueue-system"
RBAC = "rbac.authorization.k8s.io/v1"
CUSTOM = {"custom": True, "reason": "our mirror's build"}
Objects = list[dict[str, Any]]


def objects() -> Objects:
    return [d for d in yaml.safe_load_all(MANIFEST.read_bytes()) if d is not None]


def load(tmp_path: Path, objs: Objects, **manifest: Any) -> PreparedManifest:
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=True))
    config = KueueConfig.model_validate({"manifest": {"path": str(path), **manifest}})
    return load_release(config, releases=stand_in())


def refusal(tmp_path: Path, objs: Objects, **manifest: Any) -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, objs, **manifest)
    return str(info.value)


def manager(objs: Objects) -> dict[str, Any]:
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"a": "b"},
    }


def cluster_role(
    name: str, labels: dict[str, str], rules: list[Any], selects: list[Any] | None = None
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": rules,
    }
    if selects is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": selects}
    return role


PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]


# --- the stack config -----------------------------------------------------------------------


def _kueue_problems(manifest: dict[str, Any]) -> list[str]:
    raw = stack_raw("dev")
    raw["kueue"] = {"manifest": manifest}
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_custom_needs_a_reason(reason: str | None) -> None:
    manifest: dict[str, Any] = {"path": "m.yaml", "custom": True}
    if reason is not None:
        manifest["reason"] = reason
    (problem,) = _kueue_problems(manifest)
    assert "gpu-queues:kueue.manifest" in problem
    assert "custom: true needs a non-empty reason" in problem


def test_a_reason_without_custom_is_refused() -> None:
    (problem,) = _kueue_problems({"path": "m.yaml", "reason": "because"})
    assert "reason is read only with custom: true" in problem


def test_custom_with_a_reason_is_config() -> None:
    raw = stack_raw("dev")
    raw["kueue"] = {"manifest": {"path": "m.yaml", **CUSTOM}}
    manifest = load_config(raw).kueue.manifest
    assert manifest.custom is True and manifest.reason == CUSTOM["reason"]


# --- the release, or refused ----------------------------------------------------------------


def test_the_stand_in_reserialized_is_the_release(tmp_path: Path) -> None:
    prepared = load(tmp_path, objects())
    assert prepared.genuine
    assert prepared.provenance is not None and "object for object" in prepared.provenance


def test_the_stand_in_is_not_the_real_release(tmp_path: Path) -> None:
    # what keeps the stand-in honest: against the committed digests it is refused
    path = tmp_path / "manifests.yaml"
    path.write_bytes(MANIFEST.read_bytes())
    config = KueueConfig.model_validate(
        {"version": STAND_IN_VERSION, "manifest": {"path": str(path)}}
    )
    with pytest.raises(ManifestError, match=r"differs from the release v0\.18\.3: .* changed"):
        load_release(config, releases=PinnedReleases(tmp_path))


def test_a_changed_manifest_is_refused_naming_the_field_and_the_key(tmp_path: Path) -> None:
    changed = objects()
    manager(changed)["args"].append("--kubeconfig=/evil")
    message = refusal(tmp_path, changed)
    assert "1 changed (apps/Deployment/kueue-system/kueue-controller-manager)" in message
    assert (
        "The first difference: Deployment kueue-system/kueue-controller-manager: "
        'spec.template.spec.containers[manager].args[2] (release: absent; here: "--kubeconfig='
        '/evil")' in message
    )
    assert "set gpu-queues:kueue.manifest.custom: true with a kueue.manifest.reason" in message
    assert message.endswith("Nothing was applied")


def test_a_missing_object_is_named(tmp_path: Path) -> None:
    changed = [o for o in objects() if o["kind"] != "CustomResourceDefinition"]
    message = refusal(tmp_path, changed, **CUSTOM)
    assert "CustomResourceDefinition clusterqueues.kueue.x-k8s.io: missing" in message


# --- custom: what may differ ------------------------------------------------------------


def test_an_extra_configmap_is_accepted_and_the_preview_names_it(tmp_path: Path) -> None:
    prepared = load(tmp_path, [*objects(), config_map("kueue-dashboards")], **CUSTOM)
    assert not prepared.genuine
    assert prepared.provenance == (
        f"Kueue manifest {tmp_path / 'manifests.yaml'}: a custom manifest "
        "(gpu-queues:kueue.manifest.custom: our mirror's build), checked field by field "
        "against the release v0.18.3; it differs in 1 object(s): ConfigMap "
        "kueue-system/kueue-dashboards (added)"
    )


def test_the_root_ca_configmap_is_not_harmless(tmp_path: Path) -> None:
    message = refusal(tmp_path, [*objects(), config_map("kube-root-ca.crt")], **CUSTOM)
    assert "ConfigMap kueue-system/kube-root-ca.crt: would replace kube-root-ca.crt" in message


def test_an_extra_secret_is_refused(tmp_path: Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": NS}}
    message = refusal(tmp_path, [*objects(), secret], **CUSTOM)
    assert "Secret kueue-system/x: the release v0.18.3 has no such object" in message


def test_a_new_clusterrole_with_a_label_other_aggregators_may_select_is_refused(
    tmp_path: Path,
) -> None:
    role = cluster_role("kueue-extra", {"app.kubernetes.io/name": "kueue"}, [])
    message = refusal(tmp_path, [*objects(), role], **CUSTOM)
    assert "ClusterRole kueue-extra: is a ClusterRole the release" in message
    assert "labelled app.kubernetes.io/name" in message


def test_an_unbound_new_clusterrole_is_accepted(tmp_path: Path) -> None:
    role = cluster_role(
        "kueue-extra", {}, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    )
    assert not load(tmp_path, [*objects(), role], **CUSTOM).genuine


def test_binding_a_new_role_to_the_controller_is_judged_by_what_it_grants(tmp_path: Path) -> None:
    role = cluster_role("kueue-extra", {}, PODS)
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kueue-extra"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "kueue-extra",
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": NS}
        ],
    }
    message = refusal(tmp_path, [*objects(), role, binding], **CUSTOM)
    assert (
        "ServiceAccount kueue-system/kueue-controller-manager would be granted create on pods "
        "(core) cluster-wide" in message
    )


def test_a_narrower_manager_role_is_accepted(tmp_path: Path) -> None:
    changed = objects()
    role = next(o for o in changed if o["kind"] == "ClusterRole")
    role["rules"] = role["rules"][:1]
    prepared = load(tmp_path, changed, **CUSTOM)
    assert "ClusterRole kueue-manager-role (rules[" in (prepared.provenance or "")


def test_what_a_knob_sets_may_differ_only_when_the_stack_sets_it(tmp_path: Path) -> None:
    changed = objects()
    manager(changed)["resources"] = {"limits": {"cpu": "64"}}
    assert "containers[manager].resources" in refusal(tmp_path, changed, **CUSTOM)
    path = tmp_path / "knob.yaml"
    path.write_text(yaml.safe_dump_all(changed))
    config = KueueConfig.model_validate(
        {
            "manifest": {"path": str(path), **CUSTOM},
            "controller": {"resources": {"limits": {"cpu": "2"}}},
        }
    )
    prepared = load_release(config, releases=stand_in())
    deployment = next(o for o in prepared.objects if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"}
    }


def test_the_manager_configuration_is_compared_as_data(tmp_path: Path) -> None:
    changed = objects()
    cm = next(o for o in changed if o["kind"] == "ConfigMap")
    text = cm["data"]["controller_manager_config.yaml"]
    cm["data"]["controller_manager_config.yaml"] = "# our comment\n" + yaml.safe_dump(
        yaml.safe_load(text), sort_keys=True, indent=4
    )
    assert not load(tmp_path, changed, **CUSTOM).genuine
    loaded = yaml.safe_load(text)
    loaded["clientConnection"] = {"qps": 5000, "burst": 10000}
    cm["data"]["controller_manager_config.yaml"] = yaml.safe_dump(loaded)
    message = refusal(tmp_path, changed, **CUSTOM)
    assert 'data["controller_manager_config.yaml"].clientConnection' in message


# --- where the release comes from -----------------------------------------------------------


def _pinned(tmp_path: Path) -> PinnedReleases:
    folder = tmp_path / "digests"
    digests.write(digests.digest_of("v9.9.9", MANIFEST.read_bytes()), folder)
    return PinnedReleases(tmp_path / "checkout", folder)


def test_the_render_is_the_release_only_with_its_recorded_sha256(tmp_path: Path) -> None:
    releases = _pinned(tmp_path)
    with pytest.raises(ReleaseUnavailable, match=r"cannot be read: .*Run `make kueue-manifest`"):
        releases.objects("v9.9.9")
    render = tmp_path / "checkout" / ".kueue" / "v9.9.9" / "manifests.yaml"
    render.parent.mkdir(parents=True)
    render.write_bytes(MANIFEST.read_bytes() + b"\n# changed\n")
    with pytest.raises(ReleaseUnavailable, match="so it is not the release"):
        releases.objects("v9.9.9")
    render.write_bytes(MANIFEST.read_bytes())
    assert releases.objects("v9.9.9") == objects()
    assert hashlib.sha256(render.read_bytes()).hexdigest() == releases.recorded("v9.9.9").sha256
    with pytest.raises(ReleaseUnavailable, match=r"no digests are recorded for Kueue v0\.0\.1"):
        releases.objects("v0.0.1")


def test_a_stand_in_plays_one_release_only() -> None:
    release = StandInRelease("v1.0.0", MANIFEST.read_bytes())
    assert release.recorded("v1.0.1") is None
    with pytest.raises(ReleaseUnavailable):
        release.objects("v1.0.1")


# --- the field by field comparison --------------------------------------------------------


def test_differences_tell_true_from_one_and_name_list_items_by_name() -> None:
    release = {
        "spec": {"containers": [{"name": "manager", "x": True, "y": 1}]},
        "metadata": {"annotations": {"a.io/b": "1"}},
    }
    here = copy.deepcopy(release)
    here["spec"]["containers"][0]["x"] = 1
    here["spec"]["containers"][0]["y"] = 1.0
    here["metadata"]["annotations"]["a.io/b"] = 1
    found = [str(d) for d in custom.differences(release, here)]
    assert found == [
        "spec.containers[manager].x (release: true; here: 1)",
        "spec.containers[manager].y (release: 1; here: 1.0)",
        'metadata.annotations["a.io/b"] (release: "1"; here: 1)',
    ]


def test_first_difference_names_an_added_object() -> None:
    objs = [*objects(), config_map("x")]
    assert (
        custom.first_difference(objs, objects()) == "ConfigMap kueue-system/x is not in the release"
    )
    assert custom.first_difference(objects()[1:], objects()).endswith("is missing")
    assert custom.first_difference(objects(), objects()) is None


# --- RBAC after aggregation -----------------------------------------------------------------


def _label(key: str) -> dict[str, str]:
    return {key: "true"}


def test_aggregation_is_resolved_to_a_fixed_point_over_three_hops() -> None:
    roles = [
        cluster_role(
            "a",
            _label("rbac.authorization.k8s.io/aggregate-to-view"),
            [],
            [{"matchLabels": _label("rbac.kueue.x-k8s.io/b")}],
        ),
        cluster_role(
            "b",
            _label("rbac.kueue.x-k8s.io/b"),
            [],
            [{"matchExpressions": [{"key": "rbac.kueue.x-k8s.io/c", "operator": "Exists"}]}],
        ),
        cluster_role("c", {"rbac.kueue.x-k8s.io/c": "yes"}, PODS),
    ]
    granted = rights.cluster_role_rights(roles)
    create_pods = ("", "pods", "create", "")
    assert all(create_pods in granted[n] for n in ("a", "b", "view", "edit", "admin"))
    problems = rights.wider([], roles)
    assert any(
        p.startswith("the built-in ClusterRole view would grant create on pods") for p in problems
    )


def test_selector_operators_select_as_kubernetes_does() -> None:
    labels = {"k": "v"}
    for operator, values, expected in [
        ("In", ["v"], True),
        ("In", ["w"], False),
        ("NotIn", ["v"], False),
        ("NotIn", ["w"], True),
        ("Exists", [], True),
        ("DoesNotExist", [], False),
        ("Bogus", [], False),
    ]:
        term = {"matchExpressions": [{"key": "k", "operator": operator, "values": values}]}
        assert rights._matches(term, labels) is expected, operator


def test_a_resource_name_is_narrower_than_every_name() -> None:
    every = [
        cluster_role("r", {}, [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    ]
    one = [
        cluster_role(
            "r",
            {},
            [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": ["cert"],
                    "verbs": ["get"],
                }
            ],
        )
    ]
    assert rights.wider(every, one) == []
    assert rights.wider(one, every) == [
        "ClusterRole r would grant get on secrets (core) after aggregation; the release's "
        "grants none of that"
    ]


def test_an_aggregating_roles_own_rules_count() -> None:
    # they hold until the aggregation controller overwrites them, and each apply writes them
    release = [cluster_role("agg", {}, [], [{"matchLabels": _label("rbac.kueue.x-k8s.io/x")}])]
    changed = [cluster_role("agg", {}, PODS, [{"matchLabels": _label("rbac.kueue.x-k8s.io/x")}])]
    assert rights.wider(release, changed) == [
        "ClusterRole agg would grant create on pods (core) after aggregation; the release's "
        "grants none of that"
    ]


@pytest.mark.parametrize(
    "reason",
    [
        "ours\nKueue manifest m.yaml: the release v0.18.3, object for object",
        "ours\rforged",
        "ours\x1b[2Kforged",
    ],
)
def test_a_reason_cannot_forge_lines_of_the_preview(reason: str) -> None:
    # the reason is shown in the preview: a second line there could pass for the verdict
    (problem,) = _kueue_problems({"path": "m.yaml", "custom": True, "reason": reason})
    assert "one line of text" in problem


def test_a_file_or_object_name_cannot_forge_lines_of_the_preview(tmp_path: Path) -> None:
    folder = tmp_path / "m.yaml\nKueue manifest m.yaml: the release v0.18.3, object for object"
    folder.mkdir()
    named = config_map("x\nforged")
    prepared = load(folder, [*objects(), named], **CUSTOM)
    assert prepared.provenance is not None and "\n" not in prepared.provenance
    assert "m.yaml\\nKueue manifest" in prepared.provenance
    assert "ConfigMap kueue-system/x\\nforged (added)" in prepared.provenance
    assert "\n" not in (load(folder, objects()).provenance or "")


def _chain(n: int) -> Objects:
    """n ClusterRoles, each aggregating the next: the resolution's worst case."""
    roles = []
    for i in range(n):
        selects = [{"matchLabels": _label(f"rbac.kueue.x-k8s.io/r{i + 1}")}] if i < n - 1 else None
        rules = PODS if i == n - 1 else []
        roles.append(
            cluster_role(f"kueue-r{i}", _label(f"rbac.kueue.x-k8s.io/r{i}"), rules, selects)
        )
    return roles


def test_many_added_objects_are_refused_before_anything_is_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 400 chained roles took 69 s to resolve, 2,000 (600 kB of manifest) hours: a stalled
    # preview. A custom manifest adds a few objects, not a second release. Resolving them at
    # all is the mistake, so resolution fails the test (not a clock, which a busy machine
    # makes lie).
    def resolved(*_: Any) -> Any:
        raise AssertionError("the roles were resolved before the count refused them")

    monkeypatch.setattr(rights, "cluster_role_rights", resolved)
    monkeypatch.setattr(rights, "wider", resolved)
    message = refusal(tmp_path, [*objects(), *_chain(2000)], **CUSTOM)
    assert (
        "adds 2000 objects the release v0.18.3 does not have; a custom manifest adds at most"
        in (message)
    )


def test_a_long_aggregation_chain_resolves_in_quadratic_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counted, not timed: each role's selectors are matched against every role once (n
    # squared), and rights flow down the chain once (each role's rights grow once); an
    # earlier version re-matched on every pass, cubic, and stalled on a few hundred roles.
    matches, growths = 0, 0
    real_matches, real_frozenset = rights._matches, frozenset

    def counted_matches(*args: Any) -> bool:
        nonlocal matches
        matches += 1
        return real_matches(*args)

    def counted_frozenset(*args: Any) -> frozenset[Any]:
        nonlocal growths
        growths += 1
        return real_frozenset(*args)

    monkeypatch.setattr(rights, "_matches", counted_matches)
    granted = rights.cluster_role_rights(_chain(custom.MAX_ADDED))
    assert ("", "pods", "create", "") in granted["kueue-r0"]
    roles = custom.MAX_ADDED + len(rights.BUILTIN_AGGREGATORS) + 1
    assert matches <= roles * roles
    monkeypatch.setattr(rights, "frozenset", counted_frozenset, raising=False)
    granted = rights.cluster_role_rights(_chain(custom.MAX_ADDED))
    assert ("", "pods", "create", "") in granted["kueue-r0"]
    assert growths <= 3 * roles


def test_aliases_in_the_manager_configuration_are_refused_before_they_are_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nine anchors of ten aliases each: 10^9 strings once expanded. The manifest's own YAML
    # may hold no alias (parse_documents), but the Configuration is YAML inside a string; the
    # custom check's comparison expanded it and the preview hung.
    changed = objects()
    cm = next(o for o in changed if o["kind"] == "ConfigMap")
    bomb = "".join(
        f"    - &a{i} [{', '.join([f'*a{i - 1}' if i else 'x'] * 10)}]\n" for i in range(9)
    )
    text = cm["data"]["controller_manager_config.yaml"]
    cm["data"]["controller_manager_config.yaml"] = text.replace(
        "webhook:\n  port: 9443\n", "webhook:\n  port:\n" + bomb
    )
    real_load = yaml.safe_load

    def load(text: Any, *args: Any) -> Any:  # expanding the bomb is the failure, not slowness
        assert not (isinstance(text, str) and "*a8" in text), "the aliases were expanded"
        return real_load(text, *args)

    monkeypatch.setattr(yaml, "safe_load", load)
    message = refusal(tmp_path, changed, **CUSTOM)
    # refused by the one reading rule (gpu_queues/yamlio.py), naming the key and the line
    assert "controller_manager_config.yaml: line 10 (key webhook.port[3][7])" in message, message
    assert "its aliases would expand the document by 1,234,567,880 nodes" in message
