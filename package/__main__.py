"""The gpu-queues component provider: hosts GpuQueues (gpu_queues/components/hosted.py) for
programs in any language, its schema inferred by the Pulumi SDK from the component's typed
inputs (package/schema.json is that schema, kept current by `make schema`). As the SDK's
component_provider_host, but a bad config comes back as input property errors."""

import sys

from gpu_queues.components.hosted import serve

if __name__ == "__main__":
    serve(sys.argv[1:])
