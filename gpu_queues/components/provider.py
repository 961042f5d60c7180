"""The one explicit Kubernetes provider, built from `gpu-queues:kubernetes` (read as a secret)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues import keys


def connection() -> tuple[pulumi.Output[Any], pulumi.Output[Any]]:
    """(kubeconfig, context) as secret outputs; None values mean the ambient $KUBECONFIG."""
    secret = pulumi.Config(keys.PROJECT).get_secret_object(keys.KEY_KUBERNETES)
    settings: pulumi.Output[Any] = secret if secret is not None else pulumi.Output.secret(None)
    kubeconfig = settings.apply(lambda s: (s or {}).get("kubeconfig") or None)
    context = settings.apply(lambda s: (s or {}).get("context") or None)
    return kubeconfig, context


def build_provider(
    name: str,
    kubeconfig: pulumi.Input[Any],
    context: pulumi.Input[Any],
    opts: pulumi.ResourceOptions | None = None,
) -> k8s.Provider:
    # An unset value must reach the provider as "" (its "not set"): a None inside an Output
    # arrives as the string "null" and names a context that does not exist.
    return k8s.Provider(
        name,
        kubeconfig=pulumi.Output.from_input(kubeconfig).apply(lambda v: v or ""),
        context=pulumi.Output.from_input(context).apply(lambda v: v or ""),
        # The Kueue CRDs exceed the client-side apply annotation limit.
        enable_server_side_apply=True,
        # Kueue's manager ConfigMap changes with every release and config change; replacing
        # it (the provider's default) deletes it before creating it again, and a controller
        # pod starting in between finds no configuration. Update it in place instead: its
        # hash on the pod template rolls the controller.
        enable_config_map_mutable=True,
        opts=opts,
    )
