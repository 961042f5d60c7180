"""Drive the policy pack the way the Pulumi engine does, without the CLI.

Props travel as a protobuf Struct (numbers become floats, unknowns are sentinel strings), then
pulumi_policy deserializes them and wraps them in its unknown-checking proxy. The Analyzer
below goes one step further and calls the SDK's own analyzer servicer over its request and
response messages, with config reconciled like the engine does (schema defaults, then file).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies import catalog
from policies.rules import DEPLOYMENT_TYPE, JOB_TYPE, PVC_TYPE
from tests.builders import (
    QUEUE_LABEL,
    ClusterQueue,
    FlavorQuotas,
    Job,
    LocalQueue,
    ResourceFlavor,
)

REPO = Path(__file__).resolve().parents[2]
PACK_DIR = REPO / "policies"
STACK = "dev"
PROJECT = "gpu-queues"

# What the engine sends for a value that is only known after the update.
UNKNOWN = UNKNOWN_STRING_VALUE

CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LQ = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
RF = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
COHORT = "kubernetes:kueue.x-k8s.io/v1beta2:Cohort"
PVC = PVC_TYPE
DEPLOYMENT = DEPLOYMENT_TYPE
JOB = JOB_TYPE
SHA = "0" * 63 + "f"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


def to_struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(props))
    return struct


def wire(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Props as a policy receives them: through protobuf, deserialized, proxied."""
    deserialized = deserialize_properties(json_format.MessageToDict(to_struct(props)))
    return unknown_checking_proxy(deserialized)


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def resource_args(
    type_: str, props: Mapping[str, Any], name: str = "r", config: Mapping[str, Any] | None = None
) -> ResourceValidationArgs:
    return ResourceValidationArgs(
        type_, wire(props), urn(type_, name), name, _opts(), None, dict(config or {}), {}
    )


def stack_args(
    resources: Sequence[tuple[str, str, Mapping[str, Any]]],
    config: Mapping[str, Any] | None = None,
) -> StackValidationArgs:
    built = [
        PolicyResource(t, wire(p), urn(t, n), n, _opts(), None, None, [], {})
        for t, n, p in resources
    ]
    return StackValidationArgs(built, dict(config or {}), {})


