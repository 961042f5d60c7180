"""The Pulumi ComponentResources, one per module: GpuQueues (gpu_queues.py) and its parts.
The library's top floor for a Pulumi program; everything they build is checked below them."""
