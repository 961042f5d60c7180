"""gpu-queues policy pack: guardrails that refuse unsafe Kueue objects at preview time."""
