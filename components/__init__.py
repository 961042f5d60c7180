"""gpu-queues components: one ComponentResource per concern, plus typed stack config."""
