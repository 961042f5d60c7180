"""The real Kueue release manifest of the pin, rendered with the pinned kubectl: it passes the
release allowlist unchanged (so the allowlist is not stricter than a real release), the render
is deterministic, and its sha256 is exactly what every committed stack pins."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from gpu_queues import keys
from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import list_stacks
from gpu_queues.kueue.versions import supported
from gpu_queues.release import digests
from gpu_queues.release.allowlist import check_release
from gpu_queues.release.manifest import load_release, parse_documents, prepare_manifest
from gpu_queues.release.module import module_dir, pinned_version, render, rendered_relpath
from gpu_queues.release.pin import pin
from tests.conftest import stack_raw

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = ROOT / ".toolchain" / "bin" / "kubectl"
VERSION = pinned_version()


@pytest.fixture(scope="module")
def rendered() -> bytes:
    assert KUBECTL.exists(), f"{KUBECTL} is missing: run `make toolchain`"
    return render(VERSION, module_dir(VERSION), KUBECTL)


def installing_stacks() -> list[str]:
    return [s for s in list_stacks(ROOT) if load_config(stack_raw(s)).kueue.install]


def test_the_render_is_deterministic(rendered: bytes) -> None:
    assert render(VERSION, module_dir(VERSION), KUBECTL) == rendered


def test_the_real_release_passes_the_allowlist_unchanged(rendered: bytes) -> None:
    docs = parse_documents(rendered, "rendered release")
    assert check_release(docs, VERSION) == []
    kinds = {d.kind for d in docs}
    assert {"CustomResourceDefinition", "Deployment", "APIService", "RoleBinding"} <= kinds


@pytest.mark.parametrize("stack", installing_stacks())
def test_every_stack_pins_the_rendered_release(rendered: bytes, stack: str) -> None:
    manifest = load_config(stack_raw(stack)).kueue.manifest
    assert manifest.path == rendered_relpath(VERSION)
    assert manifest.sha256 == hashlib.sha256(rendered).hexdigest()


@pytest.mark.parametrize("stack", installing_stacks())
def test_every_stack_prepares_the_real_release(rendered: bytes, stack: str) -> None:
    config = load_config(stack_raw(stack)).kueue
    docs = parse_documents(rendered, "rendered release")
    prepared = prepare_manifest(docs, config, "rendered release")
    assert len(prepared.objects) == len(docs)
    assert prepared.namespaces == {"kueue-system"}


def test_pin_kueue_check_finds_every_stack_pinned() -> None:
    pins = pin(check=True)  # renders into .kueue/<version>/ like `make kueue-manifest`
    assert [p.path.name for p in pins if p.changed] == []


def test_prod_records_the_verified_digest_for_the_policy_pack() -> None:
    pin(check=True)  # the rendered file must exist for load_release
    config = load_config(stack_raw("prod")).kueue
    prepared = load_release(config)
    deployment = next(o for o in prepared.objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["annotations"][keys.ANNOTATION_MANIFEST_SHA256] == (
        config.manifest.sha256
    )


@pytest.mark.parametrize("version", supported())
def test_every_supported_release_renders_to_its_recorded_digests(version: str) -> None:
    """Issue 24, item 1: the digests are the release as rendered from its pinned module, so a
    digest cannot drift from its release (nor a render from its digest)."""
    fresh = digests.digest_of(version, render(version, module_dir(version), KUBECTL))
    assert fresh == digests.load(version)
    assert len(fresh.objects) > 20  # every CRD, RBAC object, webhook and the controller


def test_the_pinned_release_is_genuine_and_a_reserialized_copy_is_still_it(
    rendered: bytes,
) -> None:
    version = pinned_version()
    objects = [d for d in yaml.safe_load_all(rendered) if d is not None]
    assert digests.compare(objects, version).genuine
    redumped = yaml.safe_dump_all(objects, default_flow_style=True, width=60).encode()
    assert redumped != rendered
    again = [d for d in yaml.safe_load_all(redumped) if d is not None]
    assert digests.compare(again, version).genuine
    # and one changed argument of the controller is not the release any more
    deployment = next(o for o in again if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0].setdefault("args", []).append(
        "--kubeconfig=/evil"
    )
    verdict = digests.compare(again, version)
    assert not verdict.genuine
    assert verdict.changed == ["apps/Deployment/kueue-system/kueue-controller-manager"]


def _reverse_sets(objects: list[dict[str, object]]) -> int:
    """Reverse, in place, every list of the release that is a set (gpu_queues/release/order.py):
    the pod's volumes, the manager's mounts and ports, every role's rules and their verbs, the
    validating webhooks and each webhook's rules and operations. The number reversed."""
    from typing import Any

    count = 0

    def flip(node: Any, key: str) -> None:
        nonlocal count
        if isinstance(node, dict) and isinstance(node.get(key), list) and len(node[key]) > 1:
            node[key].reverse()
            count += 1

    for obj in objects:
        node: Any = obj
        if obj["kind"] == "Deployment":
            pod = node["spec"]["template"]["spec"]
            flip(pod, "volumes")
            for container in pod["containers"]:
                flip(container, "volumeMounts")
                flip(container, "ports")
        if obj["kind"] in ("Role", "ClusterRole"):
            for rule in node.get("rules") or []:
                flip(rule, "verbs")
                flip(rule, "resources")
            flip(node, "rules")
        if obj["kind"].endswith("WebhookConfiguration"):
            for hook in node["webhooks"]:
                for rule in hook.get("rules") or []:
                    flip(rule, "operations")
                flip(hook, "rules")
            if obj["kind"] == "ValidatingWebhookConfiguration":
                flip(node, "webhooks")
    return count


@pytest.mark.parametrize("version", supported())
def test_a_release_with_its_sets_reordered_is_still_the_release(version: str) -> None:
    """Issue 24, item 2: order that Kubernetes gives no meaning is not a difference; the
    controller's args, whose order it does, are."""
    release = render(version, module_dir(version), KUBECTL)
    objects = [d for d in yaml.safe_load_all(release) if d is not None]
    assert _reverse_sets(objects) > 20  # real reorders, not a no-op
    assert digests.compare(objects, version).genuine
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["args"].reverse()
    verdict = digests.compare(objects, version)
    assert verdict.changed == ["apps/Deployment/kueue-system/kueue-controller-manager"]
