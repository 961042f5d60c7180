"""The randomized cross-check of the what-if's two engines (generate.py, run.py)."""
