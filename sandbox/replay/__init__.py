"""The what-if's sandbox engine: each side in a fresh sandbox (cli.py, which passes the engine to
the library's command, gpu_queues/whatif/cli.py), the replay of a mix on the real Kueue inside
the sandbox's namespace (engine.py), in simulated time (timeline.py), watching the cluster
(watch.py) and following each workload (tracked.py)."""
