"""The what-if's pieces that need no cluster: the workload mix (reading and checking it),
the report format (report.md, report.json), and reading Kueue Workloads into results. The
engines that replay a mix are above (sandbox/replay)."""
