"""The trivial program of the scale benchmark: one namespace and `count` plain ConfigMaps.

It runs as the `__main__.py` of a throw-away Pulumi project (sandbox.bench_scale writes it
under .sandbox/bench/trivial), with the same CLI, provider and file backend as gpu-queues, so
what it costs per object is the floor below our program. Config: `count` (ConfigMaps),
`namespace`, optionally `renderDir` (the provider writes YAML files there instead of talking
to a cluster, which leaves only the engine, the SDK and the backend) and `settle` (true: the
workaround for the Python SDK's quadratic wait, as in the project's __main__.py). With those
two it is the reproduction of the upstream causes in docs/scale.md.
"""

from __future__ import annotations

import asyncio

import pulumi
import pulumi_kubernetes as k8s


def register(count: int, namespace: str, render_dir: str | None = None) -> int:
    """Register the namespace and `count` ConfigMaps; returns how many objects that is."""
    provider = k8s.Provider(
        "k8s",
        enable_server_side_apply=True,
        render_yaml_to_directory=render_dir,
    )
    ns = k8s.core.v1.Namespace(
        "ns",
        metadata={"name": namespace},
        opts=pulumi.ResourceOptions(provider=provider),
    )
    for i in range(count):
        k8s.core.v1.ConfigMap(
            f"cm-{i:04d}",
            metadata={"name": f"cm-{i:04d}", "namespace": namespace},
            data={"index": str(i)},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns]),
        )
    return count + 1


async def _settle() -> None:
    await asyncio.sleep(0)


if __name__ == "__main__":
    config = pulumi.Config()
    register(config.require_int("count"), config.require("namespace"), config.get("renderDir"))
    if config.get_bool("settle"):
        pulumi.run(_settle)