def run_policy(name: str, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    """Validate with the named policy of the catalog; return the reported messages."""
    reported: list[str] = []
    policy = next(p for p in catalog.policies() if p.name == name)
    policy.validate(args, lambda message, urn=None: reported.append(message))  # type: ignore[attr-defined]
    return reported


class Analyzer:
    """The pulumi_policy analyzer servicer with the pack's policies, configured like the CLI."""

    def __init__(self, config_file: Path | None = None) -> None:
        self.servicer = _PolicyAnalyzerServicer(
            catalog.PACK_NAME, "0.1.0", catalog.policies(), EnforcementLevel.MANDATORY
        )
        self.info = self.servicer.GetAnalyzerInfo(None, None)
        self.configure(json.loads(config_file.read_text()) if config_file else {})

    def configure(self, file_config: Mapping[str, Any]) -> None:
        """Schema defaults, then the file's per-policy levels and properties (as the engine)."""
        request = proto.ConfigureAnalyzerRequest()
        for policy in self.info.policies:
            props = {
                key: json_format.MessageToDict(schema).get("default")
                for key, schema in policy.configSchema.properties.items()
                if "default" in schema
            }
            level = policy.enforcementLevel
            given = copy.deepcopy(file_config.get(policy.name))
            if isinstance(given, str):
                level = proto.EnforcementLevel.Value(given.upper())
            elif isinstance(given, dict):
                if "enforcementLevel" in given:
                    level = proto.EnforcementLevel.Value(given.pop("enforcementLevel").upper())
                props.update(given)
            config = proto.PolicyConfig(enforcementLevel=level)
            config.properties.update(props)
            request.policyConfig[policy.name].CopyFrom(config)
        self.servicer.Configure(request, None)

    def analyze(self, type_: str, props: Mapping[str, Any], name: str = "r") -> list[Any]:
        request = proto.AnalyzeRequest(
            type=type_, properties=to_struct(props), urn=urn(type_, name), name=name
        )
        return list(self.servicer.Analyze(request, None).diagnostics)

    def analyze_stack(self, resources: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[Any]:
        request = proto.AnalyzeStackRequest(
            resources=[
                proto.AnalyzerResource(type=t, properties=to_struct(p), urn=urn(t, n), name=n)
                for t, n, p in resources
            ]
        )
        return list(self.servicer.AnalyzeStack(request, None).diagnostics)

    def preview(self, resources: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[Any]:
        """Every resource through Analyze, then the stack through AnalyzeStack."""
        found: list[Any] = []
        for t, n, p in resources:
            found += self.analyze(t, p, n)
        return found + self.analyze_stack(resources)


def mandatory(diagnostics: Sequence[Any]) -> list[Any]:
    return [d for d in diagnostics if d.enforcementLevel == proto.MANDATORY]


def advisory(diagnostics: Sequence[Any]) -> list[Any]:
    return [d for d in diagnostics if d.enforcementLevel == proto.ADVISORY]


# --- The seed's objects (dev stack), as the program declares them --------------------------


SEED_QUOTA = {"cpu": 64, "memory": "512Gi", "nvidia.com/gpu": 8}
SEED_COVERED = ("cpu", "memory", "nvidia.com/gpu")


def flavor(name: str = "gpu-flavor", **annotations: str) -> dict[str, Any]:
    built = ResourceFlavor(name)
    if annotations:
        built.annotations(annotations)
    return built.obj()


def quota(name: str, nominal: Any, **limits: Any) -> dict[str, Any]:
    """One entry of a flavor's resources, as written (also the ones the webhook refuses)."""
    return {"name": name, "nominalQuota": nominal, **limits}


def seed_queue(
    name: str = "gpu-cluster-queue",
    covered: Sequence[str] = SEED_COVERED,
    flavor_name: str = "gpu-flavor",
) -> ClusterQueue:
    """The seed's ClusterQueue, as a builder: the seed's quota of each covered resource."""
    return ClusterQueue(name).quota(flavor_name, **{r: SEED_QUOTA[r] for r in covered})


def cluster_queue(
    name: str = "gpu-cluster-queue",
    covered: Sequence[str] = SEED_COVERED,
    quotas: Sequence[dict[str, Any]] | None = None,
    flavor_name: str = "gpu-flavor",
    **spec: Any,
) -> dict[str, Any]:
    if quotas is None:
        built = seed_queue(name, covered, flavor_name)
    else:
        entries = FlavorQuotas(flavor_name)
        for entry in quotas:
            entries.entry(entry)
        built = ClusterQueue(name).resource_group(entries, covered=covered)
    return built.spec(**spec).obj()


def local_queue(
    name: str = "gpu-queue", cluster_queue: Any = "gpu-cluster-queue", namespace: str = "default"
) -> dict[str, Any]:
    return LocalQueue(name, namespace, cluster_queue).obj()


def shared_pvc(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "shared-wekafs",
        "volumeName": "shared-volume-abc",
        "resources": {"requests": {"storage": "100Gi"}},
    }
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "shared-pvc", "namespace": "default"},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def kueue_deployment(
    image: str = "registry.k8s.io/kueue/kueue:v0.18.3",
    sha: str | None = SHA,
    name: str = "kueue-controller-manager",
    namespace: str = "kueue-system",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if sha is not None:
        metadata["annotations"] = {"gpu-queues.dev/manifest-sha256": sha}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {
                "metadata": {"labels": {"control-plane": "controller-manager"}},
                "spec": {"containers": [{"name": "manager", "image": image}]},
            },
        },
    }


def job(
    labels: dict[str, Any] | None = None, suspend: Any = True, name: str = "gpu-job-a"
) -> dict[str, Any]:
    """The guide's gpu-job-a (6 GPUs): suspended unless `suspend` says otherwise (None: no such
    field), in gpu-queue unless `labels` are given (its labels, as written)."""
    built = (
        Job(name, "default").parallelism(1).completions(1).container("worker")
        .image("nvidia/cuda:12.4.0-base-ubuntu22.04").requests(cpu="2", memory="8Gi")
        .limits(gpu=6)
    )  # fmt: skip
    if suspend is not None:
        built.suspend(suspend)
    made = built.obj()
    made["metadata"]["labels"] = {QUEUE_LABEL: "gpu-queue"} if labels is None else labels
    return made


def seed_stack() -> list[tuple[str, str, dict[str, Any]]]:
    """The dev stack of the seed walkthrough: every object the pack looks at, all valid."""
    return [
        (RF, "gpu-flavor", flavor()),
        (CQ, "gpu-cluster-queue", cluster_queue()),
        (LQ, "gpu-queue", local_queue()),
        (PVC, "shared-pvc", shared_pvc()),
        (DEPLOYMENT, "kueue-controller-manager", kueue_deployment()),
        (JOB, "gpu-job-a", job()),
    ]
