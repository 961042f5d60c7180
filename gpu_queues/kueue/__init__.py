"""Kubernetes and Kueue facts that need nothing of ours: quantities, field types, the Kueue
object rules (shared by the config checks and the policy pack), capacity sums, what each
supported release supports, and the in-memory Kubernetes client. The bottom floor."""
