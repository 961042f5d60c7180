"""The design card's `components/`: this project's Pulumi components are the library's
(gpu_queues.components, one ComponentResource per module); this face names the one a
program builds. Import from `gpu_queues` in new code: this module only re-exports it."""

from gpu_queues import GpuQueues, GpuQueuesArgs

__all__ = ["GpuQueues", "GpuQueuesArgs"]
