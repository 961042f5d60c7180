"""Benchmarks (not tests): fresh installs, scale against kubectl and a trivial program, and
the what-if on generated mixes. Each prints a table; docs/scale.md keeps the figures."""
