"""gpu-queues' command-line tools for PR previews and promotion (quota diff, changed stacks,
promote). Each module has a `python -m gpuq.<tool>` entry point; the workflows call these."""
