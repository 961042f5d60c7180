"""A Pulumi program of your own: two teams' GPU queues from gpu-queues, on your provider."""

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues import GpuQueues, GpuQueuesArgs

GPU = "nvidia.com/gpu"


def team(name: str, gpus: int) -> dict[str, object]:
    """One team's namespace, ClusterQueue and LocalQueue: `gpus` of the shared flavor."""
    quota = {"cpu": {"nominalQuota": 16}, "memory": {"nominalQuota": "128Gi"}}
    flavor = {"name": "shared-gpu", "resources": {**quota, GPU: {"nominalQuota": gpus}}}
    group = {"coveredResources": ["cpu", "memory", GPU], "flavors": [flavor]}
    queues = {"clusterQueue": f"{name}-cq", "localQueue": f"{name}-queue"}
    return {"name": name, "namespace": f"team-{name}", **queues, "resourceGroups": [group]}


kubeconfig = pulumi.Config().require_secret("kubeconfig")
cluster = k8s.Provider("my-cluster", kubeconfig=kubeconfig, enable_server_side_apply=True)
config = {
    "kueue": {"install": False},  # Kueue runs on the cluster already: only wait for it
    "flavors": [{"name": "shared-gpu", "capacity": {"cpu": 64, "memory": "512Gi", GPU: 8}}],
    "teams": [team("vision", 4), team("speech", 4)],
}
# Checked here, before anything is registered; the kubeconfig is for Kueue's readiness check.
args = GpuQueuesArgs.from_config(config, kubeconfig=kubeconfig)
queues = GpuQueues("ml-queues", args, pulumi.ResourceOptions(provider=cluster))
pulumi.export("localQueues", queues.outputs["localQueues"])
