"""GpuQueues: the whole stack, wired in dependency order, under one explicit provider.

`validate` is the program's validation phase: the stack config, the Kueue manifest and how
they fit together are all checked there, before the first resource (the provider included)
is registered. GpuQueues only builds what `validate` returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from components import keys
from components.cohort import SharedCohort, SharedCohortArgs
from components.config import ConfigError, Problem, StackConfig, load_config
from components.config_checks import reserved_namespace_problems
from components.flavors import Flavors, FlavorsArgs
from components.kubeclient import validate as validate_kubeconfig
from components.kueue import (
    PROJECT_ROOT,
    KueueRelease,
    KueueReleaseArgs,
    PreparedManifest,
    load_release,
)
from components.priorities import PriorityClasses, PriorityClassesArgs
from components.provider import build_provider, connection
from components.queues import TeamQueues, TeamQueuesArgs
from components.readiness import KueueReady, KueueReadyArgs, Probe, probe_for, probe_webhooks
from components.storage import SharedStorage, SharedStorageArgs


@dataclass(frozen=True)
class GpuQueuesArgs:
    config: StackConfig
    manifest: PreparedManifest | None
    """The checked, prepared release (components.kueue.load_release); None when not installing."""
    probe: Probe = probe_webhooks


def manifest_problems(config: StackConfig, manifest: PreparedManifest | None) -> list[Problem]:
    """Stack config that clashes with the manifest: a team namespace (or a submitter service
    account's namespace) the manifest creates. One rule with load_config's reserved
    namespaces: config_checks.reserved_namespace_problems, given the manifest's namespaces."""
    if manifest is None:
        return []
    return reserved_namespace_problems(config, extra=manifest.namespaces)


def validate(
    raw: Mapping[str, Any], root: Path = PROJECT_ROOT
) -> tuple[StackConfig, PreparedManifest | None]:
    """Everything the program can check without a cluster; ConfigError, KubeconfigError or
    ManifestError."""
    config = load_config(raw)
    if config.kubernetes.kubeconfig is not None:  # unset: $KUBECONFIG, possibly absent in CI
        validate_kubeconfig(
            config.kubernetes.kubeconfig.get_secret_value(), config.kubernetes.context
        )
    manifest = load_release(config.kueue, root) if config.kueue.install else None
    problems = manifest_problems(config, manifest)
    if problems:
        raise ConfigError(problems)
    return config, manifest


class GpuQueues(pulumi.ComponentResource):
    """Kueue, flavors, cohort, team queues and shared storage for one cluster."""

    outputs: dict[str, pulumi.Input[Any]]

    def __init__(
        self, name: str, args: GpuQueuesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        cfg = args.config
        if cfg.kueue.install and (
            args.manifest is None or args.manifest.version != cfg.kueue.version
        ):
            # Checked before super().__init__ registers this component: nothing half-built.
            raise ValueError(
                "kueue.install is true but no prepared manifest of its version was given"
            )
        super().__init__("gpu-queues:stack:GpuQueues", name, None, opts)
        kubeconfig, context = connection()
        provider = build_provider(
            f"{name}-k8s", kubeconfig, context, pulumi.ResourceOptions(parent=self)
        )
        under = pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider})

        installed: list[pulumi.Resource] = []
        if cfg.kueue.install and args.manifest is not None:
            release = KueueRelease(
                f"{name}-kueue",
                KueueReleaseArgs(version=args.manifest.version, objects=args.manifest.objects),
                under,
            )
            installed = list(release.resources)
        ready = KueueReady(
            f"{name}-kueue-ready",
            KueueReadyArgs(
                kubeconfig=kubeconfig,
                context=context,
                timeout_seconds=float(cfg.kueue.readiness_timeout_seconds),
                after=installed,
                # The real probe also waits for the new controller's rollout (upgrades).
                probe=probe_for(args.manifest.version if args.manifest else None)
                if args.probe is probe_webhooks
                else args.probe,
            ),
            under,
        )

        flavors = Flavors(f"{name}-flavors", FlavorsArgs(cfg.flavors, ready.dependency), under)
        uses: list[pulumi.Resource] = list(flavors.by_name.values())
        cohort_name: str | None = None
        if cfg.cohort is not None:
            cohort = SharedCohort(
                f"{name}-cohort", SharedCohortArgs(cfg.cohort, ready.dependency), under
            )
            uses.append(cohort.cohort)
            cohort_name = cfg.cohort.name
        if cfg.priority_classes:
            PriorityClasses(
                f"{name}-priorities",
                PriorityClassesArgs(cfg.priority_classes, ready.dependency),
                under,
            )

        teams = [
            TeamQueues(f"{name}-{team.name}", TeamQueuesArgs(team, ready.dependency, uses), under)
            for team in cfg.teams
        ]
        namespaces = {t.namespace: q.namespace for t, q in zip(cfg.teams, teams, strict=True)}
        storage = SharedStorage(
            f"{name}-storage", SharedStorageArgs(cfg.shared_storage, namespaces), under
        )

        self.outputs = {
            keys.OUT_KUEUE_VERSION: cfg.kueue.version,
            keys.OUT_KUEUE_INSTALLED: cfg.kueue.install,
            keys.OUT_FLAVORS: [f.name for f in cfg.flavors],
            keys.OUT_COHORT: cohort_name,
            keys.OUT_CLUSTER_QUEUES: {t.name: t.cluster_queue for t in cfg.teams},
            keys.OUT_LOCAL_QUEUES: {t.name: f"{t.namespace}/{t.local_queue}" for t in cfg.teams},
            keys.OUT_NAMESPACES: {t.name: t.namespace for t in cfg.teams},
            keys.OUT_SHARED_CLAIMS: storage.claim_refs,
            keys.OUT_PRIORITY_CLASSES: {p.name: p.value for p in cfg.priority_classes},
        }
        self.register_outputs(self.outputs)
