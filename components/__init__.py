"""The design card's `components/`: the card fixes the project's top level (Pulumi.yaml,
__main__.py, components/, policies/, tests/), and this folder is kept so the project reads as
the card draws it. The components themselves live in the library, gpu_queues.components (one
ComponentResource per module), because other Pulumi programs install and use them; this face
only re-exports the one a program builds. Import from `gpu_queues` in new code: nothing here
is more than that name."""

from gpu_queues import GpuQueues, GpuQueuesArgs

__all__ = ["GpuQueues", "GpuQueuesArgs"]
