"""The stack config's MultiKueue roles (`multiKueue`, docs/multikueue.md): a manager's workers
and dispatching teams, or a worker's address; their cross checks are multikueue_checks.py."""

from __future__ import annotations

from pydantic import Field, SecretStr

from gpu_queues.config.base import Model
from gpu_queues.kueue.fieldtypes import ApiServerUrl, LabelName, StackName


class MultiKueueWorker(Model):
    """A worker cluster of a MultiKueue manager; its kubeconfig comes from `kubeconfig`, else
    from the `stack` (the multiKueueKubeconfig output of a worker stack of this project)."""

    name: LabelName = Field(description="the MultiKueueCluster's name on the manager")
    stack: StackName | None = Field(
        default=None,
        description="the worker's stack (<stack>, or <org>/<project>/<stack>): its "
        "multiKueueKubeconfig output is read through a StackReference unless kubeconfig is "
        "set, and when its Pulumi.<stack>.yaml is in this repo the dispatching teams are "
        "checked against it",
    )
    kubeconfig: SecretStr | None = Field(
        default=None,
        description="kubeconfig Kueue dials the worker with (set it with --secret; plain text "
        "is refused); wins over the stack's output",
    )


class MultiKueueTeam(Model):
    """A team of this stack whose ClusterQueue dispatches through MultiKueue."""

    name: LabelName = Field(description="a team under teams")
    workers: list[LabelName] | None = Field(
        default=None,
        min_length=1,
        max_length=20,
        description="the workers it dispatches to; default: every worker",
    )


class MultiKueueManagerRole(Model):
    """This stack's cluster is a MultiKueue manager: teams submit here, jobs run on workers."""

    workers: list[MultiKueueWorker] = Field(min_length=1, max_length=20)
    teams: list[MultiKueueTeam] = Field(min_length=1)


class MultiKueueWorkerRole(Model):
    """This stack's cluster is a MultiKueue worker: a service account with what a manager needs,
    and its kubeconfig as the secret output multiKueueKubeconfig."""

    server: ApiServerUrl | None = Field(
        default=None,
        description="the API server address managers dial; default: the server of this "
        "stack's own kubeconfig",
    )


class MultiKueue(Model):
    manager: MultiKueueManagerRole | None = None
    worker: MultiKueueWorkerRole | None = None
