"""Capacity on demand in the stack config (`gpu-queues:provisioning`, docs/capacity-on-demand.md):
Kueue's ProvisioningRequest admission checks and the team queues that use them.

Each check becomes an AdmissionCheck (controller kueue.x-k8s.io/provisioning-request) and the
ProvisioningRequestConfig it names (gpu_queues/config/render.py); a team lists the checks its
ClusterQueue runs, on all its flavors or on some (`onFlavors`). What is checked across keys
lives in provisioning_checks.py.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from gpu_queues.config.base import Model
from gpu_queues.kueue.fieldtypes import LabelName, ObjectName, QualifiedName, ResourceName

__all__ = [
    "PodSetUpdates",
    "Provisioning",
    "ProvisioningCheck",
    "ProvisioningCheckUse",
    "ProvisioningRetry",
    "ProvisioningTeam",
]

# Kueue's ProvisioningRequestConfig CRD (v0.18.3): provisioningClassName is a DNS subdomain,
# each parameter at most 255 characters, at most 100 of them and 100 managed resources.
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ClassName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=_DNS_SUBDOMAIN)]
ParameterValue = Annotated[str, StringConstraints(max_length=255)]
ParameterName = Annotated[str, StringConstraints(min_length=1, max_length=253)]
_INT32 = 2**31 - 1


class ProvisioningRetry(Model):
    """How Kueue retries a failed ProvisioningRequest (unset: Kueue's defaults, 3 retries
    60 s apart doubling up to 1800 s). Past the limit the workload is deactivated."""

    backoff_limit_count: int | None = Field(
        default=None,
        ge=0,
        le=_INT32,
        description="retries after a failed request (0: none); default 3",
    )
    backoff_base_seconds: int | None = Field(
        default=None,
        ge=0,
        le=_INT32,
        description="the first wait before a retry, doubled each time; default 60",
    )
    backoff_max_seconds: int | None = Field(
        default=None, ge=0, le=_INT32, description="the longest wait; default 1800"
    )

    @model_validator(mode="after")
    def _max_not_below_base(self) -> ProvisioningRetry:
        base, most = self.backoff_base_seconds, self.backoff_max_seconds
        if base is not None and most is not None and most < base:
            raise PydanticCustomError(
                "retry_backoff",
                "backoffMaxSeconds ({most}) is below backoffBaseSeconds ({base}): every wait "
                "would be cut to the maximum; raise it or lower the base",
                {"most": most, "base": base},
            )
        return self


class NodeSelectorUpdate(Model):
    """A node selector Kueue adds to the workload's pods once provisioned, its value read from
    the request's status.provisioningClassDetails."""

    key: QualifiedName
    value_from_provisioning_class_detail: str = Field(min_length=1, max_length=32768)


class PodSetUpdates(Model):
    node_selector: list[NodeSelectorUpdate] = Field(min_length=1, max_length=8)


class ProvisioningCheck(Model):
    """An AdmissionCheck answered by the cluster autoscaler: Kueue creates a
    ProvisioningRequest for each workload that reserved quota and admits it once the request
    is Provisioned."""

    name: LabelName = Field(
        description="the AdmissionCheck's name, and its ProvisioningRequestConfig's"
    )
    provisioning_class_name: ClassName = Field(
        description="the autoscaler's provisioning class, e.g. "
        "check-capacity.autoscaling.x-k8s.io or best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    )
    parameters: dict[ParameterName, ParameterValue] | None = Field(
        default=None, max_length=100, description="what the class reads from the request"
    )
    managed_resources: list[ResourceName] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="only pod sets asking for one of these get a request (unset: every pod "
        "set); a workload asking for none passes the check at once",
    )
    retry_strategy: ProvisioningRetry | None = None
    pod_set_updates: PodSetUpdates | None = None
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = Field(default=None, description="how Kueue merges pod sets before asking the autoscaler")


class ProvisioningCheckUse(Model):
    name: LabelName = Field(description="a check under provisioning.checks")
    on_flavors: list[ObjectName] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="the flavors of the team's quota it runs for; unset: every flavor",
    )


class ProvisioningTeam(Model):
    """A team whose ClusterQueue runs provisioning checks."""

    name: LabelName = Field(description="a team under teams")
    checks: list[ProvisioningCheckUse] = Field(min_length=1, max_length=64)


class Provisioning(Model):
    checks: list[ProvisioningCheck] = Field(min_length=1, max_length=64)
    teams: list[ProvisioningTeam] = Field(
        default_factory=list, description="which team queues use which check"
    )
