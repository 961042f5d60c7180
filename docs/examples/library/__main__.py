"""A Pulumi program of your own: two teams' GPU queues from gpu-queues, on your provider."""

import sys

import pulumi

from gpu_queues import ConfigError, GpuQueues, GpuQueuesArgs, StackConfigKeys
from gpu_queues.config.stack_keys import FlavorQuotasKeys, TeamKeys

GPU = "nvidia.com/gpu"


def team(name: str, gpus: int) -> TeamKeys:
    """One team's namespace, ClusterQueue and LocalQueue: `gpus` of the shared flavor."""
    quota: dict[str, str | int] = {"cpu": 16, "memory": "128Gi", GPU: gpus}
    flavor: FlavorQuotasKeys = {
        "name": "shared-gpu",
        "resources": {resource: {"nominalQuota": value} for resource, value in quota.items()},
    }
    return {
        "name": name,
        "namespace": f"team-{name}",
        "clusterQueue": f"{name}-cq",
        "localQueue": f"{name}-queue",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": [flavor]}],
    }


# The keys a stack file holds under `gpu-queues:`, typed: a misspelt key is a type error.
config: StackConfigKeys = {
    "kueue": {"install": False},  # Kueue runs on the cluster already: only wait for it
    "flavors": [{"name": "shared-gpu", "capacity": {"cpu": 64, "memory": "512Gi", GPU: 8}}],
    "teams": [team("vision", 4), team("speech", 4)],
}
kubeconfig = pulumi.Config().require_secret("kubeconfig")
try:
    # Every check, before anything (the provider too) is registered: a bad config stops here.
    args = GpuQueuesArgs.from_config(config, kubeconfig=kubeconfig)
except ConfigError as error:
    print(error, file=sys.stderr)
    sys.exit(32)  # the error is said: Pulumi adds no traceback
# The provider from the same kubeconfig: Kueue's readiness check dials the cluster it deploys to.
cluster = args.provider("my-cluster")
queues = GpuQueues("ml-queues", args, pulumi.ResourceOptions(provider=cluster))
pulumi.export("localQueues", queues.local_queues)
