"""CapacityOnDemand: the stack's ProvisioningRequest admission checks (gpu-queues:provisioning,
docs/capacity-on-demand.md), each a ProvisioningRequestConfig and the AdmissionCheck naming it;
and `cluster_problems`, what the program asks the cluster at preview for them.

Kueue runs its provisioning controller only when the API server serves
autoscaling.x-k8s.io/v1 provisioningrequests at Kueue's start (cmd/kueue/main.go:
ServerSupportsProvisioningRequest; it logs "Skipping provisioning controller setup" otherwise).
Without it every check stays inactive and the queues that list one admit nothing, which a
preview would not show. So `validate` asks the API server's discovery first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pulumi

from gpu_queues import keys
from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.errors import Problem
from gpu_queues.config.provisioning import Provisioning

# The API the cluster autoscaler serves and Kueue's provisioning controller needs.
PROVISIONING_REQUEST_API: Final = "autoscaling.x-k8s.io/v1"
PROVISIONING_REQUEST_PLURAL: Final = "provisioningrequests"
_KEY: Final = (keys.KEY_PROVISIONING,)
_UNASKED: Final = "cannot ask the cluster whether it serves ProvisioningRequests"
_TIMEOUT: Final = 15  # seconds, per request


@dataclass(frozen=True)
class CapacityOnDemandArgs:
    provisioning: Provisioning
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate (KueueReady.dependency)."""


class CapacityOnDemand(pulumi.ComponentResource):
    """Per provisioning check its ProvisioningRequestConfig, then its AdmissionCheck."""

    checks: dict[str, pulumi.Resource]
    """Per check name, its AdmissionCheck (the ClusterQueues using it depend on it)."""

    def __init__(
        self, name: str, args: CapacityOnDemandArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:provisioning:CapacityOnDemand", name, None, opts)
        self.checks = {}
        for check in args.provisioning.checks:
            config = kueue_object(
                f"{name}-{check.name}-config",
                render.provisioning_request_config(check),
                pulumi.ResourceOptions(parent=self, depends_on=args.ready),
            )
            self.checks[check.name] = kueue_object(
                f"{name}-{check.name}-check",
                render.provisioning_admission_check(check),
                pulumi.ResourceOptions(parent=self, depends_on=[config]),
            )
        self.register_outputs({"admissionChecks": sorted(self.checks)})


def cluster_problems(
    provisioning: Provisioning | None, kubeconfig: str | None, context: str | None
) -> list[Problem]:
    """Ask the cluster (through `kubeconfig`, else $KUBECONFIG) whether it serves
    ProvisioningRequests; nothing asked without provisioning checks."""
    if provisioning is None:
        return []
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpu_queues.kueue.client import KubeconfigError, api_client

    try:
        api = api_client(kubeconfig, context)
    except KubeconfigError as exc:
        return [Problem(_KEY, f"{_UNASKED}: {exc}")]
    group, version = PROVISIONING_REQUEST_API.split("/")
    try:
        answer = client.CustomObjectsApi(api).get_api_resources(
            group, version, _request_timeout=_TIMEOUT
        )
        served = {r.name for r in answer.resources or []}
    except ApiException as exc:
        if exc.status != 404:
            return [Problem(_KEY, f"{_UNASKED}: HTTP {exc.status} {exc.reason}")]
        served = set()
    except Exception as exc:  # connection refused, TLS, timeouts
        return [Problem(_KEY, f"{_UNASKED}: {type(exc).__name__}: {str(exc)[:300]}")]
    finally:
        api.close()  # type: ignore[no-untyped-call]
    if PROVISIONING_REQUEST_PLURAL in served:
        return []
    return [
        Problem(
            (*_KEY, "checks"),
            f"the cluster does not serve ProvisioningRequests ({PROVISIONING_REQUEST_API} has "
            f"no {PROVISIONING_REQUEST_PLURAL}), so Kueue runs no provisioning controller, the "
            "checks stay inactive and the queues using them admit nothing: install a cluster "
            "autoscaler with ProvisioningRequest support (and its CRD) first, then restart "
            "Kueue, which looks for the API only at start; or remove provisioning",
        )
    ]


def outputs(provisioning: Provisioning) -> dict[str, list[str]]:
    """The provisioning stack output: per team, the checks its ClusterQueue runs."""
    return {team.name: [use.name for use in team.checks] for team in provisioning.teams}
