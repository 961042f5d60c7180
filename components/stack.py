"""GpuQueues: the whole stack, wired in dependency order, under one explicit provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components import keys
from components.cohort import SharedCohort, SharedCohortArgs
from components.config import StackConfig
from components.flavors import Flavors, FlavorsArgs
from components.kueue import KueueRelease, KueueReleaseArgs, prepare_manifest
from components.provider import build_provider, connection
from components.queues import TeamQueues, TeamQueuesArgs
from components.readiness import KueueReady, KueueReadyArgs, Probe, probe_webhooks
from components.storage import SharedStorage, SharedStorageArgs


@dataclass(frozen=True)
class GpuQueuesArgs:
    config: StackConfig
    manifest: Sequence[dict[str, Any]] | None
    """The verified release manifest (components.kueue.load_manifest); None when not installing."""
    probe: Probe = probe_webhooks


class GpuQueues(pulumi.ComponentResource):
    """Kueue, flavors, cohort, team queues and shared storage for one cluster."""

    outputs: dict[str, pulumi.Input[Any]]

    def __init__(
        self, name: str, args: GpuQueuesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:stack:GpuQueues", name, None, opts)
        cfg = args.config
        kubeconfig, context = connection()
        provider = build_provider(
            f"{name}-k8s", kubeconfig, context, pulumi.ResourceOptions(parent=self)
        )
        under = pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider})

        installed: list[pulumi.Resource] = []
        if cfg.kueue.install:
            if args.manifest is None:
                raise ValueError("kueue.install is true but no manifest was loaded")
            release = KueueRelease(
                f"{name}-kueue",
                KueueReleaseArgs(
                    version=cfg.kueue.version, objects=prepare_manifest(args.manifest, cfg.kueue)
                ),
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
                probe=args.probe,
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
        }
        self.register_outputs(self.outputs)
