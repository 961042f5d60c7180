"""Command-line tools for PR previews, promotion and operations, each a `python -m
gpu_queues.tools.<tool>` behind a make target: promote, quota_diff, kueue_diff,
changed_stacks, pr_comment, status, whatif_ci."""
