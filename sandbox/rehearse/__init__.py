"""Rehearsal: a stack deployed unchanged on a fresh sandbox shaped like it, every team's
queues exercised (run.py), from a plan computed from the config alone (plan.py)."""
