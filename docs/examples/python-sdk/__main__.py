"""A Pulumi Python program that uses gpu-queues through the component package's generated SDK
(`pulumi package gen-sdk <checkout>/package/schema.json --language python`), as programs in
other languages use theirs: the arguments are typed dicts (snake_case keys, checked by mypy
and pyright), sent to the package's provider, which runs every check of the config."""

import pulumi
import pulumi_gpu_queues as gq

GPU = "nvidia.com/gpu"


def team(name: str, gpus: int) -> gq.TeamArgsDict:
    """One team's namespace, ClusterQueue and LocalQueue: `gpus` of the shared flavor."""
    quota: dict[str, int | str] = {"cpu": 16, "memory": "128Gi", GPU: gpus}
    flavor: gq.FlavorQuotasArgsDict = {
        "name": "sdk-gpu",
        "resources": {resource: {"nominal_quota": value} for resource, value in quota.items()},
    }
    return {
        "name": name,
        "namespace": f"sdk-{name}",
        "cluster_queue": f"{name}-cq",
        "local_queue": f"{name}-queue",
        "resource_groups": [{"covered_resources": ["cpu", "memory", GPU], "flavors": [flavor]}],
    }


queues = gq.GpuQueues(
    "queues",
    kubeconfig=pulumi.Config().require_secret("kubeconfig"),
    kueue={"install": False},  # Kueue runs on the cluster already: only wait for it
    flavors=[{"name": "sdk-gpu", "capacity": {"cpu": 64, "memory": "512Gi", GPU: 12}}],
    teams=[team("nlp", 8), team("robotics", 4)],
)
pulumi.export("localQueues", queues.local_queues)
