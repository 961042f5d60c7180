"""The gpu-queues component provider: hosts GpuQueues (gpu_queues/components/hosted.py) for
programs in any language, its schema inferred by the Pulumi SDK from the component's typed
inputs (package/schema.json is that schema, kept current by `make schema`)."""

from pulumi.provider.experimental import component_provider_host

from gpu_queues.components.hosted import PROVIDER, VERSION, GpuQueues

if __name__ == "__main__":
    component_provider_host([GpuQueues], name=PROVIDER, version=VERSION)
