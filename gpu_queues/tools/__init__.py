"""Command-line tools for PR previews, promotion and operations, each a `python -m
gpu_queues.tools.<tool>` behind a make target (and most a `gpuq` command, gpu_queues/cli.py):
promote, quota_diff, kueue_diff, changed_stacks, pr_comment, status, eta (status --eta) and
eta_mix, record, whatif_ci."""
