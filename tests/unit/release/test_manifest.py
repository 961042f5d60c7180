"""Kueue install: manifest source and checksum, manager Configuration, controller settings."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from gpu_queues import keys
from gpu_queues.config.model import KueueConfig, load_config
from gpu_queues.release.manifest import (
    MANAGER_CONFIG_KEY,
    ManifestError,
    load_manifest,
    load_release,
    prepare_manifest,
)
from tests.conftest import MANIFEST, ROOT, run_stack, stack_raw, stand_in

pytestmark = pytest.mark.unit


def kueue(**data) -> KueueConfig:
    return KueueConfig.model_validate(data)


def test_default_manifest_is_the_official_release_url_of_the_pinned_version():
    assert kueue().manifest_url == (
        "https://github.com/kubernetes-sigs/kueue/releases/download/v0.18.3/manifests.yaml"
    )
    assert kueue(version="v0.17.0").manifest_url.endswith("/v0.17.0/manifests.yaml")


def test_mirror_url_overrides_the_release_url():
    cfg = kueue(manifest={"url": "https://mirror.example/kueue/v0.18.3.yaml"})
    assert cfg.manifest_url == "https://mirror.example/kueue/v0.18.3.yaml"


def test_local_manifest_with_matching_sha256_loads():
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    docs = load_manifest(kueue(manifest={"path": str(MANIFEST), "sha256": digest}))
    assert {d.kind for d in docs} >= {"Namespace", "Deployment", "ConfigMap"}


def test_relative_path_is_relative_to_the_project_root(tmp_path, monkeypatch):
    # From another directory, where the relative path names nothing: the same documents as
    # the absolute path gives, so it was read from the project root and not the cwd.
    monkeypatch.chdir(tmp_path)
    rel = MANIFEST.relative_to(ROOT)
    assert not (tmp_path / rel).exists()
    expected = load_manifest(kueue(manifest={"path": str(MANIFEST)}))
    assert expected
    assert load_manifest(kueue(manifest={"path": str(rel)})) == expected


def test_sha256_mismatch_is_a_clear_error():
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    with pytest.raises(ManifestError) as info:
        load_manifest(kueue(manifest={"path": str(MANIFEST), "sha256": "0" * 64}))
    message = str(info.value)
    assert f"has sha256 {digest}" in message
    assert f"expects {'0' * 64}" in message
    assert "nothing was applied" in message


def test_missing_local_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(ManifestError, match="cannot read the Kueue manifest"):
        load_manifest(kueue(manifest={"path": str(tmp_path / "nope.yaml")}))


def test_unreachable_url_suggests_the_air_gapped_options():
    with pytest.raises(ManifestError, match=r"kueue\.manifest\.path"):
        load_manifest(kueue(manifest={"url": "file:///nonexistent/manifests.yaml"}))


def test_manifest_that_is_not_kubernetes_objects_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("just: a mapping\n")
    with pytest.raises(ManifestError, match="document 0 is not a Kubernetes object"):
        load_manifest(kueue(manifest={"path": str(bad)}))


def _manager_config(prepared):
    cm = next(o for o in prepared.objects if o["kind"] == "ConfigMap")
    return yaml.safe_load(cm["data"][MANAGER_CONFIG_KEY])


def _deployment(prepared):
    return next(o for o in prepared.objects if o["kind"] == "Deployment")


def test_manager_configuration_is_rendered_from_stack_config(manifest):
    cfg = load_config(stack_raw("prod")).kueue
    rendered = _manager_config(prepare_manifest(manifest, cfg))
    assert rendered["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert rendered["kind"] == "Configuration"
    # Kept from the release: the wiring the manifest depends on.
    assert rendered["webhook"] == {"port": 9443}
    assert rendered["leaderElection"]["resourceName"] == "c1f6bfd2.kueue.x-k8s.io"
    # From stack config.
    assert rendered["integrations"]["frameworks"] == [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/pytorchjob",
    ]
    assert rendered["waitForPodsReady"] == {
        "timeout": "10m",
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5},
    }
    assert rendered["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert rendered["managedJobsNamespaceSelector"]["matchExpressions"][0]["operator"] == "In"


def test_feature_gates_are_rendered(manifest):
    cfg = kueue(manager={"featureGates": {"TopologyAwareScheduling": True}})
    assert _manager_config(prepare_manifest(manifest, cfg))["featureGates"] == {
        "TopologyAwareScheduling": True
    }


def test_feature_gate_both_in_config_and_args_is_refused(manifest):
    deployment = next(o for o in manifest if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["args"].append(
        "--feature-gates=TopologyAwareScheduling=true"
    )
    cfg = kueue(manager={"featureGates": {"TopologyAwareScheduling": False}})
    with pytest.raises(ManifestError, match="TopologyAwareScheduling are set both"):
        prepare_manifest(manifest, cfg)


def test_without_manager_settings_the_release_configuration_is_kept(manifest):
    rendered = _manager_config(prepare_manifest(manifest, kueue()))
    assert "waitForPodsReady" not in rendered
    assert "fairSharing" not in rendered
    assert rendered["integrations"]["frameworks"] == ["batch/job", "pod"]


def test_controller_settings_are_applied_to_the_deployment(manifest):
    cfg = load_config(stack_raw("prod")).kueue
    deployment = _deployment(prepare_manifest(manifest, cfg))
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 2
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/system": "true"}
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }


def test_a_config_change_changes_the_pod_template(manifest):
    def annotation(cfg):
        deployment = _deployment(prepare_manifest(manifest, cfg))
        return deployment["spec"]["template"]["metadata"]["annotations"][
            keys.ANNOTATION_CONFIG_HASH
        ]

    assert annotation(kueue()) == annotation(kueue())
    assert annotation(kueue()) != annotation(kueue(manager={"manageJobsWithoutQueueName": True}))


def test_prepare_does_not_mutate_the_parsed_manifest(manifest):
    before = yaml.safe_dump(manifest)
    prepare_manifest(manifest, load_config(stack_raw("prod")).kueue)
    assert yaml.safe_dump(manifest) == before


def test_every_manifest_object_is_registered_as_its_typed_resource(dev_run, manifest):
    types = {r.typ for r in dev_run.resources}
    assert {
        "kubernetes:core/v1:Namespace",
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "kubernetes:core/v1:ServiceAccount",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
    } <= types
    binding = dev_run.one("ClusterRoleBinding", "kueue-manager-rolebinding")
    assert binding.inputs["roleRef"]["name"] == "kueue-manager-role"
    cm = dev_run.one("ConfigMap", "kueue-manager-config")
    assert "Configuration" in cm.inputs["data"][MANAGER_CONFIG_KEY]


def test_preinstalled_kueue_is_not_installed_but_still_awaited():
    raw = stack_raw("dev")
    raw["kueue"] = {"install": False}
    run = run_stack(load_config(raw), None)
    assert not [r for r in run.resources if r.typ == "gpu-queues:kueue:KueueRelease"]
    assert not run.of_kind("Deployment")
    assert len(run.probes) == 1
    assert run.one("ClusterQueue", "gpu-cluster-queue")


def test_preview_never_probes_the_cluster(manifest):
    run = run_stack(load_config(stack_raw("dev")), manifest, preview=True)
    assert run.probes == []


def test_probe_gets_the_kubeconfig_and_context_from_secret_config(manifest):
    run = run_stack(
        load_config(stack_raw("dev")),
        manifest,
        kubernetes={"kubeconfig": "apiVersion: v1\nkind: Config\n", "context": "sandbox"},
    )
    assert run.probes == [("apiVersion: v1\nkind: Config\n", "sandbox", 300.0)]


def test_a_verified_checksum_is_recorded_on_the_deployment_for_the_policy_pack():
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    prepared = load_release(
        kueue(manifest={"path": str(MANIFEST), "sha256": digest}), releases=stand_in()
    )
    assert prepared.sha256 == digest
    annotations = _deployment(prepared)["metadata"]["annotations"]
    assert annotations[keys.ANNOTATION_MANIFEST_SHA256] == digest


def test_no_checksum_configured_records_none():
    prepared = load_release(kueue(manifest={"path": str(MANIFEST)}), releases=stand_in())
    assert prepared.sha256 is None
    assert keys.ANNOTATION_MANIFEST_SHA256 not in _deployment(prepared)["metadata"].get(
        "annotations", {}
    )


def test_a_configured_checksum_alone_is_not_recorded_as_verified(manifest):
    # prepare_manifest never saw the bytes: only load_release, which verified them, may
    # record a digest (issue 10 item 7).
    prepared = prepare_manifest(manifest, kueue(manifest={"sha256": "a" * 64}))
    assert prepared.sha256 is None
    assert keys.ANNOTATION_MANIFEST_SHA256 not in _deployment(prepared)["metadata"].get(
        "annotations", {}
    )


def test_the_policy_pack_reads_the_annotation_the_program_writes():
    from policies.rules import CHECKSUM_ANNOTATION

    assert CHECKSUM_ANNOTATION == keys.ANNOTATION_MANIFEST_SHA256


def test_the_checksum_policy_passes_only_on_a_verified_digest(manifest):
    from policies.rules import Resource
    from policies.rules.release import kueue_release_checksum

    def violations(run):
        deployment = run.one("Deployment", "kueue-controller-manager")
        resource = Resource.of(deployment.typ, deployment.name, "urn:x", deployment.inputs)
        return kueue_release_checksum(resource, {})

    config = load_config(stack_raw("prod"))
    assert config.kueue.manifest.sha256  # prod pins one; unverified it is not recorded
    assert len(violations(run_stack(config, manifest))) == 1
    verified = run_stack(config, manifest, verified_sha256=config.kueue.manifest.sha256)
    assert violations(verified) == []
