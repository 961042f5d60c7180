"""The what-if on the sandbox: the command (cli.py: sides, sandboxes, report) and the replay
of a mix on the real Kueue inside the sandbox's namespace (engine.py)."""
