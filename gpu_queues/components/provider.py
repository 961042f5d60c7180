"""The one explicit Kubernetes provider, built from `gpu-queues:kubernetes` (read as a secret),
when the program that builds GpuQueues does not give one of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues import keys
from gpu_queues.config.model import KubernetesConfig
from gpu_queues.config.secure import PLACEHOLDER


def connection(
    fallback: KubernetesConfig | None = None,
) -> tuple[pulumi.Output[Any], pulumi.Output[Any]]:
    """(kubeconfig, context) as secret outputs; None values mean the ambient $KUBECONFIG.

    From `gpu-queues:kubernetes` of the running stack; a value it does not set comes from
    `fallback` (the stack config's `kubernetes`, for a config built in code: from a stack's
    own config, both hold the same value)."""
    secret = pulumi.Config(keys.PROJECT).get_secret_object(keys.KEY_KUBERNETES)
    settings: pulumi.Output[Any] = secret if secret is not None else pulumi.Output.secret(None)
    given = fallback or KubernetesConfig()
    default_kubeconfig = given.kubeconfig.get_secret_value() if given.kubeconfig else None
    if default_kubeconfig == PLACEHOLDER:  # a stack file's secret, read without decrypting it
        default_kubeconfig = None
    kubeconfig = settings.apply(lambda s: (s or {}).get("kubeconfig") or default_kubeconfig)
    context = settings.apply(lambda s: (s or {}).get("context") or given.context or None)
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


def callers_provider(opts: pulumi.ResourceOptions | None) -> pulumi.ProviderResource | None:
    """The Kubernetes provider the caller's options give (`provider=`, `providers=` or a
    parent's), read before anything is registered; None when GpuQueues builds its own."""
    if opts is None:
        return None
    given: list[Any] = [opts.provider]
    if isinstance(opts.providers, Mapping):
        given.append(opts.providers.get("kubernetes"))
    else:
        given += list(opts.providers or [])
    for provider in given:
        if isinstance(provider, pulumi.ProviderResource) and provider.package == "kubernetes":
            return provider
    return opts.parent.get_provider("kubernetes::Provider") if opts.parent else None
